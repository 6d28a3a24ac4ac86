package executor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// createDuringDrain has someone else create a topic once the drain is
// under way (a step is in flight) and SetCordon was called at least
// cordons times, as a user would during a drain of hours.
func createDuringDrain(t *testing.T, r *rig, cordons int) *error {
	t.Helper()
	created := errors.New("the topic was never created: the drain submitted nothing")
	r.f.onPoll = func(int) {
		r.f.mu.Lock()
		inFlight := false
		for _, p := range r.f.parts {
			inFlight = inFlight || p.target != nil
		}
		set := len(r.f.cordonLog) >= cordons
		r.f.mu.Unlock()
		if inFlight && set {
			r.f.onPoll = nil
			created = r.f.createTopic("late", 12, 3)
		}
	}
	return &created
}

// A scale-in cordons the leaving brokers before its first reassignment and
// records them, so a topic created during the drain stays off them and the
// drain completes. The cordon is removed before the brokers are stopped,
// as Kafka keeps it under the id after they are unregistered.
func TestScaleInCordonsTheLeavingBrokersBeforeTheFirstMove(t *testing.T) {
	r := newRig(t, 5, 30)
	r.f.cordonLag = 2
	created := createDuringDrain(t, r, 1)
	op, err := r.ex.Scale(context.Background(), scaleReq(3))
	if err != nil {
		t.Fatal(err)
	}
	if *created != nil {
		t.Fatal(*created)
	}
	r.assertAtTarget(t, op)
	if lifts := assertCordonCalls(t, r.f.cordonLog, 0, "[4 5] true after 0 submissions"); lifts == 0 {
		t.Error("no step lifted the cordon: the test needs a step that keeps a replica on a leaving broker")
	}
	if r.f.cordonRefusals == 0 {
		t.Error("no submission was refused for a cordon the controller had not yet seen lifted: the retry went untested")
	}
	stored, _ := r.store.Load(context.Background(), "cluster/test")
	if len(stored.CordonedBrokers) != 0 {
		t.Errorf("stored operation records cordoned brokers %v, want none left", stored.CordonedBrokers)
	}
	for _, p := range r.f.sortedParts() {
		if p.topic == "late" && (slices.Contains(p.replicas, 4) || slices.Contains(p.replicas, 5)) {
			t.Errorf("late p%d was placed on a leaving broker: %v", p.part, p.replicas)
		}
	}
	if left := r.f.cordonsLeft(); len(left) != 0 {
		t.Errorf("brokers %v still cordoned after the scale-in", left)
	}
}

// On a Kafka without cordoning the drain runs uncordoned: the topic created
// meanwhile lands on a leaving broker, and the check just before the
// platform stops the brokers finds it. The brokers are not stopped then:
// the drain is planned anew from the cluster, drains the topic's replicas
// too, and only then are they removed.
func TestScaleInWithoutCordonSupportDrainsWhatLandedMeanwhile(t *testing.T) {
	r := newRig(t, 5, 30)
	r.f.noCordon = true
	created := createDuringDrain(t, r, 0)
	op, err := r.ex.Scale(context.Background(), scaleReq(3))
	if *created != nil {
		t.Fatal(*created)
	}
	if err != nil {
		t.Fatalf("the drain with a topic created on its leaving brokers: %v", err)
	}
	if !strings.HasSuffix(op.ID, "-anew") {
		t.Errorf("the operation that completed is %s; want the one planned anew (-anew)", op.ID)
	}
	r.assertAtTarget(t, op)
	landed := false
	for _, p := range r.f.parts {
		for _, b := range p.replicas {
			if slices.Contains([]int32{4, 5}, b) {
				t.Errorf("%s p%d still on removed broker %d: %v", p.topic, p.part, b, p.replicas)
			}
		}
		landed = landed || p.topic == "late"
	}
	if !landed {
		t.Fatal("no partition of topic late; the test proves nothing")
	}
	if got := r.sc.calls; len(got) != 1 || got[0] != "3 [4 5]" {
		t.Errorf("scaler calls %v, want one, removing [4 5] once they held nothing", got)
	}
	if len(op.CordonedBrokers) != 0 || len(r.f.cordonLog) != 0 {
		t.Errorf("recorded cordons %v, calls %q; want none on a Kafka without cordoning", op.CordonedBrokers, r.f.cordonLog)
	}
}

// Cancelling a drain removes its cordon: the leaving brokers stay, and
// must take new replicas again.
func TestCancelRemovesTheCordon(t *testing.T) {
	r := newRig(t, 5, 30)
	interruptScale(t, r, 3)
	if left := r.f.cordonsLeft(); !slices.Equal(left, []int32{4, 5}) {
		t.Fatalf("cordoned %v during the interrupted drain, want [4 5]", left)
	}
	if _, err := r.ex.Cancel(context.Background(), "cluster/test", "the resource is destroyed"); err != nil {
		t.Fatal(err)
	}
	if left := r.f.cordonsLeft(); len(left) != 0 {
		t.Errorf("brokers %v still cordoned after the cancel", left)
	}
	if last := r.f.cordonLog[len(r.f.cordonLog)-1]; !strings.HasPrefix(last, "[4 5] false") {
		t.Errorf("last cordon call %q, want the cordon removed from [4 5]", last)
	}
	stored, _ := r.store.Load(context.Background(), "cluster/test")
	if stored.Phase != executor.PhaseCancelled || len(stored.CordonedBrokers) != 0 {
		t.Errorf("stored operation phase %s, cordoned %v; want cancelled with no cordon of its own left", stored.Phase, stored.CordonedBrokers)
	}
	if err := r.f.createTopic("after", 12, 3); err != nil {
		t.Fatal(err)
	}
	onLeaving := 0
	for _, p := range r.f.sortedParts() {
		if p.topic == "after" && (slices.Contains(p.replicas, 4) || slices.Contains(p.replicas, 5)) {
			onLeaving++
		}
	}
	if onLeaving == 0 {
		t.Error("a topic created after the cancel got no replica on brokers 4 and 5: they are still cordoned")
	}
}

// A resumed drain sets the cordon again before it goes on: someone may
// have removed it, or the broker restarted meanwhile.
func TestResumedDrainSetsTheCordonAgain(t *testing.T) {
	r := newRig(t, 5, 30)
	interruptScale(t, r, 3)
	r.f.mu.Lock()
	clear(r.f.cordoned)
	for _, p := range r.f.parts {
		if p.target != nil {
			p.left = 2 // let the moves in flight finish now
		}
	}
	r.f.mu.Unlock()
	before, submitted := len(r.f.cordonLog), r.f.submissions
	created := createDuringDrain(t, r, before+1)
	op, err := r.ex.Scale(context.Background(), scaleReq(3))
	if err != nil {
		t.Fatal(err)
	}
	if *created != nil {
		t.Fatal(*created)
	}
	r.assertAtTarget(t, op)
	// Set again on resume, before the next submission.
	assertCordonCalls(t, r.f.cordonLog, before, fmt.Sprintf("[4 5] true after %d submissions", submitted))
	for _, p := range r.f.sortedParts() {
		if p.topic == "late" && (slices.Contains(p.replicas, 4) || slices.Contains(p.replicas, 5)) {
			t.Errorf("late p%d was placed on a leaving broker: %v", p.part, p.replicas)
		}
	}
}

// A dead leaving broker cannot take its own config: it is not cordoned
// (the fake refuses, as a down broker would), and the live one is.
func TestDeadLeavingBrokerIsNotCordoned(t *testing.T) {
	r := newRig(t, 5, 30)
	r.f.kill(5)
	req := scaleReq(3)
	req.RemoveBrokers = []int32{4, 5}
	// A partition on both leaving brokers moves off both at once: a
	// target that kept the dead one could never complete.
	req.Options.MaxReplicaMovesPerPartition = 2
	op, err := r.ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatalf("%v (op %+v)", err, op)
	}
	if op.Phase != executor.PhaseCompleted {
		t.Fatalf("phase %s (last error %q), want completed", op.Phase, op.LastError)
	}
	assertCordonCalls(t, r.f.cordonLog, 0, "[4] true after 0 submissions")
	if len(op.CordonedBrokers) != 0 || !slices.Equal(op.DeadBrokers, []int32{5}) || len(r.f.cordonsLeft()) != 0 {
		t.Errorf("cordon left on %v, recorded %v (dead %v); want none left, and dead [5] never cordoned", r.f.cordonsLeft(), op.CordonedBrokers, op.DeadBrokers)
	}
}

// assertCordonCalls checks the SetCordon calls of a drain that completed,
// from index from on: the first is want, each removal but the last is a
// lift for one step, set again by the next call, and the last removes the
// cordon from the leaving brokers of want before they are stopped. It
// returns the lifts for a step.
func assertCordonCalls(t *testing.T, calls []string, from int, want string) int {
	t.Helper()
	calls = calls[from:]
	leaving, _, _ := strings.Cut(want, " true ")
	if n := len(calls); n < 2 || !strings.HasPrefix(calls[n-1], leaving+" false ") {
		t.Fatalf("cordon calls %q, want the last to remove the cordon from %s before they are stopped", calls, leaving)
	}
	calls = calls[:len(calls)-1]
	if len(calls) == 0 || calls[0] != want {
		t.Fatalf("cordon calls %q, want the first to be %q", calls, want)
	}
	lifts := 0
	for i, c := range calls {
		brokers, _, _ := strings.Cut(c, " false ")
		if brokers == c {
			continue
		}
		lifts++
		if i+1 == len(calls) || !strings.HasPrefix(calls[i+1], brokers+" true ") {
			t.Errorf("cordon call %d %q is not followed by the cordon set again on %s: %q", from+i, c, brokers, calls)
		}
	}
	return lifts
}

// An abandoned drain removes its cordon: the leaving brokers stay, and the
// next run plans anew.
func TestAbandonedDrainRemovesTheCordon(t *testing.T) {
	r := newRig(t, 5, 30)
	r.f.onAlter = func(int) error {
		// Someone else deletes a partition the drain has not reached yet.
		r.f.onAlter = nil
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		for _, p := range r.f.sortedParts() {
			if r.f.submitted[key(p.topic, p.part)] == 0 && p.target == nil && slices.Contains(p.replicas, 5) {
				delete(r.f.parts, key(p.topic, p.part))
				break
			}
		}
		return nil
	}
	_, err := r.ex.Scale(context.Background(), scaleReq(3))
	var conflict *executor.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("want ConflictError, got %v", err)
	}
	stored, _ := r.store.Load(context.Background(), "cluster/test")
	if stored.Phase != executor.PhaseAbandoned || len(stored.CordonedBrokers) != 0 {
		t.Errorf("stored operation phase %s, cordoned %v; want abandoned with no cordon of its own left", stored.Phase, stored.CordonedBrokers)
	}
	if left := r.f.cordonsLeft(); len(left) != 0 {
		t.Errorf("brokers %v still cordoned after the drain was abandoned", left)
	}
	if len(r.f.unregister) != 0 {
		t.Errorf("unregistered %v, want none: the drain was abandoned", r.f.unregister)
	}
}

// A leaving broker that dies during the drain (soak seed 21, steps 36 and
// 37): resumed as planned, the drain would cordon a broker that cannot
// take its config, and a step of its plan may keep the dead replica in its
// target, which no reassignment completes. The next apply of the same
// configuration cancels it and plans the change anew with the broker dead.
func TestLeavingBrokerDeadDuringTheDrainIsPlannedAnew(t *testing.T) {
	r := newRig(t, 5, 30)
	req := scaleReq(3)
	req.RemoveBrokers = []int32{4, 5}
	ctx, done := interruptFirstStep(r)
	if _, err := r.ex.Scale(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Scale returned %v, want context.Canceled", err)
	}
	done()
	first, _ := r.store.Load(context.Background(), "cluster/test")
	r.f.kill(5)

	snap, err := r.f.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pv, err := executor.PreviewScaleFrom(snap, first, 3, []int32{4, 5}, executor.BalanceNone, req.Options)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Resumes != nil || pv.Cancels == nil || !slices.Equal(pv.Cancels.DiedLeaving, []int32{5}) {
		t.Fatalf("preview resumes %v, cancels %+v; want the cancel of %s because broker 5 died", pv.Resumes != nil, pv.Cancels, first.ID)
	}

	req.ID = "op-again"
	op, err := r.ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatalf("the same configuration once broker 5 died: %v", err)
	}
	if op.ID != "op-again" || !slices.Equal(op.DeadBrokers, []int32{5}) {
		t.Errorf("operation %s with dead brokers %v; want a new operation with [5] dead", op.ID, op.DeadBrokers)
	}
	// The rate the first run set on broker 5 stays under its id: no broker
	// takes another's config, and 5 died before the cancel could clear it
	// (the guide's "A broker that died while it was throttled").
	if left := r.f.throttlesLeft(); !strings.HasPrefix(left, "broker 5 rate ") || strings.Contains(left, ";") {
		t.Errorf("throttles left: %q, want only the dead broker 5's rate", left)
	}
	r.f.mu.Lock()
	delete(r.f.rates, 5)
	r.f.mu.Unlock()
	r.assertAtTarget(t, op)
	for _, p := range r.f.sortedParts() {
		if slices.Contains(p.replicas, 4) || slices.Contains(p.replicas, 5) {
			t.Errorf("%s p%d still has a replica on a leaving broker: %v", p.topic, p.part, p.replicas)
		}
	}
}

// Another tool creates a topic while the drain's cordon is lifted for a
// step (submitCordoned), and the controller puts replicas on the leaving
// brokers. The drain's plan does not know them: once its moves are done,
// the check before the platform stops the brokers finds them. The drain
// then plans anew from the cluster in the same apply, and drains them
// too, instead of failing the apply and every one after it on "still
// hold N replica(s) after draining" (ci18,
// TestAccClusterResource_drainCordonsLeavingBrokers).
func TestDrainPlansAnewForReplicasThatLandedDuringIt(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 5, 12)
	landed := false
	r.f.onPoll = func(int) {
		if landed {
			return
		}
		op, err := r.store.Load(ctx, "cluster/test")
		if err != nil || op == nil || op.Plan == nil || op.Phase != executor.PhaseReassign {
			return
		}
		landed = true
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		r.f.addTopic("late", 5, 3, 1<<20)
	}
	op, err := r.ex.Scale(ctx, scaleReq(3))
	if err != nil {
		t.Fatalf("the drain with a topic created during it: %v", err)
	}
	if !landed {
		t.Fatal("the topic was never created during the drain; the test proves nothing")
	}
	r.assertAtTarget(t, op)
	if bs, _ := r.f.Brokers(ctx); len(bs) != 3 {
		t.Errorf("%d brokers after the drain, want 3", len(bs))
	}
	for _, p := range r.f.parts {
		for _, b := range p.replicas {
			if slices.Contains(op.RemoveBrokers, b) {
				t.Errorf("%s p%d still on removed broker %d: %v", p.topic, p.part, b, p.replicas)
			}
		}
	}
}
