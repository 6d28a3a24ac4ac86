package executor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

type rig struct {
	f     *fakeCluster
	sc    *fakeScaler
	store *memStore
	clock *fakeClock
	ex    *executor.Executor
}

func newRig(t *testing.T, brokers, partitions int) *rig {
	t.Helper()
	racks := []string{"a", "b", "c"}
	f := newFakeCluster(racks, brokers)
	f.addTopic("orders", partitions, 3, 10<<20)
	r := &rig{f: f, sc: &fakeScaler{f: f, racks: racks}, store: &memStore{}, clock: &fakeClock{now: time.Unix(0, 0)}}
	r.ex = r.executor(nil)
	return r
}

func (r *rig) executor(adv executor.RateAdvisor) *executor.Executor {
	return executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock, Advisor: adv},
		executor.Settings{PollInterval: time.Second, AdjustInterval: 10 * time.Second, MinThrottle: 1 << 20, MaxThrottle: 100 << 20})
}

func scaleReq(n int) executor.ScaleRequest {
	opts := engine.DefaultOptions()
	opts.MaxMovesPerStep = 3
	return executor.ScaleRequest{Key: "cluster/test", ID: fmt.Sprintf("op-%d", n), TargetBrokerCount: n, Options: opts, InitialThrottle: 10 << 20}
}

// assertAtTarget checks the cluster equals the plan's target, nothing is
// reassigning and no throttle is left.
func (r *rig) assertAtTarget(t *testing.T, op *executor.Operation) {
	t.Helper()
	if !op.Done() || op.Phase != executor.PhaseCompleted {
		t.Fatalf("operation phase %s, want completed (last error %q)", op.Phase, op.LastError)
	}
	for _, want := range op.Plan.Target {
		p := r.f.parts[key(want.Topic, want.Partition)]
		if !slices.Equal(p.replicas, want.Replicas) || p.target != nil {
			t.Errorf("%s p%d: replicas %v (reassigning to %v), want %v", want.Topic, want.Partition, p.replicas, p.target, want.Replicas)
		}
		if p.leader != want.Replicas[0] {
			t.Errorf("%s p%d: leader %d, want preferred %d", want.Topic, want.Partition, p.leader, want.Replicas[0])
		}
	}
	if left := r.f.throttlesLeft(); left != "" {
		t.Errorf("throttles left behind: %s", left)
	}
	r.f.mu.Lock()
	if u := r.f.unthrottled; len(u) > 0 {
		t.Errorf("%d throttle faults (copies in flight without their entries, throttling beside a removal): %v", len(u), u[:min(len(u), 10)])
	}
	r.f.mu.Unlock()
	stored, _ := r.store.Load(context.Background(), op.Key)
	if stored == nil || stored.Phase != executor.PhaseCompleted {
		t.Errorf("stored operation not completed: %+v", stored)
	}
}

func TestScaleOutRunsPlanToCompletion(t *testing.T) {
	r := newRig(t, 3, 24)
	op, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	if len(op.Plan.Groups) < 2 {
		t.Fatalf("want a multi-group plan to exercise grouping, got %d group(s)", len(op.Plan.Groups))
	}
	// Every move and reorder was submitted exactly once: nothing resubmitted.
	moves := map[string]int{}
	for _, m := range op.Plan.Moves() {
		moves[key(m.Topic, m.Partition)]++
	}
	for _, ro := range op.Plan.Reorders {
		moves[key(ro.Topic, ro.Partition)]++
	}
	for k, n := range moves {
		if r.f.submitted[k] != n {
			t.Errorf("%s submitted %d times, planned moves %d", k, r.f.submitted[k], n)
		}
	}
	if got := r.sc.calls; len(got) != 1 || got[0] != "5 []" {
		t.Errorf("scaler calls %v, want one call for 5 brokers", got)
	}
	for _, id := range []int32{4, 5} {
		n := 0
		for _, p := range r.f.parts {
			if slices.Contains(p.replicas, id) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("new broker %d received no replica", id)
		}
	}
}

// A read of the brokers that keeps failing (a permission revoked, say) is
// what the wait for new brokers reports when it gives up, not only the
// deadline.
func TestWaitForBrokersReportsTheReadError(t *testing.T) {
	r := newRig(t, 3, 6)
	r.sc.brokersErrAfter = errors.New("CLUSTER_AUTHORIZATION_FAILED: DescribeCluster denied")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := r.ex.Scale(ctx, scaleReq(5))
	if err == nil || !strings.Contains(err.Error(), "DescribeCluster denied") || !strings.Contains(err.Error(), "5 brokers registered") {
		t.Fatalf("err = %v, want the wait for 5 brokers to name the failing read", err)
	}
}

func TestScaleOutNoopAtTargetCount(t *testing.T) {
	r := newRig(t, 3, 6)
	op, err := r.ex.Scale(context.Background(), scaleReq(3))
	if err != nil || op != nil {
		t.Fatalf("Scale to the current count: op %v, err %v; want nothing to do", op, err)
	}
	if r.f.submissions != 0 || len(r.sc.calls) != 0 {
		t.Errorf("submitted %d, scaler calls %v; want none", r.f.submissions, r.sc.calls)
	}
}

// An apply interrupted mid-reassignment leaves a truthful record; the next
// one resumes it without resubmitting a move that is in flight or done.
func TestInterruptedScaleOutResumes(t *testing.T) {
	r := newRig(t, 3, 24)
	ctx, cancel := context.WithCancel(context.Background())
	r.f.onAlter = func(n int) error {
		if n == 3 {
			cancel() // the user pressed Ctrl-C after two steps went out
		}
		return nil
	}
	_, err := r.ex.Scale(ctx, scaleReq(5))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Scale returned %v, want context.Canceled", err)
	}
	stored, _ := r.store.Load(context.Background(), "cluster/test")
	if stored == nil || stored.Phase != executor.PhaseReassign {
		t.Fatalf("stored operation %+v, want phase reassign", stored)
	}
	if !strings.Contains(stored.LastError, "canceled") {
		t.Errorf("stored last error %q does not say why it stopped", stored.LastError)
	}
	submittedBefore := r.f.submissions
	r.f.onAlter = nil

	op, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	if op.ID != "op-5" || op.Kind != executor.KindScaleOut {
		t.Errorf("resumed operation %s (%s), want the original op-5", op.ID, op.Kind)
	}
	if len(r.sc.calls) != 1 {
		t.Errorf("scaler called %d times; brokers are added once", len(r.sc.calls))
	}
	moves := map[string]int{}
	for _, m := range op.Plan.Moves() {
		moves[key(m.Topic, m.Partition)]++
	}
	for _, ro := range op.Plan.Reorders {
		moves[key(ro.Topic, ro.Partition)]++ // a reorder is one submission too
	}
	for k, n := range r.f.submitted {
		if n > moves[k] {
			t.Errorf("%s submitted %d times for %d planned move(s): resubmitted after resume", k, n, moves[k])
		}
	}
	if r.f.submissions <= submittedBefore {
		t.Errorf("resume submitted nothing")
	}
}

func TestBrokerDownStopsSubmittingAndResumesAfterReturn(t *testing.T) {
	r := newRig(t, 3, 24)
	var victim int32 = 4
	r.f.onAlter = func(n int) error {
		if n == 2 {
			r.f.mu.Lock()
			r.f.brokers[victim].fenced = true
			r.f.mu.Unlock()
		}
		return nil
	}
	_, err := r.ex.Scale(context.Background(), scaleReq(5))
	var down *executor.BrokerDownError
	if !errors.As(err, &down) {
		t.Fatalf("want BrokerDownError, got %v", err)
	}
	if !strings.Contains(err.Error(), "broker 4 went offline") {
		t.Errorf("error %q does not name the broker", err)
	}
	stopped := r.f.submissions

	// While the broker is down, a re-apply refuses in the pre-check.
	r.f.onAlter = nil
	if _, err := r.ex.Scale(context.Background(), scaleReq(5)); err == nil || !strings.Contains(err.Error(), "broker 4 is fenced") {
		t.Fatalf("re-apply with the broker down: %v, want a pre-check naming broker 4", err)
	}
	if r.f.submissions != stopped {
		t.Fatalf("submitted %d more step(s) while a broker was down", r.f.submissions-stopped)
	}

	r.f.mu.Lock()
	r.f.brokers[victim].fenced = false
	r.f.mu.Unlock()
	op, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
}

func TestConflictAbandonsWithoutSubmitting(t *testing.T) {
	r := newRig(t, 3, 24)
	r.f.onAlter = func(n int) error {
		if n == 2 {
			// Someone else moves a partition the plan moves but has not
			// reached yet, to a list no move of the plan explains.
			op, err := r.store.Load(context.Background(), "cluster/test")
			if err != nil || op == nil {
				t.Errorf("no operation recorded before the second submission: %v", err)
				return nil
			}
			r.f.mu.Lock()
			defer r.f.mu.Unlock()
			explained := map[string]bool{}
			for _, m := range op.Plan.Moves() {
				for _, l := range [][]int32{m.OldReplicas, m.NewReplicas} {
					explained[fmt.Sprint(m.Topic, m.Partition, slices.Sorted(slices.Values(l)))] = true
				}
			}
			// Started lists what this call submits too: it is recorded
			// before.
			for k, m := range op.Plan.Moves() {
				p := r.f.parts[key(m.Topic, m.Partition)]
				if r.f.submitted[key(m.Topic, m.Partition)] > 0 || p.target != nil || slices.Contains(op.Started, k) {
					continue
				}
				for _, b := range []int32{1, 2, 3, 4, 5} {
					l := []int32{p.replicas[1], p.replicas[2], b}
					if slices.Contains(p.replicas, b) || explained[fmt.Sprint(m.Topic, m.Partition, slices.Sorted(slices.Values(l)))] {
						continue
					}
					p.replicas = l
					p.isr = slices.Clone(p.replicas)
					return nil
				}
			}
			t.Error("every partition the plan moves was submitted by the second submission")
		}
		return nil
	}
	_, err := r.ex.Scale(context.Background(), scaleReq(5))
	var conflict *executor.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("want ConflictError, got %v", err)
	}
	stored, _ := r.store.Load(context.Background(), "cluster/test")
	if stored.Phase != executor.PhaseAbandoned {
		t.Errorf("phase %s, want abandoned", stored.Phase)
	}
	if left := r.f.throttlesLeft(); left != "" {
		t.Errorf("throttles left after abandoning: %s", left)
	}
}

// A broker's metadata can show a finished move's old and new replicas
// together long after the controller stopped listing its reassignment: a
// 5,000-partition scale-out on a loaded machine was abandoned for 244
// partitions so read over the conflict's five polls of grace. The
// controller, asked through the replication factor guard, tells that lag
// from a change made outside kafkascale, and the operation completes.
func TestMetadataLagLongerThanTheGraceIsNoConflict(t *testing.T) {
	r := newRig(t, 3, 24)
	r.f.metadataLag = 4 * executor.ConflictPolls
	op, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatalf("scale-out with metadata %d polls behind: %v", r.f.metadataLag, err)
	}
	r.assertAtTarget(t, op)
	if r.f.guardAsks == 0 {
		t.Error("the controller was never asked: the lag did not reach the executor, so this proves nothing")
	}
	for _, p := range r.f.sortedParts() {
		if n := r.f.submitted[key(p.topic, p.part)]; n > 2 {
			// The move, and the question that found it finished.
			t.Errorf("%s p%d submitted %d times", p.topic, p.part, n)
		}
	}
}

// The same lag under a drain, whose steps may keep a replica on a leaving
// broker the operation has cordoned: Kafka refuses such a target before it
// looks at the replication factor (KIP-1066), even as a question. Four
// drains failed so in a loaded CI run. A refusal only leaves the
// partition unconfirmed; the lag still ends, and the drain completes.
func TestMetadataLagUnderADrainIsNoConflict(t *testing.T) {
	r := newRig(t, 5, 30)
	r.f.metadataLag = executor.ConflictPolls - 1
	op, err := r.ex.Scale(context.Background(), scaleReq(3))
	if err != nil {
		t.Fatalf("drain with metadata %d polls behind: %v", r.f.metadataLag, err)
	}
	r.assertAtTarget(t, op)
	if r.f.guardAsks == 0 {
		t.Error("the controller was never asked: the lag did not reach the executor, so this proves nothing")
	}
}

// Without the guard (Kafka before 4.0), the polls of grace are all there
// is: the same lag still reads as a conflict. This is the test above
// failing as it would without the question to the controller.
func TestMetadataLagWithoutTheGuardIsAConflict(t *testing.T) {
	r := newRig(t, 3, 24)
	r.f.metadataLag = 4 * executor.ConflictPolls
	r.f.noGuard = true
	_, err := r.ex.Scale(context.Background(), scaleReq(5))
	var conflict *executor.ConflictError
	if !errors.As(err, &conflict) || !strings.Contains(err.Error(), "no reassignment of it is in progress") {
		t.Fatalf("want a ConflictError on the union of old and new replicas, got %v", err)
	}
}

// Someone else raises a moving partition's replication factor onto the
// plan's new broker: Kafka ends on the union of the old and new replicas
// with no reassignment in progress. The controller refuses the target's
// smaller replica count, changing nothing, and the operation is abandoned
// rather than waiting for ever.
func TestUnionLeftBySomeoneElseIsAConflict(t *testing.T) {
	r := newRig(t, 3, 24)
	var victim string
	r.f.onPoll = func(int) {
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		if victim != "" {
			return
		}
		for _, p := range r.f.sortedParts() {
			if p.target != nil {
				victim = key(p.topic, p.part)
				p.replicas, p.target = p.union(), nil
				p.isr = slices.Clone(p.replicas)
				return
			}
		}
	}
	_, err := r.ex.Scale(context.Background(), scaleReq(5))
	var conflict *executor.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("want ConflictError, got %v", err)
	}
	if r.f.guardAsks == 0 {
		t.Error("the controller was never asked about the union")
	}
	if p := r.f.parts[victim]; len(p.replicas) != 4 || p.target != nil {
		t.Errorf("%s: replicas %v, target %v; the question to the controller must change nothing", victim, p.replicas, p.target)
	}
}

func TestPreCheckNamesEveryBlocker(t *testing.T) {
	// A fenced broker is refused before the pre-check, by the engine's
	// choice of leaving brokers (TestScaleOutRefusedWhileABrokerIsDead).
	r := newRig(t, 3, 6)
	p := r.f.parts[key("orders", 1)]
	p.isr = p.isr[:1]
	q := r.f.parts[key("orders", 2)]
	q.target, q.left = []int32{1, 2, 4}, 100
	_, err := r.ex.Scale(context.Background(), scaleReq(5))
	var pc *executor.PreCheckError
	if !errors.As(err, &pc) {
		t.Fatalf("want PreCheckError, got %v", err)
	}
	for _, want := range []string{"orders p1 is under-replicated", "orders p2 is being reassigned by another tool"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("pre-check error %q lacks %q", err, want)
		}
	}
	if r.f.submissions != 0 || len(r.sc.calls) != 0 {
		t.Errorf("pre-check failure still changed the cluster: %d submissions, scaler %v", r.f.submissions, r.sc.calls)
	}
}

func TestScaleInDrainsThenRemovesAndUnregisters(t *testing.T) {
	r := newRig(t, 5, 30)
	op, err := r.ex.Scale(context.Background(), scaleReq(3))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	if !slices.Equal(op.RemoveBrokers, []int32{4, 5}) {
		t.Errorf("removed %v, want the highest ids [4 5]", op.RemoveBrokers)
	}
	for _, p := range r.f.parts {
		if slices.Contains(p.replicas, 4) || slices.Contains(p.replicas, 5) {
			t.Errorf("%s p%d still on a removed broker: %v", p.topic, p.part, p.replicas)
		}
	}
	if got := r.sc.calls; len(got) != 1 || got[0] != "3 [4 5]" {
		t.Errorf("scaler calls %v, want one removing [4 5]", got)
	}
	if !slices.Equal(r.f.unregister, []int32{4, 5}) {
		t.Errorf("unregistered %v, want [4 5]", r.f.unregister)
	}
	for _, m := range op.Plan.Moves() {
		for _, b := range m.Removing {
			if b != 4 && b != 5 {
				t.Errorf("move %s p%d removes a replica from staying broker %d", m.Topic, m.Partition, b)
			}
		}
	}
}

// Throttle entries other users set survive the operation.
func TestForeignThrottlesSurvive(t *testing.T) {
	r := newRig(t, 3, 12)
	r.f.leaderThr["orders"] = []string{"0:1"}  // also one the plan will want
	r.f.followThr["orders"] = []string{"99:9"} // unrelated
	op, err := r.ex.Scale(context.Background(), scaleReq(4))
	if err != nil {
		t.Fatal(err)
	}
	if op.Phase != executor.PhaseCompleted {
		t.Fatal(op.LastError)
	}
	if got := r.f.leaderThr["orders"]; !slices.Equal(got, []string{"0:1"}) {
		t.Errorf("leader throttle now %v, want the user's [0:1] kept", got)
	}
	if got := r.f.followThr["orders"]; !slices.Equal(got, []string{"99:9"}) {
		t.Errorf("follower throttle now %v, want the user's [99:9] kept", got)
	}
}

// Registrations come from the controller, the snapshot from a broker's
// metadata, which can lag: the plan must wait for the new brokers to show
// there, or it would move nothing onto them.
func TestScaleOutWaitsForNewBrokersInMetadata(t *testing.T) {
	r := newRig(t, 3, 24)
	r.f.snapshotMaxSeen = 3
	r.f.onAlter = nil
	// The pre-scale preview takes one snapshot; the next three lag.
	r.f.snapshotLag = 4
	op, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	if op.Plan.ReplicaMoves == 0 {
		t.Fatal("planned no moves: the plan was made before the new brokers showed in metadata")
	}
	for _, id := range []int32{4, 5} {
		n := 0
		for _, p := range r.f.parts {
			if slices.Contains(p.replicas, id) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("new broker %d holds no replica", id)
		}
	}
}
