package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// PreCheckError lists everything that blocks a new operation.
type PreCheckError struct {
	Blockers []string
}

func (e *PreCheckError) Error() string {
	return fmt.Sprintf("the cluster is not ready for a scaling operation (%d problem(s)); nothing was changed: %s",
		len(e.Blockers), strings.Join(firstN(e.Blockers, 15), "; "))
}

// PreCheck refuses to start when a broker is fenced, a partition is offline
// or under-replicated, or a reassignment that no kafkascale operation
// started is under way. ours is the operation being resumed, if any: its
// own in-flight moves are expected, and so are the brokers it is adding,
// fenced while they start. leaving are the brokers the operation
// removes: their being fenced, and partitions under-replicated only because
// they dropped out of the ISR, are what the operation heals, so they do not
// block it.
//
// Moves in flight of another unfinished kafkascale operation (one whose
// apply was interrupted and left its reassignments to Kafka) are waited
// for instead, within ctx: Kafka finishes them without their operation,
// and a plan made while they run would count their replicas twice. Their
// operation finds them done when it resumes.
func (e *Executor) PreCheck(ctx context.Context, ours *Operation, leaving []int32) error {
	// Read once: the caller holds the lease, so no run of those
	// operations changes their record while this waits.
	others, err := e.othersInFlight(ctx, ours)
	if err != nil {
		return err
	}
	logged := false
	for {
		st, err := e.observe(ctx)
		if err != nil {
			return err
		}
		waiting, err := preCheck(st, ours, leaving, others)
		if err != nil || len(waiting) == 0 {
			return err
		}
		if !logged {
			e.d.Log.Info(ctx, "waiting for the moves in flight of another unfinished operation to finish before starting", map[string]any{
				"partitions": strings.Join(firstN(waiting, 10), "; "), "count": len(waiting)})
			logged = true
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
			return fmt.Errorf("nothing was changed: %d partition(s) were still being moved by another unfinished kafkascale operation when the apply's time ran out (%s); "+
				"apply the resource that owns it again to finish or revert it, or apply this one again once they are done: %w",
				len(waiting), strings.Join(firstN(waiting, 10), "; "), err)
		}
	}
}

// othersInFlight names, per partition, the unfinished operation other than
// ours whose record says it may have a move of that partition in flight.
func (e *Executor) othersInFlight(ctx context.Context, ours *Operation) (map[partKey]string, error) {
	running, err := e.unfinished(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the unfinished operations before the pre-check: %w", err)
	}
	out := map[partKey]string{}
	for _, op := range running {
		if ours != nil && op.Key == ours.Key {
			continue
		}
		for _, m := range op.openMoves() {
			out[partKey{m.Topic, m.Partition}] = fmt.Sprintf("operation %s (%s, stored under %s)", op.ID, op.Kind, op.Key)
		}
	}
	return out, nil
}

// preCheck returns the blockers as a PreCheckError, or else the partitions
// that other unfinished operations are moving (others), each with the
// operation that moves it: what PreCheck waits for.
func preCheck(st clusterState, ours *Operation, leaving []int32, others map[partKey]string) ([]string, error) {
	oursInFlight := map[partKey]bool{}
	if ours != nil {
		for _, m := range ours.openMoves() {
			oursInFlight[partKey{m.Topic, m.Partition}] = true
		}
	}
	if ours != nil {
		leaving = union(leaving, ours.RemoveBrokers)
	}
	var blockers []string
	for _, b := range st.brokers {
		if b.Fenced && !contains(leaving, b.ID) && !ours.starting(b.ID) {
			blockers = append(blockers, fmt.Sprintf("broker %d is fenced (not running or not caught up with the controller)", b.ID))
		}
	}
	var parts, waiting []string
	for k, p := range st.parts {
		switch {
		case p.Leader < 0:
			parts = append(parts, fmt.Sprintf("%s p%d is offline: no leader among replicas %v", k.topic, k.part, p.Replicas))
		case oursInFlight[k]:
		case !onlyLeavingOut(p, st.reass[k], leaving):
			parts = append(parts, fmt.Sprintf("%s p%d is under-replicated: replicas %v, in sync %v", k.topic, k.part, p.Replicas, p.ISR))
		}
	}
	for k, r := range st.reass {
		switch {
		case oursInFlight[k]:
		case others[k] != "":
			waiting = append(waiting, fmt.Sprintf("%s p%d is being moved by %s (adding %v, removing %v)", k.topic, k.part, others[k], r.Adding, r.Removing))
		default:
			parts = append(parts, fmt.Sprintf("%s p%d is being reassigned by another tool (adding %v, removing %v)", k.topic, k.part, r.Adding, r.Removing))
		}
	}
	sort.Strings(parts)
	sort.Strings(waiting)
	blockers = append(blockers, parts...)
	if len(blockers) > 0 {
		return nil, &PreCheckError{Blockers: blockers}
	}
	return waiting, nil
}

// starting reports whether broker is one that op, stopped while adding
// brokers, asked the platform for: registered and still fenced, it is
// starting, and the resume waits for it (a nil op starts none).
func (op *Operation) starting(broker int32) bool {
	return op != nil && op.Phase == PhaseAddBrokers && len(op.BrokersBefore) > 0 && !contains(op.BrokersBefore, broker)
}

// onlyLeavingOut reports whether every replica of p missing from its ISR is
// on a leaving broker or, while p is reassigned (r not nil), one the
// reassignment is adding: that one joins the ISR as it catches up.
func onlyLeavingOut(p *PartitionStatus, r *Reassignment, leaving []int32) bool {
	for _, b := range p.Replicas {
		if !contains(p.ISR, b) && !contains(leaving, b) && (r == nil || !contains(r.Adding, b)) {
			return false
		}
	}
	return true
}

// ScaleRequest asks for a broker count.
type ScaleRequest struct {
	// Key names the operation in the store: one key per cluster resource.
	Key string
	// ID is the new operation's id, should one be started.
	ID                string
	TargetBrokerCount int
	// RemoveBrokers picks the brokers that leave on a scale-in, or, with an
	// unchanged count, the brokers to replace; empty means the engine's
	// default choice (engine.ChooseLeaving).
	RemoveBrokers   []int32
	Options         engine.Options
	InitialThrottle int64
	// Resource names the Terraform resource in the operation lease.
	Resource string
	// Balance is what is rebalanced in place when the count stays, no
	// broker is named and it is out of balance (PreviewRebalance).
	Balance Balance
	// ScalingMethod names the platform's method ("http", "command", ...):
	// broker timings are measured and used per method.
	ScalingMethod string
}

// Scale brings the cluster to req.TargetBrokerCount. An unfinished operation
// under the same key that heads for the same count is resumed to
// completion. One that heads elsewhere is cancelled (see cancel), and the
// new operation plans from what it left; a lower count then drains the
// brokers the cancelled one added. A cluster kept balanced (BalanceAll)
// that is out of balance once the change completes is rebalanced in
// place in the same run (keepBalanced). It returns the operation that
// ran last, except that such a rebalance, once completed, leaves the
// change's operation returned (nil when the cluster already had the count
// and nothing was pending); a run that spends Settings.MaxRunDuration
// returns the operation it paused (Paused) and no error.
func (e *Executor) Scale(ctx context.Context, req ScaleRequest) (op *Operation, err error) {
	defer e.clearLeftThrottles(ctx, &err)
	if req.TargetBrokerCount < 1 {
		return nil, fmt.Errorf("broker count %d: it must be at least 1", req.TargetBrokerCount)
	}
	if err := e.ensureStore(ctx); err != nil {
		return nil, err
	}
	// Nothing to do needs no lease: an apply that changes nothing (an
	// import, a change of settings only) neither waits nor writes, so a
	// principal that may only read can run it.
	// A replacement (named brokers, same count) always has work to do.
	// So does a cluster that a stopped operation left balanced after all,
	// and brokers named again that the last operation already removed.
	if prev, err := e.d.Store.Load(ctx, req.Key); err == nil && (prev == nil || prev.Done()) && req.Balance == BalanceNone {
		if bs, err := e.d.Kafka.Brokers(ctx); err == nil && len(bs) == req.TargetBrokerCount &&
			alreadyRemoved(prev, bs, req.RemoveBrokers) && !e.owesImbalance(ctx, prev, req.Options) {
			return prev, nil
		}
	}
	w := Work{Key: req.Key, ID: req.ID, Resource: req.Resource, What: fmt.Sprintf("bring the cluster to %d brokers", req.TargetBrokerCount)}
	err = e.Exclusive(ctx, w, func(ctx context.Context) error {
		before, err := e.d.Store.Load(ctx, req.Key)
		if err != nil {
			return err
		}
		op, err = e.scale(ctx, req)
		if errors.Is(err, errStrayReplicas) && op != nil && op.Phase == PhaseAbandoned {
			// Planned anew once, from the cluster with the replicas that
			// landed on the leaving brokers: it drains those brokers
			// again (leavingAfterAbandon) and removes them.
			anew := req
			anew.ID = req.ID + "-anew"
			op, err = e.scale(ctx, anew)
		}
		if err == nil {
			op, err = e.keepBalanced(ctx, req, before, op)
		}
		return err
	})
	return op, err
}

// keepBalanced ends an operation this apply completed on a cluster kept
// balanced (BalanceAll), a change of broker count above all, with a
// rebalance in place, in the same apply, when the cluster is out of
// balance once it has completed. The change
// evened the bytes it planned with, but what producers write while it runs
// lands where their partitions are: in the soak, some 19 MB over a
// 222 s scale-in that planned to move 33 MB, and the plan right after
// such applies asked for a rebalance (seed 22 step 24, one broker 17.9%
// from its share; seed 23 step 27, 17.6%). Whether the writes or a plan
// that fell short explain those is not settled; this covers both. The
// same holds after a rebalance in place that this apply ran or resumed:
// a demotion (leaders only) resumed by an apply that now keeps everything
// balanced left the bytes as they were (seed 23 step 34, 28.6%). A
// rebalance of everything that reached the balance plans nothing more
// (PreviewRebalance). before is the operation under the key before this
// apply: one already done then ran nothing now. It returns op unless the
// rebalance stopped short.
func (e *Executor) keepBalanced(ctx context.Context, req ScaleRequest, before, op *Operation) (*Operation, error) {
	if req.Balance != BalanceAll || op == nil || op.Phase != PhaseCompleted ||
		before != nil && before.ID == op.ID && before.Done() {
		return op, nil
	}
	// A failure before the rebalance starts leaves the change standing,
	// and the next plan shows the imbalance as it would have: it is
	// logged, not returned.
	brokers, err := e.d.Kafka.Brokers(ctx)
	if err != nil {
		e.d.Log.Warn(ctx, "could not check the balance after the change; the next plan does", map[string]any{"operation": op.ID, "error": err.Error()})
		return op, nil //nolint:nilerr // the change completed; see above
	}
	r := req
	r.ID = req.ID + "-balance"
	bal, err := e.rebalance(ctx, r, BalanceAll, brokers, op)
	switch {
	case bal == nil && err != nil:
		e.d.Log.Warn(ctx, "could not plan the rebalance after the change; the next plan does", map[string]any{"operation": op.ID, "error": err.Error()})
		return op, nil //nolint:nilerr // nothing was started; see above
	case err != nil || bal != nil && bal.Paused():
		return bal, err
	}
	return op, nil
}

// alreadyRemoved reports whether every broker in named was removed by
// prev, completed, and is no longer registered: an apply whose operation
// completed but which still returned an error (the record of the error
// failed after the completion was saved, say) leaves Terraform's state
// naming them, and the next apply must find nothing to do rather than
// refuse them as unregistered for good.
func alreadyRemoved(prev *Operation, registered []BrokerStatus, named []int32) bool {
	for _, id := range named {
		if prev == nil || prev.Phase != PhaseCompleted || !contains(prev.RemoveBrokers, id) ||
			slices.ContainsFunc(registered, func(b BrokerStatus) bool { return b.ID == id }) {
			return false
		}
	}
	return true
}

// owesImbalance reports whether prev owes a rebalance that c needs
// (OwedImbalance), read without the lease; a read that fails says yes, and
// the lease's path reads again.
func (e *Executor) owesImbalance(ctx context.Context, prev *Operation, opts engine.Options) bool {
	if !prev.OwesBalance() {
		return false
	}
	snap, err := e.d.Kafka.Snapshot(ctx)
	if err != nil {
		return true
	}
	owed, err := OwedImbalance(snap, prev, opts)
	return err != nil || owed != ""
}

func (e *Executor) scale(ctx context.Context, req ScaleRequest) (*Operation, error) {
	prev, err := e.d.Store.Load(ctx, req.Key)
	if err != nil {
		return nil, err
	}
	var cancelled *Cancellation
	if prev != nil && !prev.Done() {
		final, c, err := e.settlePrevious(ctx, prev, req)
		if final || err != nil {
			return prev, err
		}
		cancelled = c
	}

	brokers, err := e.d.Kafka.Brokers(ctx)
	if err != nil {
		return nil, err
	}
	current := len(brokers)
	remove := leavingAfterCancel(cancelled, current, req.TargetBrokerCount, req.RemoveBrokers)
	if cancelled == nil {
		remove = leavingAfterAbandon(prev, statusIDs(brokers), req.TargetBrokerCount, remove)
	}
	if alreadyRemoved(prev, brokers, remove) {
		// Named again after an apply that removed them but returned an
		// error (Scale's shortcut takes this case when nothing is kept
		// balanced).
		remove = nil
	}
	if current == req.TargetBrokerCount && len(remove) == 0 {
		// A revert (the count the cancelled operation started from) puts
		// back what it moved, and a stopped operation's layout is
		// finished, by the same rebalance a resource kept balanced runs.
		if b, ok := inPlace(req.Balance, prev.OwesBalance()); ok {
			if op, err := e.rebalance(ctx, req, b, brokers, prev); op != nil || err != nil {
				return op, err
			}
		}
		if !engine.SameMembers(prev.demoted(), req.Options.DemotedBrokers) {
			return e.recordDemotion(ctx, req, brokers, prev)
		}
		return prev, nil
	}
	snap, err := e.d.Kafka.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	leaving, err := engine.ChooseLeaving(snap, req.TargetBrokerCount, remove, req.Options)
	if err != nil {
		return nil, err
	}
	// Recorded with the operation, so that the plan made once new brokers
	// are there evens bytes as the preview did.
	opts := req.Balance.options(req.Options)
	if err := e.PreCheck(ctx, nil, leaving.Brokers); err != nil {
		return nil, err
	}

	op := &Operation{
		Key:               req.Key,
		ID:                req.ID,
		TargetBrokerCount: req.TargetBrokerCount,
		RemoveBrokers:     leaving.Brokers,
		DeadBrokers:       leaving.Dead,
		Options:           opts,
		ThrottleRate:      req.InitialThrottle,
		StartedAt:         e.d.Clock.Now().UTC(),
		ScalingMethod:     req.ScalingMethod,
		Timings:           carriedTimings(prev),
	}
	op.BrokersBefore = statusIDs(brokers)
	e.keepInHistory(ctx, prev)
	if prev != nil && prev.Phase == PhaseCancelled {
		// A broker that was down when the cancel lifted its cordon keeps
		// it recorded on the cancelled operation. When this one removes
		// it too, it takes the record over, so that the cordon is lifted
		// before the platform stops the broker if it is back by then
		// (Kafka keeps a cordon under the id). That holds as well when
		// the cancel was an earlier run's, which failed after it and
		// before this point (the simulation, seed 1161).
		var kept []int32
		for _, id := range prev.CordonedBrokers {
			if contains(leaving.Brokers, id) {
				kept = append(kept, id)
			}
		}
		op.CordonedBrokers = kept
	}

	if req.TargetBrokerCount > current || leaving.Replace {
		// Plan once with predicted brokers before asking for real ones:
		// a change that cannot be planned must not add a broker first.
		if _, err := PreviewScale(snap, req.TargetBrokerCount, leaving.Brokers, opts); err != nil {
			return nil, fmt.Errorf("planning the change to %d brokers: %w", req.TargetBrokerCount, err)
		}
		op.Kind = KindScaleOut
		if leaving.Replace {
			op.Kind = KindReplace
		}
		op.Phase = PhaseAddBrokers
		if err := e.save(ctx, op); err != nil {
			return nil, err
		}
		return op, e.Resume(ctx, op)
	}

	op.Kind = KindScaleIn
	plan, err := engine.PlanReassignment(snap, engine.Change{RemoveBrokers: leaving.Brokers}, opts)
	if err != nil {
		return nil, fmt.Errorf("planning the drain of brokers %v: %w", leaving.Brokers, err)
	}
	op.Plan = plan
	op.Phase = PhaseReassign
	e.estimate(ctx, op)
	e.d.Log.Info(ctx, "planned drain", planFields(op))
	if err := e.save(ctx, op); err != nil {
		return nil, err
	}
	return op, e.Resume(ctx, op)
}

// settlePrevious deals with prev, the key's unfinished operation, before
// scale plans a new one. When the configuration still heads for prev's
// broker count and none of the brokers it drains went down, prev resumes,
// and final says its outcome (done, paused or failed, in prev and err) is
// scale's answer. Otherwise prev is cancelled (the Cancellation), or it
// was abandoned by its resume for an out-of-date plan (neither), and scale
// plans anew.
func (e *Executor) settlePrevious(ctx context.Context, prev *Operation, req ScaleRequest) (final bool, cancelled *Cancellation, err error) {
	var died []int32
	if headsForCount(prev, req.TargetBrokerCount, req.RemoveBrokers) && !demotionChanged(prev, req.Options) {
		bs, err := e.d.Kafka.Brokers(ctx)
		if err != nil {
			return true, nil, err
		}
		up := unfenced(bs)
		if died = diedLeaving(prev, func(id int32) bool { return contains(up, id) }); len(died) == 0 {
			e.d.Log.Info(ctx, "resuming interrupted operation", map[string]any{
				"operation": prev.ID, "kind": string(prev.Kind), "phase": string(prev.Phase),
				"group": prev.Group, "last_error": prev.LastError,
			})
			if err := e.PreCheck(ctx, prev, nil); err != nil {
				return true, nil, err
			}
			err := e.Resume(ctx, prev)
			var conflict *ConflictError
			if !errors.As(err, &conflict) || prev.Phase != PhaseAbandoned {
				return true, nil, err
			}
			// Partitions it had still to move were changed while it
			// was stopped (by an operation of another resource, in
			// another working directory, say), so its plan is out of
			// date and it gave up. The next apply would plan anew
			// from the cluster as it is; this one does, rather than
			// fail and ask for another apply. Found by the soak
			// (seeds 21 and 22).
			e.d.Log.Warn(ctx, "the resumed operation's plan was out of date; planning anew from the cluster", map[string]any{
				"operation": prev.ID, "conflicts": fmt.Sprint(firstN(conflict.Conflicts, 10))})
		}
	}
	// The configuration asks for something else: finishing the old
	// operation first would move data only to move it back. Or a
	// broker it drains went down (diedLeaving). One that was abandoned
	// just now (above) has stopped already: it is not cancelled, and
	// scale's new plan takes the brokers it named (leavingAfterAbandon).
	if !prev.Done() {
		why := fmt.Sprintf("the configuration asks for %d brokers", req.TargetBrokerCount)
		if demotionChanged(prev, req.Options) {
			why = fmt.Sprintf("the configuration demotes brokers %v, not %v", req.Options.DemotedBrokers, prev.Options.DemotedBrokers)
		}
		if len(died) > 0 {
			why = fmt.Sprintf("brokers %v, which it drains, went down during it", died)
			e.d.Log.Warn(ctx, "leaving brokers went down during the drain: it is cancelled and planned again with them dead", map[string]any{
				"operation": prev.ID, "brokers": fmt.Sprint(died)})
		}
		cancelled, err := e.cancel(ctx, prev, why)
		if err != nil {
			return true, nil, err
		}
		cancelled.DiedLeaving = died
		return false, cancelled, nil
	}
	return false, nil, nil
}

// RunPlan executes a ready plan (a replication-factor change, say) under
// key, resuming an unfinished operation of the same key first. A run that
// spends Settings.MaxRunDuration returns the paused operation (Paused)
// and no error.
func (e *Executor) RunPlan(ctx context.Context, key, id string, kind Kind, plan *engine.Plan, throttle int64) (op *Operation, err error) {
	err = e.Exclusive(ctx, Work{Key: key, ID: id, What: string(kind)}, func(ctx context.Context) error {
		op, err = e.runPlan(ctx, key, id, kind, plan, throttle)
		return err
	})
	return op, err
}

func (e *Executor) runPlan(ctx context.Context, key, id string, kind Kind, plan *engine.Plan, throttle int64) (*Operation, error) {
	prev, err := e.d.Store.Load(ctx, key)
	if err != nil {
		return nil, err
	}
	if prev != nil && !prev.Done() {
		if err := e.PreCheck(ctx, prev, nil); err != nil {
			return prev, err
		}
		if err := e.Resume(ctx, prev); err != nil || prev.Paused() {
			return prev, err
		}
	}
	if len(plan.Moves()) == 0 && len(plan.Reorders) == 0 {
		return prev, nil
	}
	if err := e.PreCheck(ctx, nil, nil); err != nil {
		return nil, err
	}
	op := &Operation{Key: key, ID: id, Kind: kind, Phase: PhaseReassign, Plan: plan, ThrottleRate: throttle, StartedAt: e.d.Clock.Now().UTC(),
		Timings: carriedTimings(prev)}
	e.keepInHistory(ctx, prev)
	e.estimate(ctx, op)
	if err := e.save(ctx, op); err != nil {
		return nil, err
	}
	return op, e.Resume(ctx, op)
}

// carriedTimings are the timings a new operation starts with: the last
// ones measured under its key.
func carriedTimings(prev *Operation) engine.Timings {
	if prev == nil {
		return engine.Timings{}
	}
	return prev.Timings
}

// Work names what an Exclusive call does, for the operation lease.
type Work struct {
	// Key is the operation's key in the store, if it has one: an
	// unfinished operation there is what the work resumes, so the lease
	// is claimed in its name and a dead holder of it is taken over at once.
	Key string
	// ID is the id of the operation the work would start.
	ID       string
	Resource string
	What     string
}

// Exclusive runs fn under the cluster's operation lease: every path that
// changes the cluster (throttles, reassignments, brokers, partitions) goes
// through it before it changes anything, and a plan it runs is made under
// it too, so no other operation moves partitions in between. It is
// reentrant on one Executor: a call inside fn runs at once. Without a
// Lease in Deps it only runs fn.
func (e *Executor) Exclusive(ctx context.Context, w Work, fn func(ctx context.Context) error) error {
	if e.d.Lease == nil || e.held != nil {
		return fn(ctx)
	}
	id := w.ID
	if w.Key != "" && e.d.Store != nil {
		prev, err := e.d.Store.Load(ctx, w.Key)
		if err != nil {
			return err
		}
		if prev != nil && !prev.Done() {
			id = prev.ID
		}
	}
	return e.d.Lease.Hold(ctx, LeaseWork{Operation: id, Resource: w.Resource, What: w.What}, func(ctx context.Context, h *Held) error {
		// What another operation holds is read afresh under each lease.
		e.held, e.othersCordon = h, nil
		defer func() { e.held = nil }()
		return fn(ctx)
	})
}

// statusIDs are the ids of registered brokers, in the order given.
func statusIDs(bs []BrokerStatus) []int32 {
	out := make([]int32, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.ID)
	}
	return out
}

// demotionChanged says whether prev is a rebalance in place planned for
// other demoted brokers than opts names. Its reorders lead away from (or
// back onto) brokers the configuration no longer demotes, so it is
// cancelled rather than resumed: a revert of a demotion cut short by its
// timeout finished the demotion, and the plan right after asked for 39
// reorders to undo it (the soak, seed 23 step 37).
func demotionChanged(prev *Operation, opts engine.Options) bool {
	return prev.Kind == KindRebalance && !engine.SameMembers(prev.Options.DemotedBrokers, opts.DemotedBrokers)
}
