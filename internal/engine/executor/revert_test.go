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

// A scale-in 5→3 paused after its first group, then reverted to 5: the
// apply cancels it and moves what it had drained back into balance over
// the five brokers, in no more moves than the drain had done, and the
// plan shows those moves before anything runs. Afterwards nothing is
// owed: the next Scale to 5 does nothing.
func TestRevertedScaleInPutsTheClusterBack(t *testing.T) {
	r := newRig(t, 3, 24)
	if _, err := r.ex.Scale(context.Background(), scaleReq(5)); err != nil {
		t.Fatal(err)
	}
	paused := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock},
		executor.Settings{PollInterval: time.Second, MaxRunDuration: time.Nanosecond})
	op, err := paused.Scale(context.Background(), scaleReq(3))
	if err != nil || !op.Paused() || op.MovesDone == 0 {
		t.Fatalf("scale-in: %v, operation %+v; want it paused with moves done", err, op)
	}
	done := op.MovesDone

	snap, _ := r.f.Snapshot(context.Background())
	if reasons, _, err := engine.OutOfBalance(snap, scaleReq(5).Options); err != nil || len(reasons) == 0 {
		t.Fatalf("after %d moves of the drain the cluster reads as balanced (%v, %v); the test needs it out of balance", done, reasons, err)
	}
	pv, err := executor.PreviewScaleFrom(snap, op, 5, nil, executor.BalanceNone, scaleReq(5).Options)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Cancels == nil || pv.Plan == nil || pv.Plan.ReplicaMoves == 0 || pv.Plan.ReplicaMoves > done {
		t.Fatalf("preview of the revert: cancels %v, %d moves; want the cancel and 1 to %d moves back", pv.Cancels, pv.Plan.ReplicaMoves, done)
	}

	back, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	if back.Kind != executor.KindRebalance || back.Plan.ReplicaMoves != pv.Plan.ReplicaMoves {
		t.Fatalf("the revert ran %s with %d moves; want the rebalance the plan showed (%d moves)", back.Kind, back.Plan.ReplicaMoves, pv.Plan.ReplicaMoves)
	}
	r.assertAtTarget(t, back)
	snap, _ = r.f.Snapshot(context.Background())
	if reasons, _, _ := engine.OutOfBalance(snap, scaleReq(5).Options); len(reasons) > 0 {
		t.Fatalf("after the revert the cluster is out of balance: %v", reasons)
	}
	if left := r.f.cordonsLeft(); len(left) > 0 {
		t.Fatalf("cordons left: %v", left)
	}
	again, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil || again.ID != back.ID {
		t.Fatalf("the next Scale to 5 ran %v (%v); want nothing to do", again, err)
	}
}

// An operation abandoned half-way (a change outside kafkascale made its
// plan wrong) owes the rest of its layout: at the same count it says what
// is out of balance, and the next apply rebalances, where before it did
// nothing and the plan said "no changes".
func TestAbandonedScaleOutIsFinishedByTheNextApply(t *testing.T) {
	r := newRig(t, 3, 24)
	paused := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock},
		executor.Settings{PollInterval: time.Second, MaxRunDuration: time.Nanosecond})
	op, err := paused.Scale(context.Background(), scaleReq(5))
	if err != nil || !op.Paused() {
		t.Fatalf("scale-out: %v; want it paused", err)
	}
	// Recorded as the executor's abandon records it.
	op.Phase, op.LastError = executor.PhaseAbandoned, "operation op-5 stopped: 1 partition(s) changed outside kafkascale"
	if err := r.store.Save(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	snap, _ := r.f.Snapshot(context.Background())
	owed, err := executor.OwedImbalance(snap, op, scaleReq(5).Options)
	if err != nil || owed == "" {
		t.Fatalf("the abandoned operation owes %q (%v); want what is out of balance", owed, err)
	}
	pv, err := executor.PreviewScaleFrom(snap, op, 5, nil, executor.BalanceNone, scaleReq(5).Options)
	if err != nil || pv.Plan == nil || pv.Plan.ReplicaMoves == 0 || pv.Imbalance == "" {
		t.Fatalf("the plan at the same count: %+v (%v); want the rebalance's moves and why", pv, err)
	}
	next, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	if next.Kind != executor.KindRebalance {
		t.Fatalf("the next apply ran %s; want a rebalance", next.Kind)
	}
	r.assertAtTarget(t, next)
	snap, _ = r.f.Snapshot(context.Background())
	if owed, _ := executor.OwedImbalance(snap, next, scaleReq(5).Options); owed != "" {
		t.Fatalf("still owed after the rebalance: %s", owed)
	}
}

// A drain of a named broker abandoned before it moved anything (a change
// outside kafkascale made its plan wrong, after an apply that paused):
// Terraform kept the name with the paused apply, so the next apply names
// nobody. The plan and the apply drain the broker the user named, not the
// default choice.
func TestAbandonedDrainKeepsItsNamedBroker(t *testing.T) {
	r := newRig(t, 6, 24)
	op := &executor.Operation{Key: scaleReq(5).Key, ID: "op-named", Kind: executor.KindScaleIn, Phase: executor.PhaseAbandoned,
		TargetBrokerCount: 5, RemoveBrokers: []int32{2}, Options: scaleReq(5).Options,
		LastError: "operation op-named stopped: 1 partition(s) changed outside kafkascale"}
	if err := r.store.Save(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	snap, _ := r.f.Snapshot(context.Background())
	def, err := executor.PreviewScale(snap, 5, nil, scaleReq(5).Options)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(def.RemoveBrokers, []int32{2}) {
		t.Fatalf("the default choice is %v; the test needs it to differ from broker 2", def.RemoveBrokers)
	}
	pv, err := executor.PreviewScaleFrom(snap, op, 5, nil, executor.BalanceNone, scaleReq(5).Options)
	if err != nil || !slices.Equal(pv.RemoveBrokers, []int32{2}) {
		t.Fatalf("the plan after the abandon removes %v (%v); want broker 2, which the paused apply named", pv.RemoveBrokers, err)
	}
	next, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, next)
	if !slices.Equal(next.RemoveBrokers, []int32{2}) {
		t.Fatalf("the next apply removed %v; want broker 2", next.RemoveBrokers)
	}
}

// backgroundScaler is a platform that carries a request for more brokers
// out after the apply that asked for it has stopped waiting, as the HTTP
// scaling API does: ScaleTo for more brokers times out with the request
// still running, and its brokers arrive when AwaitIdle waits for it.
type backgroundScaler struct {
	*fakeScaler
	pending int
}

func (s *backgroundScaler) ScaleTo(ctx context.Context, n int, remove []int32) error {
	bs, _ := s.f.Brokers(ctx)
	if len(remove) == 0 && n > len(bs) {
		s.pending = n
		return fmt.Errorf("stopped waiting for the scaling operation to %d brokers; it may still be running on the platform: %w", n, context.DeadlineExceeded)
	}
	return s.fakeScaler.ScaleTo(ctx, n, remove)
}

func (s *backgroundScaler) AwaitIdle(ctx context.Context) error {
	if n := s.pending; n > 0 {
		s.pending = 0
		return s.fakeScaler.ScaleTo(ctx, n, nil)
	}
	return nil
}

// A scale-out 3→4 cut by its timeout while the platform still adds the
// broker, then reverted to 3 (soak seed 22): the revert waits for the
// platform's request to end and drains and removes the broker it added,
// so that it ends at 3 brokers. Before, it rebalanced the three, and the
// fourth registered once the apply had said 3.
func TestRevertWaitsForThePlatformsBrokerAndRemovesIt(t *testing.T) {
	ctx := context.Background()
	r, sc, ex, op := stoppedWhileAdding(t)

	snap, _ := r.f.Snapshot(ctx)
	pv, err := executor.PreviewScaleFrom(snap, op, 3, nil, executor.BalanceNone, scaleReq(3).Options)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Cancels == nil || !pv.Cancels.AddingBrokers || !strings.Contains(pv.Cancels.String(), "waits for that request to end") {
		t.Fatalf("the plan of the revert says %v; want the cancel to say it waits for the platform", pv.Cancels)
	}

	back, err := ex.Scale(ctx, scaleReq(3))
	if err != nil {
		t.Fatal(err)
	}
	if sc.pending > 0 {
		t.Fatalf("the revert returned while the platform was still adding brokers for %d", sc.pending)
	}
	if back.Kind != executor.KindScaleIn || !slices.Equal(back.RemoveBrokers, []int32{4}) {
		t.Fatalf("the revert ran %s removing %v; want a scale-in removing broker 4, the one the platform added", back.Kind, back.RemoveBrokers)
	}
	r.assertAtTarget(t, back)
	bs, _ := r.f.Brokers(ctx)
	var up []int32
	for _, b := range bs {
		if !b.Fenced {
			up = append(up, b.ID)
		}
	}
	if !slices.Equal(up, []int32{1, 2, 3}) {
		t.Fatalf("after the revert brokers %v are up; want [1 2 3]", up)
	}
	if last := sc.calls[len(sc.calls)-1]; last != "3 [4]" {
		t.Fatalf("the platform was last asked %q; want \"3 [4]\" (calls %v)", last, sc.calls)
	}
}

// A scale-out paused by max_apply_duration, one of whose partitions still
// to move is changed while it is stopped (by an operation of another
// resource: soak seeds 21 and 22), is resumed by the next apply, which
// finds its plan out of date. That apply plans anew from the cluster and
// completes, where it used to give up and ask for one more apply.
func TestResumedOperationWithAnOutOfDatePlanIsPlannedAnew(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 3, 24)
	paused := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock},
		executor.Settings{PollInterval: time.Second, MaxRunDuration: time.Nanosecond})
	op, err := paused.Scale(ctx, scaleReq(5))
	if err != nil || !op.Paused() {
		t.Fatalf("scale-out: %v; want it paused", err)
	}
	started := map[int]bool{}
	for _, k := range op.Started {
		started[k] = true
	}
	explained := map[string]bool{}
	for _, m := range op.Plan.Moves() {
		for _, l := range [][]int32{m.OldReplicas, m.NewReplicas} {
			explained[fmt.Sprint(m.Topic, m.Partition, slices.Sorted(slices.Values(l)))] = true
		}
	}
	changed := ""
	r.f.mu.Lock()
	for k, m := range op.Plan.Moves() {
		p := r.f.parts[key(m.Topic, m.Partition)]
		if started[k] || p.target != nil || changed != "" {
			continue
		}
		for _, b := range []int32{1, 2, 3, 4, 5} {
			l := []int32{p.replicas[1], p.replicas[2], b}
			if !slices.Contains(p.replicas, b) && !explained[fmt.Sprint(m.Topic, m.Partition, slices.Sorted(slices.Values(l)))] {
				changed = fmt.Sprintf("%s p%d %v -> %v", m.Topic, m.Partition, p.replicas, l)
				p.replicas, p.isr = l, slices.Clone(l)
				break
			}
		}
	}
	r.f.mu.Unlock()
	if changed == "" {
		t.Fatal("every partition the plan moves was started: nothing to change")
	}

	req := scaleReq(5)
	req.ID = "op-5-again"
	done, err := r.ex.Scale(ctx, req)
	if err != nil {
		t.Fatalf("the apply after %s: %v; want it to plan anew and complete", changed, err)
	}
	if done.ID != req.ID {
		t.Fatalf("the apply after %s ran operation %s; want a new one, %s", changed, done.ID, req.ID)
	}
	r.assertAtTarget(t, done)
	// The operation it gave up on stopped as abandoned; it was not
	// cancelled on top, for a reason that is not true.
	if hist, _ := r.store.Load(ctx, executor.HistoryKey(op)); hist != nil && hist.Phase != executor.PhaseAbandoned {
		t.Fatalf("operation %s is recorded %s (%s); want it left abandoned", op.ID, hist.Phase, hist.LastError)
	}
}

// addingSettings are the executor settings of the tests of a scale-out
// stopped while adding brokers.
var addingSettings = executor.Settings{PollInterval: time.Second, MinThrottle: 1 << 20, MaxThrottle: 100 << 20}

// stoppedWhileAdding is a rig whose scale-out 3→4 stopped, cut by its
// timeout, while the platform still adds the broker (backgroundScaler),
// with that executor and operation.
func stoppedWhileAdding(t *testing.T) (*rig, *backgroundScaler, *executor.Executor, *executor.Operation) {
	t.Helper()
	r := newRig(t, 3, 12)
	sc := &backgroundScaler{fakeScaler: r.sc}
	ex := executor.New(executor.Deps{Kafka: r.f, Scaler: sc, Store: r.store, Clock: r.clock}, addingSettings)
	op, err := ex.Scale(context.Background(), scaleReq(4))
	if err == nil || op == nil || op.Phase != executor.PhaseAddBrokers {
		t.Fatalf("scale-out: %v, %+v; want it stopped while adding brokers", err, op)
	}
	return r, sc, ex, op
}

// startingScaler is a platform whose broker started by an earlier request
// registered fenced, as a starting broker does, and comes up once asked
// again.
type startingScaler struct {
	*fakeScaler
	starting int32
}

func (s *startingScaler) ScaleTo(ctx context.Context, n int, remove []int32) error {
	s.f.mu.Lock()
	if b := s.f.brokers[s.starting]; b != nil {
		b.fenced = false
	}
	s.f.mu.Unlock()
	return s.fakeScaler.ScaleTo(ctx, n, remove)
}

// A scale-out cut by its timeout while the platform starts the new broker,
// applied again at the same count (soak seed 27: a replacement, whose
// revert heads for the same count): the new broker is registered and
// still fenced, starting. The pre-check took it for a broken broker and
// refused; the broker is the operation's own, and the resume waits for it.
func TestResumeWhileTheAddedBrokerStartsIsNotRefused(t *testing.T) {
	ctx := context.Background()
	r, _, _, op := stoppedWhileAdding(t)
	r.f.mu.Lock()
	r.f.brokers[4] = &fakeBroker{id: 4, rack: "a", capacity: 1 << 40, fenced: true}
	r.f.mu.Unlock()

	again := executor.New(executor.Deps{Kafka: r.f, Scaler: &startingScaler{fakeScaler: r.sc, starting: 4}, Store: r.store, Clock: r.clock}, addingSettings)
	done, err := again.Scale(ctx, scaleReq(4))
	if err != nil {
		t.Fatalf("the resume with the operation's own broker starting: %v", err)
	}
	if done.ID != op.ID {
		t.Fatalf("ran operation %s; want %s resumed", done.ID, op.ID)
	}
	r.assertAtTarget(t, done)
}

// A fenced broker that is not the operation's own still blocks it.
func TestResumeWithAnotherBrokerFencedIsRefused(t *testing.T) {
	ctx := context.Background()
	r, _, ex, _ := stoppedWhileAdding(t)
	r.f.mu.Lock()
	r.f.brokers[2].fenced = true
	r.f.mu.Unlock()
	_, err := ex.Scale(ctx, scaleReq(4))
	var pc *executor.PreCheckError
	if !errors.As(err, &pc) || !strings.Contains(err.Error(), "broker 2 is fenced") {
		t.Fatalf("resume with broker 2 fenced: %v; want the pre-check to refuse it", err)
	}
}
