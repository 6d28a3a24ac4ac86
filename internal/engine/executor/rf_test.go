package executor_test

import (
	"context"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// Lowering the replication factor only removes replicas: the partition's
// replicas before the move are also the union of old and new, which is what
// Metadata shows while a move runs. Such a move must still be submitted
// (once) and the operation must reach its target.
func TestReplicationFactorDecreaseSubmitsRemovals(t *testing.T) {
	r := newRig(t, 6, 12)
	snap, err := r.f.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := engine.PlanReassignment(snap, engine.Change{ReplicationFactor: map[string]int{"orders": 2}}, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Moves()) == 0 || plan.ReplicaMoves != 0 {
		t.Fatalf("plan has %d moves and %d copies; want drop-only moves", len(plan.Moves()), plan.ReplicaMoves)
	}
	// A drop copies nothing, so nothing is throttled at any point.
	var throttled []string
	r.f.onPoll = func(int) {
		if left := r.f.throttlesLeft(); left != "" {
			throttled = append(throttled, left)
		}
	}
	op, err := r.ex.RunPlan(context.Background(), "topic/test/orders", "op-rf", executor.KindReplicationFactor, plan, 10<<20)
	if err != nil {
		t.Fatalf("lowering the replication factor: %v", err)
	}
	r.assertAtTarget(t, op)
	for _, m := range plan.Moves() {
		if n := r.f.submitted[key(m.Topic, m.Partition)]; n != 1 {
			t.Errorf("%s p%d (%v -> %v) submitted %d times, want once", m.Topic, m.Partition, m.OldReplicas, m.NewReplicas, n)
		}
	}
	if len(throttled) > 0 {
		t.Errorf("a change that copies nothing was throttled: %s", throttled[0])
	}
	for _, p := range r.f.parts {
		if len(p.replicas) != 2 {
			t.Errorf("%s p%d has replicas %v, want 2", p.topic, p.part, p.replicas)
		}
	}
}

// The executor's one entry point for a replication factor change plans
// from the cluster itself, moves only the topic's replicas and reaches the
// new factor on every partition.
func TestChangeReplicationFactorMovesOnlyTheTopic(t *testing.T) {
	r := newRig(t, 4, 8)
	r.f.addTopic("events", 6, 2, 4<<20)
	before := map[string][]int32{}
	for k, p := range r.f.parts {
		if p.topic == "orders" {
			before[k] = append([]int32(nil), p.replicas...)
		}
	}
	op, err := r.ex.ChangeReplicationFactor(context.Background(), executor.ReplicationFactorRequest{
		Key: "topic/test/events", ID: "op-rf", Topic: "events", ReplicationFactor: 3, Throttle: 10 << 20})
	if err != nil {
		t.Fatalf("raising events to 3 replicas: %v", err)
	}
	if op == nil || op.Kind != executor.KindReplicationFactor || !op.Done() {
		t.Fatalf("operation %+v, want a finished replication-factor operation", op)
	}
	r.assertAtTarget(t, op)
	for k, p := range r.f.parts {
		switch p.topic {
		case "events":
			if len(p.replicas) != 3 {
				t.Errorf("%s has replicas %v, want 3", k, p.replicas)
			}
		case "orders":
			if !engine.SameMembers(p.replicas, before[k]) {
				t.Errorf("%s moved from %v to %v although only events changed", k, before[k], p.replicas)
			}
		}
	}
	// A second call at the same factor has nothing to move.
	again, err := r.ex.ChangeReplicationFactor(context.Background(), executor.ReplicationFactorRequest{
		Key: "topic/test/events", ID: "op-rf-2", Topic: "events", ReplicationFactor: 3, Throttle: 10 << 20})
	if err != nil || (again != nil && again.ID == "op-rf-2") {
		t.Fatalf("repeating the change gave %+v, %v; want nothing new", again, err)
	}
}
