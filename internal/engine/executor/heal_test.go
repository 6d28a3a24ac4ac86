package executor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// share lists the partitions with a replica on broker id.
func (f *fakeCluster) share(id int32) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, p := range f.sortedParts() {
		if slices.Contains(p.replicas, id) {
			out = append(out, fmt.Sprintf("%s p%d", p.topic, p.part))
		}
	}
	return out
}

// newHealRig is a rig whose 4 brokers are in 4 racks, so the round-robin
// layout is spread and a replacement in the dead broker's rack needs no
// other move.
func newHealRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t, 4, 24)
	racks := []string{"a", "b", "c", "d"}
	for id, b := range r.f.brokers {
		b.rack = racks[id-1]
	}
	r.sc.racks = racks
	return r
}

// assertHealed checks every partition is at RF 3 on live brokers, fully in
// sync, with no replica on gone.
func (r *rig) assertHealed(t *testing.T, gone int32) {
	t.Helper()
	for _, p := range r.f.sortedParts() {
		if len(p.replicas) != 3 || len(p.isr) != 3 || slices.Contains(p.replicas, gone) {
			t.Errorf("%s p%d: replicas %v, ISR %v; want 3 in sync, none on broker %d", p.topic, p.part, p.replicas, p.isr, gone)
		}
		for _, b := range p.replicas {
			if r.f.brokers[b] == nil || r.f.brokers[b].fenced {
				t.Errorf("%s p%d: replica on broker %d, which is not live", p.topic, p.part, b)
			}
		}
	}
}

// A scale-in heals a dead broker: the pre-check lets its fencing and the
// partitions it left under-replicated pass, no throttle is ever set on it
// (the fake refuses, as a down broker cannot take its config), its replicas
// are drained from the survivors, and it is unregistered.
func TestScaleInRemovesDeadBroker(t *testing.T) {
	r := newHealRig(t)
	r.f.kill(4)
	share := r.f.share(4)
	op, err := r.ex.Scale(context.Background(), scaleReq(3))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	r.assertHealed(t, 4)
	if fmt.Sprint(op.RemoveBrokers) != "[4]" || fmt.Sprint(op.DeadBrokers) != "[4]" {
		t.Errorf("removed %v (dead %v), want dead broker 4", op.RemoveBrokers, op.DeadBrokers)
	}
	if op.Plan.ReplicaMoves != len(share) {
		t.Errorf("moves %d, want broker 4's share %d", op.Plan.ReplicaMoves, len(share))
	}
	if fmt.Sprint(r.f.unregister) != "[4]" {
		t.Errorf("unregistered %v, want [4]", r.f.unregister)
	}
}

// A replacement asks the platform for the same count with the dead broker
// named, moves exactly its share onto the new broker, then removes it.
func TestReplaceDeadBrokerWithNewID(t *testing.T) {
	r := newHealRig(t)
	r.f.kill(4)
	share := r.f.share(4)
	req := scaleReq(4)
	req.RemoveBrokers = []int32{4}
	op, err := r.ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	r.assertHealed(t, 4)
	if op.Kind != executor.KindReplace {
		t.Errorf("kind %s, want replace", op.Kind)
	}
	if got := r.f.share(5); fmt.Sprint(got) != fmt.Sprint(share) {
		t.Errorf("new broker 5 holds %v; want broker 4's former share %v", got, share)
	}
	if fmt.Sprint(r.sc.calls) != "[4 [4] 4 [4]]" {
		t.Errorf("scaler calls %q; want the replacement request, then the same request to remove broker 4", r.sc.calls)
	}
	if fmt.Sprint(r.f.unregister) != "[4]" || len(r.f.brokers) != 4 {
		t.Errorf("unregistered %v, %d brokers left; want 4 gone and 4 brokers", r.f.unregister, len(r.f.brokers))
	}
}

// A platform that brings the dead id back with an empty disk (a StatefulSet
// pod) needs no reassignment: Kafka re-replicates, and the operation only
// waits, throttled, until the ISR is full. Nothing is unregistered.
func TestReplaceDeadBrokerReusedID(t *testing.T) {
	r := newHealRig(t)
	r.f.kill(4)
	share := r.f.share(4)
	r.sc.reuse = true
	throttledDuringCatchUp := false
	r.f.onPoll = func(int) {
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		if len(r.f.catchUp) > 0 && r.f.rates[4] > 0 && len(r.f.followThr["orders"]) > 0 {
			throttledDuringCatchUp = true
		}
	}
	req := scaleReq(4)
	req.RemoveBrokers = []int32{4}
	op, err := r.ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if op.Phase != executor.PhaseCompleted || fmt.Sprint(op.ReusedBrokers) != "[4]" || len(op.RemoveBrokers) != 0 {
		t.Fatalf("operation %+v; want completed with broker 4 reused", op)
	}
	if r.f.submissions != 0 || len(r.f.unregister) != 0 {
		t.Errorf("%d reassignments submitted, unregistered %v; want none", r.f.submissions, r.f.unregister)
	}
	if got := r.f.share(4); fmt.Sprint(got) != fmt.Sprint(share) {
		t.Errorf("broker 4 holds %v, want its share back %v", got, share)
	}
	r.assertHealed(t, -1)
	if !throttledDuringCatchUp {
		t.Errorf("the catch-up onto broker 4 was not throttled")
	}
	if left := r.f.throttlesLeft(); left != "" {
		t.Errorf("throttles left: %s", left)
	}
}

// While a broker is dead, only healing it may run: a scale-out and the
// removal of a live broker are refused, with nothing changed.
func TestScaleOutRefusedWhileABrokerIsDead(t *testing.T) {
	r := newRig(t, 4, 12)
	r.f.kill(4)
	for _, req := range []executor.ScaleRequest{scaleReq(5), func() executor.ScaleRequest { q := scaleReq(3); q.RemoveBrokers = []int32{3}; return q }()} {
		_, err := r.ex.Scale(context.Background(), req)
		var le *engine.LeavingError
		if !errors.As(err, &le) || !slices.Equal(le.Dead, []int32{4}) {
			t.Fatalf("scale to %d removing %v: want a LeavingError naming dead broker 4, got %v", req.TargetBrokerCount, req.RemoveBrokers, err)
		}
	}
	if r.f.submissions != 0 || len(r.sc.calls) != 0 || r.store.saves != 0 {
		t.Errorf("a refusal changed something: %d submissions, scaler %v, %d saves", r.f.submissions, r.sc.calls, r.store.saves)
	}
}

// A broker dies while a scale-out throttles it (soak seed 3, steps 10 to
// 15): every later apply, the replacement of that very broker included,
// failed clearing its throttle rate, since a broker that is down takes no
// config and no other broker may change it. The cancel now clears the
// others and keeps the dead broker's rate recorded; the replacement
// succeeds, and once the broker is gone its rate is forgotten.
func TestReplaceBrokerThatDiedThrottled(t *testing.T) {
	ctx := context.Background()
	r := newHealRig(t)
	r.f.onAlter = func(n int) error {
		if n == 1 {
			r.f.kill(2)
		}
		return nil
	}
	if _, err := r.ex.Scale(ctx, scaleReq(5)); err == nil {
		t.Fatal("the scale-out went through although broker 2 died in its first group; the test proves nothing")
	}
	r.f.onAlter = nil
	if r.f.rates[2] == 0 {
		t.Fatal("broker 2 carries no throttle rate; the test proves nothing")
	}
	req := scaleReq(4)
	req.RemoveBrokers = []int32{2}
	op, err := r.ex.Scale(ctx, req)
	if err != nil {
		t.Fatalf("replacing broker 2, which died throttled: %v", err)
	}
	if op == nil || op.Phase != executor.PhaseCompleted {
		t.Fatalf("the replacement ended as %+v; want completed", op)
	}
	r.assertHealed(t, 2)
	// Broker 2 is gone: no broker answers for its config any more. (Kafka
	// keeps a gone id's dynamic configs; a platform that reused the id
	// would bring it back throttled, as with a cordon.)
	for b, rate := range r.f.rates {
		if b != 2 && rate != 0 {
			t.Errorf("broker %d keeps a throttle rate of %d", b, rate)
		}
	}
	if left := r.f.throttlesLeft(); strings.Contains(left, "leader") || strings.Contains(left, "follower") {
		t.Errorf("replica throttles left: %s", left)
	}
}
