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
