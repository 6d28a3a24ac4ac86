package executor

import (
	"encoding/json"
	"fmt"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// OperationVersion is the shape of the operation record this code writes.
// Records outlive the provider that wrote them (an apply interrupted under
// one release resumes under the next), so a record of any earlier version
// must still read as a record of this one: DecodeOperation is the one place
// that knows the earlier shapes, and everything else reads only the current
// one.
//
// Versions:
//
//	0  records written before the record carried a version. They may come
//	   from before moves were recorded one by one (Started empty while the
//	   group in progress was submitted whole), and from before the plan kept
//	   the limits its groups were formed under (Plan.MaxMovesPerBroker and
//	   Plan.MaxMovesPerStep zero).
//	1  every started move is in Started, recorded before it is submitted;
//	   every plan carries its limits.
//
// Fields added since without a change of version are optional: a record
// without them is whole, and a provider that does not know them ignores
// them (Phases and Samples, the operation's timeline).
const OperationVersion = 1

// EncodeOperation is the stored form of op, stamped with OperationVersion.
// op itself is not changed.
func EncodeOperation(op *Operation) ([]byte, error) {
	rec := *op
	rec.Version = OperationVersion
	return json.Marshal(&rec)
}

// DecodeOperation reads a stored operation record of any version up to
// OperationVersion and returns it upgraded to OperationVersion. A record of
// a later version comes from a newer kafkascale, whose record this one
// cannot know how to resume; it is an error rather than a guess.
func DecodeOperation(b []byte) (*Operation, error) {
	var op Operation
	if err := json.Unmarshal(b, &op); err != nil {
		return nil, err
	}
	if op.Version > OperationVersion {
		return nil, fmt.Errorf("operation %s was recorded by a newer kafkascale (record version %d; this one reads up to %d): upgrade the provider to resume it",
			op.ID, op.Version, OperationVersion)
	}
	if op.Version < 1 {
		upgradeV0(&op)
	}
	op.Version = OperationVersion
	return &op, nil
}

// upgradeV0 brings a version 0 record to version 1.
func upgradeV0(op *Operation) {
	if p := op.Plan; p != nil {
		// The limits the groups were formed under are the operation's own
		// options (the planner copies them into the plan today).
		if p.MaxMovesPerBroker <= 0 {
			p.MaxMovesPerBroker = positiveOr(op.Options.MaxMovesPerBroker, engine.DefaultMaxMovesPerBroker)
		}
		if p.MaxMovesPerStep <= 0 {
			p.MaxMovesPerStep = positiveOr(op.Options.MaxMovesPerStep, engine.DefaultMaxMovesPerStep)
		}
	}
	// A group of which a step was submitted, with no move recorded as
	// started, ran whole: every move of it may be in flight, and only Kafka
	// can say which are.
	if op.Phase == PhaseReassign && op.Plan != nil && len(op.Started) == 0 && op.StepsSubmitted > 0 &&
		op.Group >= 0 && op.Group < len(op.Plan.Groups) {
		first := 0
		for _, g := range op.Plan.Groups[:op.Group] {
			first += len(g.Moves())
		}
		for k := range op.Plan.Groups[op.Group].Moves() {
			op.Started = append(op.Started, first+k)
		}
	}
}

func positiveOr(n, otherwise int) int {
	if n > 0 {
		return n
	}
	return otherwise
}
