package executor_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// costCalls counts which cluster PreviewCost planned from.
type costCalls struct{ live, fresh int }

func (c *costCalls) request(t *testing.T, r *rig, target int) executor.CostRequest {
	snap, err := r.f.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	opts := scaleReq(target).Options
	return executor.CostRequest{Key: "cluster/test", Target: target, Options: opts,
		Live: func() engine.Cluster { c.live++; return snap },
		Fresh: func() (*executor.Preview, error) {
			c.fresh++
			return executor.PreviewScale(snap, target, nil, opts)
		}}
}

// PreviewCost takes the preview an apply would: the shared fresh one when
// nothing is unfinished, the refresh's snapshot when the caller has it,
// the rest of an operation heading for the same count, the live cluster
// past the cancel of one heading elsewhere; a standalone preview plans
// fresh whatever is unfinished.
func TestPreviewCostChoosesThePreviewTheApplyTakes(t *testing.T) {
	r := newRig(t, 3, 24)
	ctx := context.Background()

	var c costCalls
	cost, err := r.ex.PreviewCost(ctx, c.request(t, r, 5))
	if err != nil || c.fresh != 1 || c.live != 0 || cost.Resuming() || cost.Moves == 0 || cost.Moves != cost.Preview.Plan.ReplicaMoves {
		t.Fatalf("nothing unfinished: %v, calls %+v, cost %+v; want the fresh preview with its moves", err, c, cost)
	}

	c = costCalls{}
	req := c.request(t, r, 5)
	planned := req.Live()
	c.live = 0
	req.Planned = &planned
	if cost, err = r.ex.PreviewCost(ctx, req); err != nil || c.fresh != 0 || c.live != 0 || cost.Moves == 0 {
		t.Fatalf("planned from the snapshot: %v, calls %+v, %d moves; want the snapshot planned", err, c, cost.Moves)
	}

	if _, err := r.ex.Scale(ctx, scaleReq(5)); err != nil {
		t.Fatal(err)
	}
	paused := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock},
		executor.Settings{PollInterval: time.Second, MaxRunDuration: time.Nanosecond})
	op, err := paused.Scale(ctx, scaleReq(3))
	if err != nil || !op.Paused() {
		t.Fatalf("scale-in: %v, %+v; want it paused", err, op)
	}
	rest := op.Remaining(op.ThrottleRate)

	c = costCalls{}
	cost, err = r.ex.PreviewCost(ctx, c.request(t, r, 3))
	if err != nil || !cost.Resuming() || c.fresh != 0 || cost.Moves != rest.Moves || cost.Bytes != rest.Bytes ||
		!slices.Equal(cost.Leaving, op.RemoveBrokers) || cost.Last == nil || cost.Last.ID != op.ID {
		t.Fatalf("same target: %v, calls %+v, cost %+v; want the rest of %s (%d moves, leaving %v)", err, c, cost, op.ID, rest.Moves, op.RemoveBrokers)
	}

	c = costCalls{}
	cost, err = r.ex.PreviewCost(ctx, c.request(t, r, 5))
	if err != nil || cost.Preview.Cancels == nil || c.live != 1 || c.fresh != 0 {
		t.Fatalf("other target: %v, calls %+v, cancels %v; want the live cluster planned past the cancel", err, c, cost.Preview.Cancels)
	}

	c = costCalls{}
	req = c.request(t, r, 3)
	req.Standalone = true
	cost, err = r.ex.PreviewCost(ctx, req)
	if err != nil || cost.Resuming() || cost.Preview.Cancels != nil || c.fresh != 1 || cost.Last == nil || cost.Last.ID != op.ID {
		t.Fatalf("standalone: %v, calls %+v, cost %+v; want the fresh preview, with the last operation read", err, c, cost)
	}
}

type failingStore struct{ executor.Store }

func (failingStore) Load(context.Context, string) (*executor.Operation, error) {
	return nil, errors.New("log unreadable")
}

// A log that cannot be read fails a plan, which must know what it resumes,
// and costs a standalone preview only its measured timings.
func TestPreviewCostWithoutTheLog(t *testing.T) {
	r := newRig(t, 3, 24)
	ex := executor.New(executor.Deps{Kafka: r.f, Store: failingStore{}}, executor.Settings{})
	var c costCalls
	if _, err := ex.PreviewCost(context.Background(), c.request(t, r, 5)); err == nil {
		t.Fatal("a plan without the log: no error")
	}
	req := c.request(t, r, 5)
	req.Standalone = true
	cost, err := ex.PreviewCost(context.Background(), req)
	if err != nil || cost.Last != nil || cost.Moves == 0 || cost.ETA.AddMeasured {
		t.Fatalf("standalone without the log: %v, cost %+v; want the fresh plan at default timings", err, cost)
	}
}

// The replication factor change's preview reads the operation under its
// key: none plans the change, one paused on its way to the same factor is
// resumed, one heading elsewhere is cancelled first; a log it cannot read
// is a CostReadError, not the planner's refusal.
func TestPreviewReplicationFactorCost(t *testing.T) {
	r := newRig(t, 4, 8)
	r.f.addTopic("events", 12, 2, 4<<20)
	ctx := context.Background()
	snap := func() engine.Cluster { c, _ := r.f.Snapshot(ctx); return c }
	cost, err := r.ex.PreviewReplicationFactorCost(ctx, "topic/test/events", snap(), "events", 3, 10<<20)
	if err != nil || cost.Resumes != nil || cost.Cancels != nil || cost.Plan.ReplicaMoves < 12 {
		t.Fatalf("fresh: %v, %+v; want a plan adding 12 replicas, %d moves", err, cost, cost.Plan.ReplicaMoves)
	}

	paused := executor.New(executor.Deps{Kafka: r.f, Store: r.store, Clock: r.clock},
		executor.Settings{PollInterval: time.Second, MaxRunDuration: time.Nanosecond})
	op, err := paused.ChangeReplicationFactor(ctx, executor.ReplicationFactorRequest{Key: "topic/test/events", ID: "op-rf",
		Topic: "events", ReplicationFactor: 3, Throttle: 10 << 20})
	if err != nil || op == nil || !op.Paused() {
		t.Fatalf("change: %v, %+v; want it paused", err, op)
	}
	cost, err = r.ex.PreviewReplicationFactorCost(ctx, "topic/test/events", snap(), "events", 3, 10<<20)
	if err != nil || cost.Resumes == nil || cost.Resumes.ID != "op-rf" {
		t.Fatalf("same factor: %v, %+v; want op-rf resumed", err, cost)
	}
	cost, err = r.ex.PreviewReplicationFactorCost(ctx, "topic/test/events", snap(), "events", 2, 10<<20)
	if err != nil || cost.Resumes != nil || cost.Cancels == nil || cost.Cancels.Operation != "op-rf" {
		t.Fatalf("other factor: %v, %+v; want op-rf cancelled", err, cost)
	}

	broken := executor.New(executor.Deps{Kafka: r.f, Store: failingStore{}}, executor.Settings{})
	_, err = broken.PreviewReplicationFactorCost(ctx, "topic/test/events", snap(), "events", 3, 10<<20)
	var read *executor.CostReadError
	if !errors.As(err, &read) || read.Reassignments {
		t.Fatalf("unreadable log: %v; want a CostReadError for the log", err)
	}
}
