package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// A run with a time budget stops between two groups and returns no error;
// each next run, with a fresh budget, goes on with the same operation and
// gets at least one group further, until the last one completes it.
// Between runs nothing of the operation is in flight and no throttle is
// left.
func TestMaxRunDurationPausesBetweenGroupsAndEachRunContinues(t *testing.T) {
	r := newRig(t, 3, 24)
	run := func() *executor.Operation {
		t.Helper()
		ex := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock},
			executor.Settings{PollInterval: time.Second, MaxRunDuration: time.Nanosecond})
		op, err := ex.Scale(context.Background(), scaleReq(5))
		if err != nil {
			t.Fatalf("a run that spends its budget must end without error: %v", err)
		}
		return op
	}

	op := run()
	if !op.Paused() || op.Phase != executor.PhaseReassign || op.Group != 1 {
		t.Fatalf("first run: phase %s at group %d, paused %v; want paused in reassign after the first group", op.Phase, op.Group, op.Paused())
	}
	groups := len(op.Plan.Groups)
	if groups < 3 {
		t.Fatalf("want a plan of 3 or more groups to exercise pausing, got %d", groups)
	}
	runs := 1
	for !op.Done() {
		r.assertPausedCleanly(t, op)
		before := op.Group
		op = run()
		runs++
		if op.ID != "op-5" {
			t.Fatalf("run %d ran operation %s, want op-5 resumed", runs, op.ID)
		}
		if !op.Done() && op.Group != before+1 {
			t.Errorf("run %d went from group %d to %d; with the budget spent, exactly one group per run", runs, before, op.Group)
		}
		if runs > groups+2 {
			t.Fatalf("no completion after %d runs of a %d-group plan", runs, groups)
		}
	}
	r.assertAtTarget(t, op)
	if runs != groups {
		t.Errorf("%d runs for %d groups, want one per group: the first adds the brokers and runs the first group", runs, groups)
	}
	if len(r.sc.calls) != 1 {
		t.Errorf("scaler called %d times; brokers are added once", len(r.sc.calls))
	}
	if !op.PausedAt.IsZero() {
		t.Errorf("completed operation still says paused at %s", op.PausedAt)
	}
}

// assertPausedCleanly checks a paused operation: stored as such, nothing
// reassigning and no throttle left.
func (r *rig) assertPausedCleanly(t *testing.T, op *executor.Operation) {
	t.Helper()
	stored, _ := r.store.Load(context.Background(), op.Key)
	if stored == nil || !stored.Paused() || stored.Group != op.Group || stored.LastError != "" {
		t.Errorf("stored operation %+v; want paused at group %d with no error", stored, op.Group)
	}
	for _, p := range r.f.parts {
		if p.target != nil {
			t.Errorf("%s p%d still reassigning to %v after the pause", p.topic, p.part, p.target)
		}
	}
	if left := r.f.throttlesLeft(); left != "" {
		t.Errorf("throttles left during the pause: %s", left)
	}
}

// A budget that is not spent changes nothing: the run completes.
func TestMaxRunDurationNotReachedCompletes(t *testing.T) {
	r := newRig(t, 3, 24)
	ex := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock},
		executor.Settings{PollInterval: time.Second, MaxRunDuration: 24 * time.Hour})
	op, err := ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
}

// A replication factor change pauses and resumes the same way: the budget
// is the executor's, whichever operation it runs.
func TestMaxRunDurationPausesReplicationFactorChange(t *testing.T) {
	r := newRig(t, 5, 4)
	r.f.addTopic("events", 24, 2, 4<<20)
	req := executor.ReplicationFactorRequest{Key: "topic/test/events", ID: "op-rf", Topic: "events", ReplicationFactor: 3, Throttle: 10 << 20}
	var op *executor.Operation
	runs := 0
	for op == nil || !op.Done() {
		ex := executor.New(executor.Deps{Kafka: r.f, Store: r.store, Clock: r.clock},
			executor.Settings{PollInterval: time.Second, MaxRunDuration: time.Nanosecond})
		var err error
		if op, err = ex.ChangeReplicationFactor(context.Background(), req); err != nil {
			t.Fatalf("run %d: %v", runs+1, err)
		}
		runs++
		if op.ID != "op-rf" {
			t.Fatalf("run %d ran %s, want op-rf resumed", runs, op.ID)
		}
		if !op.Done() {
			r.assertPausedCleanly(t, op)
			if op.Group != runs {
				t.Errorf("after run %d the operation is at group %d; want one group per run", runs, op.Group)
			}
		}
		if runs > 50 {
			t.Fatal("no completion after 50 runs")
		}
	}
	if runs < 2 || runs != len(op.Plan.Groups) {
		t.Errorf("%d runs for a plan of %d groups; want one run per group", runs, len(op.Plan.Groups))
	}
	r.assertAtTarget(t, op)
}
