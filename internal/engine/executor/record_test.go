package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// twoGroupPlan has two groups of two moves each, and no limits recorded.
func twoGroupPlan() *engine.Plan {
	move := func(p int32, to int32) engine.Move {
		return engine.Move{Topic: "t", Partition: p, OldReplicas: []int32{1}, NewReplicas: []int32{to}, Adding: []int32{to}, Removing: []int32{1}, Bytes: 1 << 20}
	}
	return &engine.Plan{TotalBytes: 4 << 20, ReplicaMoves: 4, Groups: []engine.Group{
		{Steps: []engine.Step{{Moves: []engine.Move{move(0, 2), move(1, 3)}}}, Bytes: 2 << 20},
		{Steps: []engine.Step{{Moves: []engine.Move{move(2, 2), move(3, 3)}}}, Bytes: 2 << 20},
	}}
}

// decodeV0 stores op as an unversioned record would have been, and reads it
// back.
func decodeV0(t *testing.T, op *executor.Operation) *executor.Operation {
	t.Helper()
	op.Version = 0
	b, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"version":0`) {
		t.Fatalf("the record under test is not unversioned: %s", b)
	}
	got, err := executor.DecodeOperation(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != executor.OperationVersion {
		t.Fatalf("read as version %d, want %d", got.Version, executor.OperationVersion)
	}
	return got
}

// An unversioned record whose group in progress was submitted whole, with
// no move recorded as started, reads with every move of that group started:
// they may all be in flight.
func TestDecodeV0GroupSubmittedWhole(t *testing.T) {
	op := decodeV0(t, &executor.Operation{Phase: executor.PhaseReassign, Plan: twoGroupPlan(), Group: 1, StepsSubmitted: 1, MovesDone: 2})
	if !slices.Equal(op.Started, []int{2, 3}) {
		t.Fatalf("started %v, want the moves of group 2: [2 3]", op.Started)
	}
	if got := len(op.Copying()); got != 2 {
		t.Fatalf("%d replicas copying, want group 2's 2", got)
	}
	if op.StartedIn(0) != 0 || op.StartedIn(1) != 2 {
		t.Fatalf("started in groups 1 and 2: %d and %d, want 0 and 2", op.StartedIn(0), op.StartedIn(1))
	}
}

// An unversioned record at a group boundary (nothing of Group submitted)
// has nothing in flight, and one that already recorded its moves one by one
// keeps exactly those.
func TestDecodeV0NothingSubmittedOrMovesRecorded(t *testing.T) {
	idle := decodeV0(t, &executor.Operation{Phase: executor.PhaseReassign, Plan: twoGroupPlan(), Group: 1, MovesDone: 2})
	if len(idle.Started) != 0 || len(idle.Copying()) != 0 {
		t.Fatalf("nothing submitted, yet started %v and copying %v", idle.Started, idle.Copying())
	}
	recorded := decodeV0(t, &executor.Operation{Phase: executor.PhaseReassign, Plan: twoGroupPlan(), Group: 0, StepsSubmitted: 1,
		Started: []int{0, 1, 2}, Finished: []int{0}, MovesDone: 1})
	if !slices.Equal(recorded.Started, []int{0, 1, 2}) || !slices.Equal(recorded.Finished, []int{0}) {
		t.Fatalf("started %v finished %v, want them as recorded: [0 1 2] and [0]", recorded.Started, recorded.Finished)
	}
	// Outside the reassign phase no move is started, whatever the count
	// of steps says.
	finishing := decodeV0(t, &executor.Operation{Phase: executor.PhaseFinish, Plan: twoGroupPlan(), Group: 2, StepsSubmitted: 1})
	if len(finishing.Started) != 0 {
		t.Fatalf("a finishing record reads with moves started: %v", finishing.Started)
	}
}

// An unversioned plan without its limits gets the operation's own, or the
// defaults when the options have none.
func TestDecodeV0PlanLimits(t *testing.T) {
	opts := engine.DefaultOptions()
	opts.MaxMovesPerBroker, opts.MaxMovesPerStep = 1, 4
	op := decodeV0(t, &executor.Operation{Phase: executor.PhaseReassign, Plan: twoGroupPlan(), Options: opts})
	if op.Plan.MaxMovesPerBroker != 1 || op.Plan.MaxMovesPerStep != 4 {
		t.Fatalf("plan limits %d per broker, %d per step; want the options' 1 and 4", op.Plan.MaxMovesPerBroker, op.Plan.MaxMovesPerStep)
	}
	bare := decodeV0(t, &executor.Operation{Phase: executor.PhaseReassign, Plan: twoGroupPlan()})
	if bare.Plan.MaxMovesPerBroker != engine.DefaultMaxMovesPerBroker || bare.Plan.MaxMovesPerStep != engine.DefaultMaxMovesPerStep {
		t.Fatalf("plan limits %d per broker, %d per step; want the defaults %d and %d", bare.Plan.MaxMovesPerBroker, bare.Plan.MaxMovesPerStep,
			engine.DefaultMaxMovesPerBroker, engine.DefaultMaxMovesPerStep)
	}
	kept := twoGroupPlan()
	kept.MaxMovesPerBroker, kept.MaxMovesPerStep = 3, 7
	if op := decodeV0(t, &executor.Operation{Phase: executor.PhaseReassign, Plan: kept, Options: opts}); op.Plan.MaxMovesPerBroker != 3 || op.Plan.MaxMovesPerStep != 7 {
		t.Fatalf("recorded plan limits changed to %d and %d, want 3 and 7", op.Plan.MaxMovesPerBroker, op.Plan.MaxMovesPerStep)
	}
}

// A current record reads back exactly as it was saved: the upgrade is for
// older versions only.
func TestEncodeDecodeCurrentVersion(t *testing.T) {
	op := &executor.Operation{Key: "k", ID: "op-1", Phase: executor.PhaseReassign, Plan: twoGroupPlan(), Group: 1, StepsSubmitted: 1}
	b, err := executor.EncodeOperation(op)
	if err != nil {
		t.Fatal(err)
	}
	if op.Version != 0 {
		t.Fatalf("encoding changed the operation's version to %d", op.Version)
	}
	got, err := executor.DecodeOperation(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != executor.OperationVersion || len(got.Started) != 0 || got.Plan.MaxMovesPerBroker != 0 {
		t.Fatalf("a version %d record was upgraded: version %d, started %v, max per broker %d",
			executor.OperationVersion, got.Version, got.Started, got.Plan.MaxMovesPerBroker)
	}
}

// A record of a later version is refused, naming both versions.
func TestDecodeNewerVersionRefused(t *testing.T) {
	b, _ := json.Marshal(map[string]any{"version": executor.OperationVersion + 1, "id": "op-9", "phase": "reassign"})
	_, err := executor.DecodeOperation(b)
	if err == nil || !strings.Contains(err.Error(), "op-9") || !strings.Contains(err.Error(), fmt.Sprintf("record version %d; this one reads up to %d", executor.OperationVersion+1, executor.OperationVersion)) {
		t.Fatalf("got %v, want a refusal naming op-9 and both versions", err)
	}
}

// An operation killed while its first group copied, whose record is
// rewritten into the unversioned shape (the group's moves not recorded one
// by one, the plan without its limits), resumes: the moves in flight read
// as its own, not as changes made outside kafkascale, none is submitted
// twice, and it completes under the limits it was planned with.
func TestResumeUnversionedRecord(t *testing.T) {
	r, req, _ := continuousRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	r.f.onAssign = func([]executor.Assignment) { cancel() }
	if _, err := r.ex.Scale(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Scale returned %v, want context.Canceled", err)
	}
	stored, err := r.store.Load(context.Background(), req.Key)
	if err != nil || stored == nil || stored.Phase != executor.PhaseReassign || stored.Group != 0 {
		t.Fatalf("stored %+v (%v), want the first group in progress", stored, err)
	}
	first := len(stored.Plan.Groups[0].Moves())
	if len(stored.Started) == 0 || slices.ContainsFunc(stored.Started, func(k int) bool { return k >= first }) {
		t.Fatalf("started %v, want moves of the first group (%d moves) only", stored.Started, first)
	}
	var inFlight []string
	moves := stored.Plan.Moves()
	for _, k := range stored.Started {
		inFlight = append(inFlight, key(moves[k].Topic, moves[k].Partition))
	}
	stored.Version, stored.Started, stored.Finished, stored.StepsSubmitted = 0, nil, nil, 1
	stored.Plan.MaxMovesPerBroker, stored.Plan.MaxMovesPerStep = 0, 0
	b, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	r.store.mu.Lock()
	r.store.ops[req.Key] = b
	r.store.mu.Unlock()

	op := r.resumeKilled(t, req, inFlight)
	if op.Plan.MaxMovesPerBroker != 1 || op.Version != executor.OperationVersion {
		t.Errorf("resumed with %d moves per broker and version %d, want 1 and %d", op.Plan.MaxMovesPerBroker, op.Version, executor.OperationVersion)
	}
}
