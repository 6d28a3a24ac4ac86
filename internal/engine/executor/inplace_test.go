package executor_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// Partitions placed out of band on brokers 1-3 of 4 (racks a, b, c, a):
// kept balanced at 4 brokers, the apply moves replicas onto broker 4 until
// the spread is what the racks allow, and a second apply finds nothing to
// do.
func TestKeepBalancedRebalancesInPlaceThenPlansNothing(t *testing.T) {
	r := newRig(t, 4, 24)
	for _, p := range r.f.parts {
		p.replicas = []int32{1 + p.part%3, 1 + (p.part+1)%3, 1 + (p.part+2)%3}
		p.isr, p.leader = slices.Clone(p.replicas), p.replicas[0]
	}
	snap, _ := r.f.Snapshot(context.Background())
	reasons, leadersOnly, err := engine.OutOfBalance(snap, engine.DefaultOptions())
	if err != nil || len(reasons) == 0 || leadersOnly {
		t.Fatalf("out of balance: %v, leaders only %v, %v; want replica spread reasons", reasons, leadersOnly, err)
	}
	req := scaleReq(4)
	req.Balance = executor.BalanceAll
	op, err := r.ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if op == nil || op.Kind != executor.KindRebalance {
		t.Fatalf("ran %+v, want a rebalance", op)
	}
	r.assertAtTarget(t, op)
	count := map[int32]int{}
	for _, p := range r.f.parts {
		for _, b := range p.replicas {
			count[b]++
		}
	}
	// Racks a, b, c, a: every partition keeps one replica in rack a,
	// which brokers 1 and 4 share.
	if count[4] != 12 || count[1] != 12 {
		t.Errorf("replicas per broker after the rebalance: %v; want brokers 1 and 4 (rack a) to share its 24 evenly", count)
	}
	if len(r.sc.calls) > 0 {
		t.Errorf("a rebalance in place called the platform: %v", r.sc.calls)
	}
	snap, _ = r.f.Snapshot(context.Background())
	if reasons, _, _ := engine.OutOfBalance(snap, engine.DefaultOptions()); len(reasons) > 0 {
		t.Errorf("still out of balance after the rebalance: %v", reasons)
	}
	submitted := r.f.submissions
	req.ID = "op-again"
	again, err := r.ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if again != nil && again.ID == "op-again" || r.f.submissions != submitted {
		t.Errorf("a balanced cluster ran %+v and submitted %d more; want nothing", again, r.f.submissions-submitted)
	}
}

// Only preferred leaders off balance: a reorder and an election, no data
// moved.
func TestKeepBalancedFixesLeadersWithoutMovingData(t *testing.T) {
	r := newRig(t, 3, 24)
	for _, p := range r.f.parts {
		p.replicas = []int32{1, 2, 3}
		p.isr, p.leader = slices.Clone(p.replicas), 1
	}
	req := scaleReq(3)
	req.Balance = executor.BalanceAll
	op, err := r.ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if op == nil || op.Kind != executor.KindRebalance || op.Plan.ReplicaMoves != 0 || len(op.Plan.Moves()) != 0 || len(op.Plan.Reorders) == 0 {
		t.Fatalf("ran %+v; want a rebalance of reorders only", op)
	}
	r.assertAtTarget(t, op)
	leaders := map[int32]int{}
	for _, p := range r.f.parts {
		leaders[p.leader]++
	}
	if leaders[1] > 9 || leaders[2] < 7 || leaders[3] < 7 {
		t.Errorf("leaders per broker after the election: %v, want about 8 each", leaders)
	}
}
