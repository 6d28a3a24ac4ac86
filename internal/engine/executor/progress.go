package executor

import (
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// Replica names one partition's replica on one broker.
type Replica struct {
	Topic     string
	Partition int32
	Broker    int32
}

// Copying returns the replicas the moves in progress are adding (those of
// the lowest unfinished group and the later ones started), each with the
// bytes its copy counts for in the plan (the partition's size when it was
// planned): where the copy lands, and so what to measure to see how far it
// has come. It is empty outside the reassign phase.
func (op *Operation) Copying() map[Replica]int64 {
	out := map[Replica]int64{}
	for _, m := range op.openMoves() {
		if len(m.Adding) == 0 {
			continue
		}
		each := m.Bytes / int64(len(m.Adding))
		for _, b := range m.Adding {
			out[Replica{Topic: m.Topic, Partition: m.Partition, Broker: b}] = each
		}
	}
	return out
}

// Progress is how far an operation has come, for someone watching it.
type Progress struct {
	Phase Phase
	// Group is the group in progress, 1-based (Groups once every group is
	// done); both are 0 before the plan exists.
	Group, Groups int
	// MovesDone counts the moves done.
	MovesDone, Moves int
	// BytesDone is the bytes of the moves done plus what the destinations
	// of the moves in progress (Copying) hold so far, each replica counted
	// up to its planned size: data producers write meanwhile is not
	// progress.
	BytesDone, Bytes int64
	// ETA is Remaining's duration at the throttle in force, less the share
	// of the group in progress already copied; 0 without a throttle.
	ETA time.Duration
	// Projected is the latest re-estimate of what is left, from the pace
	// the copy has kept (ProgressSample.Projected), made at ProjectedAt;
	// zero until the pace is known, and once the copy is over.
	Projected   time.Duration
	ProjectedAt time.Time
}

// Progress reads op with sizes, the bytes each replica of Copying holds on
// its broker now (a replica not there yet is absent).
func (op *Operation) Progress(sizes map[Replica]int64) Progress {
	p, _ := op.progress(sizes)
	return p
}

// projected is the latest sample's re-estimate, while the copy it
// estimates runs.
func (op *Operation) projected() (time.Duration, time.Time) {
	n := len(op.Samples)
	if n == 0 || op.Phase != PhaseReassign || op.Samples[n-1].Phase != PhaseReassign {
		return 0, time.Time{}
	}
	return op.Samples[n-1].Projected, op.Samples[n-1].At
}

// projectedLeft is what the latest re-estimate leaves at now, and whether
// there is one: the time since it was made is spent.
func (op *Operation) projectedLeft(now time.Time) (time.Duration, bool) {
	left, at := op.projected()
	if left <= 0 {
		return 0, false
	}
	return max(left-now.Sub(at), 0), true
}

// progress is Progress with the parts of its ETA.
func (op *Operation) progress(sizes map[Replica]int64) (Progress, engine.ETA) {
	p := Progress{Phase: op.Phase, MovesDone: op.MovesDone, BytesDone: op.BytesDone}
	p.Projected, p.ProjectedAt = op.projected()
	if op.Plan == nil {
		return p, engine.ETA{}
	}
	p.Groups = len(op.Plan.Groups)
	p.Group = min(op.Group+1, p.Groups)
	p.Moves = len(op.Plan.Moves())
	p.Bytes = op.Plan.TotalBytes
	var copied int64
	for r, planned := range op.Copying() {
		copied += min(max(sizes[r], 0), planned)
	}
	var open int64
	for _, m := range op.openMoves() {
		open += m.Bytes
	}
	copied = min(copied, open)
	p.BytesDone = min(p.BytesDone+copied, p.Bytes)
	var parts engine.ETA
	if op.ThrottleRate > 0 && !op.Done() {
		r := op.remaining(op.ThrottleRate, copied)
		p.ETA, parts = r.Duration, r.ETA
	}
	return p, parts
}
