package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// Deps are the ports an Executor drives.
type Deps struct {
	Kafka Kafka
	// Scaler is needed only by operations that add or remove brokers.
	Scaler Scaler
	Store  Store
	// Advisor adjusts the throttle; nil keeps the initial rate.
	Advisor RateAdvisor
	Clock   Clock
	Log     Logger
	// Lease keeps operations on one cluster from overlapping; every entry
	// point that changes the cluster runs under it (see Exclusive). Nil
	// runs without it (tests of a single executor).
	Lease *Lessee
}

// Settings tune how the executor waits.
type Settings struct {
	// PollInterval is how often a running group is checked (default 1s).
	PollInterval time.Duration
	// AdjustInterval is how often the Advisor is asked (default 30s).
	AdjustInterval time.Duration
	// MinThrottle and MaxThrottle bound any rate the Advisor proposes.
	MinThrottle, MaxThrottle int64
}

// Executor runs operations. It is not safe for concurrent use on the same
// operation key; Terraform applies one resource instance at a time.
type Executor struct {
	d Deps
	s Settings
	// held is the lease this executor holds while inside Exclusive.
	held *Held
}

// New returns an Executor; missing Clock and Log default to the system clock
// and silence.
func New(d Deps, s Settings) *Executor {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.Log == nil {
		d.Log = nopLogger{}
	}
	if s.PollInterval <= 0 {
		s.PollInterval = time.Second
	}
	if s.AdjustInterval <= 0 {
		s.AdjustInterval = 30 * time.Second
	}
	return &Executor{d: d, s: s}
}

// Resume drives op from its phase to completion, saving it after every
// change of state. When ctx ends it submits nothing more and returns with
// the saved state truthful: the next Resume continues from there.
func (e *Executor) Resume(ctx context.Context, op *Operation) (err error) {
	defer func() {
		if err != nil {
			e.recordError(ctx, op, err)
		}
	}()
	for !op.Done() {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		switch op.Phase {
		case PhaseAddBrokers:
			err = e.addBrokers(ctx, op)
		case PhaseReassign:
			err = e.reassign(ctx, op)
		case PhaseFinish:
			err = e.finish(ctx, op)
		case PhaseRemoveBrokers:
			err = e.removeBrokers(ctx, op)
		default:
			return fmt.Errorf("operation %s is in unknown phase %q; this is a bug in kafkascale", op.ID, op.Phase)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recordError saves why the run stopped, even when ctx has ended, so the
// next apply can tell the user.
func (e *Executor) recordError(ctx context.Context, op *Operation, err error) {
	op.LastError = err.Error()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if serr := e.save(sctx, op); serr != nil {
		e.d.Log.Warn(ctx, "could not record the operation's error", map[string]any{"operation": op.ID, "error": serr.Error()})
	}
}

func (e *Executor) save(ctx context.Context, op *Operation) error {
	op.UpdatedAt = e.d.Clock.Now().UTC()
	if e.held != nil {
		e.held.SetOperation(op.ID)
	}
	if err := e.d.Store.Save(ctx, op); err != nil {
		return fmt.Errorf("saving the progress of operation %s: %w", op.ID, err)
	}
	return nil
}

func (e *Executor) enter(ctx context.Context, op *Operation, p Phase) error {
	op.Phase = p
	op.StepsSubmitted = 0
	if p == PhaseCompleted {
		op.CompletedAt = e.d.Clock.Now().UTC()
		op.LastError = ""
	}
	e.d.Log.Info(ctx, "operation phase", map[string]any{"operation": op.ID, "kind": string(op.Kind), "phase": string(p)})
	return e.save(ctx, op)
}

// addBrokers asks the platform for the target count, waits for the new
// brokers to register unfenced, then plans the reassignment onto them.
//
// A replacement asks for the same count with the leaving brokers named: the
// platform starts as many new brokers (in their racks), or brings a dead
// broker back under its own id with an empty disk, as a Kubernetes
// StatefulSet does. In that case Kafka re-replicates onto it by itself, and
// the operation only waits for the ISR to fill.
func (e *Executor) addBrokers(ctx context.Context, op *Operation) error {
	if e.d.Scaler == nil {
		return errors.New("adding brokers needs a scaling method; none is configured")
	}
	replace := op.Kind == KindReplace
	want, what := op.TargetBrokerCount, fmt.Sprintf("%d brokers registered and unfenced", op.TargetBrokerCount)
	arrived := func(bs []BrokerStatus) bool {
		return len(unfenced(bs)) == op.TargetBrokerCount && len(bs) == op.TargetBrokerCount
	}
	var remove []int32
	if replace {
		want += len(op.RemoveBrokers)
		remove = op.RemoveBrokers
		what = fmt.Sprintf("%d new brokers to replace %v, or %v back", len(op.RemoveBrokers), op.RemoveBrokers, op.DeadBrokers)
		arrived = func(bs []BrokerStatus) bool {
			return len(newBrokers(bs, op.BrokersBefore)) >= len(op.RemoveBrokers) || reused(bs, op) != nil
		}
	}
	// Once they are there, the same replacement request would ask the
	// platform to remove the leaving brokers: a resumed run must not send
	// it again before the drain.
	bs, err := e.d.Kafka.Brokers(ctx)
	if err != nil {
		return err
	}
	if !replace || !arrived(bs) {
		ask := e.d.Scaler.ScaleTo
		if r, ok := e.d.Scaler.(Replacer); ok && replace {
			ask = r.ReplaceBrokers
		}
		if err := ask(ctx, op.TargetBrokerCount, remove); err != nil {
			return fmt.Errorf("asking the platform for %d brokers: %w", op.TargetBrokerCount, err)
		}
	}
	if err := e.waitBrokers(ctx, what, arrived); err != nil {
		return err
	}
	if replace {
		if bs, err = e.d.Kafka.Brokers(ctx); err != nil {
			return err
		}
		if back := reused(bs, op); back != nil && len(newBrokers(bs, op.BrokersBefore)) == 0 {
			e.d.Log.Info(ctx, "the platform brought the dead brokers back under their ids; Kafka re-replicates onto them",
				map[string]any{"operation": op.ID, "brokers": back})
			op.ReusedBrokers, op.RemoveBrokers = back, nil
			op.Plan = &engine.Plan{}
			return e.enter(ctx, op, PhaseFinish)
		}
	}
	// The registrations come from the controller, the snapshot's metadata
	// from a broker, which may learn of a new broker a moment later: a plan
	// made from such a snapshot would move nothing onto it.
	var snap engine.Cluster
	for attempt := 1; ; attempt++ {
		var err error
		if snap, err = e.d.Kafka.Snapshot(ctx); err != nil {
			return err
		}
		listed := 0
		for _, b := range snap.Brokers {
			if b.Alive || contains(op.DeadBrokers, b.ID) {
				listed++
			}
		}
		if listed >= want {
			break
		}
		if attempt == 60 {
			return fmt.Errorf("%d brokers are registered, but the cluster metadata still lists only %d of them (%v) after %d attempts", want, listed, ids(snap.Brokers), attempt)
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
			return err
		}
	}
	var before engine.Cluster
	var added []engine.Broker
	before.Partitions = snap.Partitions
	for _, b := range snap.Brokers {
		if contains(op.BrokersBefore, b.ID) {
			before.Brokers = append(before.Brokers, b)
		} else {
			added = append(added, b)
		}
	}
	plan, err := engine.PlanReassignment(before, engine.Change{AddBrokers: added, RemoveBrokers: op.RemoveBrokers}, op.Options)
	if err != nil {
		return fmt.Errorf("planning the reassignment onto brokers %v: %w", ids(added), err)
	}
	op.Plan = plan
	op.Group = 0
	e.d.Log.Info(ctx, "planned reassignment", planFields(op))
	return e.enter(ctx, op, PhaseReassign)
}

// reassign runs the plan's groups from op.Group on.
func (e *Executor) reassign(ctx context.Context, op *Operation) error {
	if op.Plan == nil {
		return fmt.Errorf("operation %s has no plan in phase %s; this is a bug in kafkascale", op.ID, op.Phase)
	}
	if len(op.ThrottledBrokers) == 0 {
		op.ThrottledBrokers = without(throttledBrokers(op.Plan), op.DeadBrokers)
	}
	if len(op.Plan.Groups) > op.Group && len(op.ThrottledBrokers) > 0 {
		// Re-set on every run: idempotent, and a resumed run may follow
		// a broker restart or a throttle someone removed.
		if err := e.d.Kafka.SetThrottle(ctx, op.ThrottledBrokers, op.ThrottleRate); err != nil {
			return fmt.Errorf("setting the replication throttle of %d B/s on brokers %v: %w", op.ThrottleRate, op.ThrottledBrokers, err)
		}
	}
	for op.Group < len(op.Plan.Groups) {
		if err := e.runGroup(ctx, op); err != nil {
			return err
		}
	}
	return e.enter(ctx, op, PhaseFinish)
}

// moveState is where one planned move stands in the cluster.
type moveState int

const (
	movePending  moveState = iota // not submitted: replicas are still the old ones
	moveInFlight                  // Kafka is reassigning it towards the plan
	moveDone                      // replicas are the new ones
	moveConflict                  // the partition went somewhere the plan did not send it
)

type classified struct {
	state  moveState
	reason string
}

func classify(m engine.Move, p *PartitionStatus, r *Reassignment) classified {
	switch {
	case p == nil:
		return classified{moveConflict, "the partition no longer exists"}
	case r != nil && engine.SameMembers(r.target(), m.NewReplicas):
		return classified{state: moveInFlight}
	case r != nil:
		return classified{moveConflict, fmt.Sprintf("it is being reassigned to %v by someone else; the plan sends it to %v", r.target(), m.NewReplicas)}
	case engine.SameMembers(p.Replicas, m.NewReplicas):
		return classified{state: moveDone}
	case engine.SameMembers(p.Replicas, m.OldReplicas):
		// Checked before the union: a move that only removes replicas (a
		// lower replication factor) has its old replicas as the union, and
		// calling it in flight would mean it is never submitted. A drop
		// the controller has finished but this broker's metadata does not
		// show yet reads as pending too: waitGroup waits for it, and a
		// resumed group submits it again, which the controller, already
		// at that target, takes as a no-op.
		return classified{state: movePending}
	case engine.SameMembers(p.Replicas, union(m.OldReplicas, m.NewReplicas)):
		// Metadata shows old and new replicas together while the move
		// runs, and brokers learn the end of a reassignment a moment after
		// the controller stops listing it.
		return classified{state: moveInFlight}
	default:
		return classified{moveConflict, fmt.Sprintf("its replicas are %v; the plan expected %v (before) or %v (after)", p.Replicas, m.OldReplicas, m.NewReplicas)}
	}
}

type partKey struct {
	topic string
	part  int32
}

type clusterState struct {
	parts   map[partKey]*PartitionStatus
	reass   map[partKey]*Reassignment
	brokers []BrokerStatus
}

func (e *Executor) observe(ctx context.Context) (clusterState, error) {
	st := clusterState{parts: map[partKey]*PartitionStatus{}, reass: map[partKey]*Reassignment{}}
	ps, err := e.d.Kafka.Partitions(ctx)
	if err != nil {
		return st, err
	}
	for i := range ps {
		st.parts[partKey{ps[i].Topic, ps[i].Partition}] = &ps[i]
	}
	rs, err := e.d.Kafka.Reassignments(ctx)
	if err != nil {
		return st, err
	}
	for i := range rs {
		st.reass[partKey{rs[i].Topic, rs[i].Partition}] = &rs[i]
	}
	st.brokers, err = e.d.Kafka.Brokers(ctx)
	return st, err
}

// ConflictError says that partitions of the plan were changed outside this
// operation, so the plan cannot go on safely.
type ConflictError struct {
	Operation string
	Conflicts []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("operation %s stopped: %d partition(s) changed outside kafkascale, so its plan is out of date and nothing more was submitted: %s. "+
		"Run apply again to plan anew from the cluster as it is now", e.Operation, len(e.Conflicts), strings.Join(firstN(e.Conflicts, 10), "; "))
}

// BrokerDownError says a broker the running group needs is not available.
type BrokerDownError struct {
	Broker    int32
	Group     int
	Groups    int
	Operation string
}

func (e *BrokerDownError) Error() string {
	return fmt.Sprintf("broker %d went offline during group %d/%d of operation %s; nothing more was submitted. "+
		"Reassignments already submitted stay in Kafka and finish once the broker is back; run apply again then to resume",
		e.Broker, e.Group+1, e.Groups, e.Operation)
}

func (e *Executor) runGroup(ctx context.Context, op *Operation) error {
	g := op.Plan.Groups[op.Group]
	st, err := e.observe(ctx)
	if err != nil {
		return err
	}
	if err := checkBrokersUp(st.brokers, without(groupBrokers(g), op.DeadBrokers), op); err != nil {
		return err
	}

	var pending [][]engine.Move // per step, the moves still to submit
	var conflicts []string
	var open []engine.Move // moves not done yet
	for _, s := range g.Steps {
		var stepPending []engine.Move
		for _, m := range s.Moves {
			k := partKey{m.Topic, m.Partition}
			c := classify(m, st.parts[k], st.reass[k])
			switch c.state {
			case movePending:
				stepPending = append(stepPending, m)
				open = append(open, m)
			case moveInFlight:
				open = append(open, m)
			case moveConflict:
				conflicts = append(conflicts, fmt.Sprintf("%s p%d: %s", m.Topic, m.Partition, c.reason))
			}
		}
		if len(stepPending) > 0 {
			pending = append(pending, stepPending)
		}
	}
	if len(conflicts) > 0 {
		return e.abandon(ctx, op, conflicts)
	}

	fields := groupFields(op, g)
	e.d.Log.Info(ctx, "reassignment group starting", fields)

	if ts := throttleEntries(open); len(ts) > 0 {
		added, err := e.d.Kafka.ThrottleReplicas(ctx, ts)
		if err != nil {
			return fmt.Errorf("throttling the replicas of group %d/%d: %w", op.Group+1, len(op.Plan.Groups), err)
		}
		op.ThrottledReplicas = mergeThrottles(op.ThrottledReplicas, added)
		if err := e.save(ctx, op); err != nil {
			return err
		}
	}

	for _, step := range pending {
		if err := ctx.Err(); err != nil {
			return err
		}
		as := make([]Assignment, len(step))
		for i, m := range step {
			as[i] = Assignment{Topic: m.Topic, Partition: m.Partition, Replicas: slices.Clone(m.NewReplicas)}
		}
		if err := e.d.Kafka.AlterAssignments(ctx, as); err != nil {
			return fmt.Errorf("submitting step %d of group %d/%d: %w", op.StepsSubmitted+1, op.Group+1, len(op.Plan.Groups), err)
		}
		op.StepsSubmitted++
		if err := e.save(ctx, op); err != nil {
			return err
		}
	}

	if err := e.waitGroup(ctx, op, g, open); err != nil {
		return err
	}

	if err := e.d.Kafka.UnthrottleReplicas(ctx, op.ThrottledReplicas); err != nil {
		return fmt.Errorf("removing the replica throttles of group %d/%d: %w", op.Group+1, len(op.Plan.Groups), err)
	}
	op.ThrottledReplicas = nil
	op.MovesDone += len(g.Moves())
	op.BytesDone += g.Bytes
	op.Group++
	op.StepsSubmitted = 0
	e.d.Log.Info(ctx, "reassignment group done", groupFields(op, g))
	return e.save(ctx, op)
}

// waitGroup polls until every open move of the group is done, adjusting the
// throttle on the way. It never submits anything.
func (e *Executor) waitGroup(ctx context.Context, op *Operation, g engine.Group, open []engine.Move) error {
	lastAdjust := e.d.Clock.Now()
	need := without(groupBrokers(g), op.DeadBrokers)
	for {
		st, err := e.observe(ctx)
		if err != nil {
			return err
		}
		remaining := 0
		var conflicts []string
		for _, m := range open {
			k := partKey{m.Topic, m.Partition}
			switch c := classify(m, st.parts[k], st.reass[k]); c.state {
			case moveDone:
			case moveConflict:
				conflicts = append(conflicts, fmt.Sprintf("%s p%d: %s", m.Topic, m.Partition, c.reason))
			default:
				remaining++
			}
		}
		if len(conflicts) > 0 {
			return e.abandon(ctx, op, conflicts)
		}
		if remaining == 0 {
			return nil
		}
		if err := checkBrokersUp(st.brokers, need, op); err != nil {
			return err
		}
		if e.d.Advisor != nil && e.d.Clock.Now().Sub(lastAdjust) >= e.s.AdjustInterval {
			lastAdjust = e.d.Clock.Now()
			if err := e.adjustThrottle(ctx, op); err != nil {
				return err
			}
			f := groupFields(op, g)
			f["moves_in_flight"] = remaining
			e.d.Log.Info(ctx, "reassignment progress", f)
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
			return err
		}
	}
}

// adjustThrottle asks the Advisor and applies its rate, bounded, when it
// differs by more than 10 %: smaller changes are noise and each one is a
// config write on every throttled broker.
func (e *Executor) adjustThrottle(ctx context.Context, op *Operation) error {
	next, ok, reason := e.d.Advisor.Advise(ctx, op.ThrottledBrokers, op.ThrottleRate)
	if !ok {
		e.d.Log.Info(ctx, "throttle held", map[string]any{"operation": op.ID, "throttle": op.ThrottleRate, "reason": reason})
		return nil
	}
	next = clampRate(next, e.s.MinThrottle, e.s.MaxThrottle)
	// Reaching a bound always counts: otherwise a rate one small step from
	// max_throttle (or min) would never get there.
	atBound := next != op.ThrottleRate && (next == e.s.MinThrottle || next == e.s.MaxThrottle)
	if !atBound && !significantChange(op.ThrottleRate, next) {
		return nil
	}
	if err := e.d.Kafka.SetThrottle(ctx, op.ThrottledBrokers, next); err != nil {
		return fmt.Errorf("changing the replication throttle from %d to %d B/s: %w", op.ThrottleRate, next, err)
	}
	e.d.Log.Info(ctx, "throttle changed", map[string]any{"operation": op.ID, "from": op.ThrottleRate, "to": next, "reason": reason})
	op.ThrottleRate = next
	return e.save(ctx, op)
}

func clampRate(r, lowest, highest int64) int64 {
	if lowest > 0 && r < lowest {
		r = lowest
	}
	if highest > 0 && r > highest {
		r = highest
	}
	return r
}

func significantChange(from, to int64) bool {
	if from <= 0 {
		return to > 0
	}
	d := to - from
	if d < 0 {
		d = -d
	}
	return d*10 > from
}

// abandon stops an operation whose plan no longer matches the cluster. Our
// throttles go (nothing of ours stays in flight to need them) and the next
// run plans anew.
func (e *Executor) abandon(ctx context.Context, op *Operation, conflicts []string) error {
	cerr := &ConflictError{Operation: op.ID, Conflicts: conflicts}
	if err := e.clearThrottles(ctx, op); err != nil {
		return errors.Join(cerr, err)
	}
	op.Phase = PhaseAbandoned
	op.LastError = cerr.Error()
	if err := e.save(ctx, op); err != nil {
		return errors.Join(cerr, err)
	}
	return cerr
}

func (e *Executor) clearThrottles(ctx context.Context, op *Operation) error {
	if err := e.d.Kafka.UnthrottleReplicas(ctx, op.ThrottledReplicas); err != nil {
		return fmt.Errorf("removing replica throttles: %w", err)
	}
	op.ThrottledReplicas = nil
	if err := e.d.Kafka.ClearThrottle(ctx, op.ThrottledBrokers); err != nil {
		return fmt.Errorf("removing the replication throttle from brokers %v: %w", op.ThrottledBrokers, err)
	}
	op.ThrottledBrokers = nil
	return nil
}

// finish applies the reorders, verifies that every partition of the plan
// equals its target, elects preferred leaders and removes every throttle.
func (e *Executor) finish(ctx context.Context, op *Operation) error {
	st, err := e.observe(ctx)
	if err != nil {
		return err
	}
	var reorders []Assignment
	for _, t := range op.Plan.Target {
		p := st.parts[partKey{t.Topic, t.Partition}]
		if p == nil || st.reass[partKey{t.Topic, t.Partition}] != nil {
			continue
		}
		if !slices.Equal(p.Replicas, t.Replicas) && engine.SameMembers(p.Replicas, t.Replicas) {
			reorders = append(reorders, Assignment{Topic: t.Topic, Partition: t.Partition, Replicas: slices.Clone(t.Replicas)})
		}
	}
	for len(reorders) > 0 {
		n := min(len(reorders), 1000)
		if err := e.d.Kafka.AlterAssignments(ctx, reorders[:n]); err != nil {
			return fmt.Errorf("reordering replicas to move preferred leaders: %w", err)
		}
		reorders = reorders[n:]
	}

	// A reorder completes as soon as the controller takes it, and brokers'
	// metadata follows a moment later: verify until nothing of ours is
	// reassigning and every partition reads as its target, allowing the
	// metadata a bounded time to catch up before calling it a mismatch.
	var mismatches []string
	settle := 30
	for {
		if st, err = e.observe(ctx); err != nil {
			return err
		}
		mismatches, err = verify(op.Plan.Target, st)
		if err == nil && (len(mismatches) == 0 || settle == 0) {
			break
		}
		if err == nil {
			settle--
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
			return err
		}
	}
	if len(mismatches) > 0 {
		return fmt.Errorf("verifying operation %s: %d partition(s) differ from the plan's target: %s",
			op.ID, len(mismatches), strings.Join(firstN(mismatches, 10), "; "))
	}

	var elect []Assignment
	for _, t := range op.Plan.Target {
		if p := st.parts[partKey{t.Topic, t.Partition}]; p != nil && len(t.Replicas) > 0 && p.Leader != t.Replicas[0] {
			elect = append(elect, Assignment{Topic: t.Topic, Partition: t.Partition})
		}
	}
	if len(op.ReusedBrokers) > 0 {
		if err := e.awaitReused(ctx, op); err != nil {
			return err
		}
	}
	if err := e.d.Kafka.ElectPreferredLeaders(ctx, elect); err != nil {
		// Leadership is a preference, not data: a partition whose preferred
		// leader is briefly out of sync is not worth failing the apply.
		e.d.Log.Warn(ctx, "preferred leader election incomplete", map[string]any{"operation": op.ID, "error": err.Error()})
	}
	if err := e.clearThrottles(ctx, op); err != nil {
		return err
	}
	next := PhaseCompleted
	if len(op.RemoveBrokers) > 0 {
		next = PhaseRemoveBrokers
	}
	return e.enter(ctx, op, next)
}

var errStillReassigning = errors.New("still reassigning")

// verify compares the cluster with the target. It returns
// errStillReassigning while a target partition is still moving, and
// otherwise the list of mismatches.
func verify(target []engine.Partition, st clusterState) ([]string, error) {
	var mismatches []string
	for _, t := range target {
		k := partKey{t.Topic, t.Partition}
		if st.reass[k] != nil {
			return nil, errStillReassigning
		}
		p := st.parts[k]
		if p == nil {
			continue // deleted meanwhile: nothing to verify
		}
		if !slices.Equal(p.Replicas, t.Replicas) {
			mismatches = append(mismatches, fmt.Sprintf("%s p%d has %v, want %v", t.Topic, t.Partition, p.Replicas, t.Replicas))
		}
	}
	return mismatches, nil
}

// removeBrokers stops the drained brokers through the platform, waits for
// them to leave, and unregisters them: never while one still runs.
func (e *Executor) removeBrokers(ctx context.Context, op *Operation) error {
	st, err := e.observe(ctx)
	if err != nil {
		return err
	}
	var holding []string
	for _, p := range st.parts {
		for _, b := range p.Replicas {
			if contains(op.RemoveBrokers, b) {
				holding = append(holding, fmt.Sprintf("%s p%d on broker %d", p.Topic, p.Partition, b))
			}
		}
	}
	if len(holding) > 0 {
		sort.Strings(holding)
		return fmt.Errorf("brokers %v still hold %d replica(s) after draining, so they were not removed: %s",
			op.RemoveBrokers, len(holding), strings.Join(firstN(holding, 10), "; "))
	}
	if e.d.Scaler == nil {
		return errors.New("removing brokers needs a scaling method; none is configured")
	}
	if err := e.d.Scaler.ScaleTo(ctx, op.TargetBrokerCount, op.RemoveBrokers); err != nil {
		return fmt.Errorf("asking the platform to remove brokers %v: %w", op.RemoveBrokers, err)
	}
	if err := e.waitBrokers(ctx, fmt.Sprintf("brokers %v stopped", op.RemoveBrokers), func(bs []BrokerStatus) bool {
		return !anyUnfenced(bs, op.RemoveBrokers)
	}); err != nil {
		return err
	}
	for _, id := range op.RemoveBrokers {
		if err := e.d.Kafka.UnregisterBroker(ctx, id); err != nil {
			return fmt.Errorf("unregistering broker %d: %w", id, err)
		}
	}
	if err := e.waitBrokers(ctx, fmt.Sprintf("brokers %v unregistered", op.RemoveBrokers), func(bs []BrokerStatus) bool {
		for _, b := range bs {
			if contains(op.RemoveBrokers, b.ID) {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	return e.enter(ctx, op, PhaseCompleted)
}

// newBrokers are the unfenced brokers not registered before the operation.
func newBrokers(bs []BrokerStatus, before []int32) []int32 {
	var out []int32
	for _, id := range unfenced(bs) {
		if !contains(before, id) {
			out = append(out, id)
		}
	}
	return out
}

// reused returns the leaving brokers of a replacement when every one of
// them was dead at the start and is unfenced again: the platform brought
// them back under the same ids. Otherwise nil.
func reused(bs []BrokerStatus, op *Operation) []int32 {
	if len(op.DeadBrokers) == 0 || !engine.SameMembers(op.DeadBrokers, op.RemoveBrokers) {
		return nil
	}
	up := unfenced(bs)
	for _, id := range op.DeadBrokers {
		if !contains(up, id) {
			return nil
		}
	}
	return slices.Clone(op.DeadBrokers)
}

// awaitReused waits until every partition with a replica on a reused broker
// has its full ISR again. Kafka copies onto the empty broker by itself; the
// copy is throttled like a reassignment: the reused brokers as followers,
// the partitions' other replicas as leaders.
func (e *Executor) awaitReused(ctx context.Context, op *Operation) error {
	catchingUp := func(st clusterState) []engine.Move {
		var out []engine.Move
		for _, k := range sortedParts(st.parts) {
			p := st.parts[k]
			if len(p.ISR) < len(p.Replicas) && slices.ContainsFunc(p.Replicas, func(b int32) bool { return contains(op.ReusedBrokers, b) }) {
				out = append(out, engine.Move{Topic: p.Topic, Partition: p.Partition, OldReplicas: without(p.Replicas, op.ReusedBrokers), NewReplicas: slices.Clone(p.Replicas)})
			}
		}
		return out
	}
	st, err := e.observe(ctx)
	if err != nil {
		return err
	}
	if ms := catchingUp(st); len(ms) > 0 {
		op.ThrottledBrokers = throttledBrokers(&engine.Plan{Groups: []engine.Group{{Steps: []engine.Step{{Moves: ms}}}}})
		if err := e.d.Kafka.SetThrottle(ctx, op.ThrottledBrokers, op.ThrottleRate); err != nil {
			return fmt.Errorf("setting the replication throttle of %d B/s on brokers %v: %w", op.ThrottleRate, op.ThrottledBrokers, err)
		}
		added, err := e.d.Kafka.ThrottleReplicas(ctx, throttleEntries(ms))
		if err != nil {
			return fmt.Errorf("throttling the re-replication onto brokers %v: %w", op.ReusedBrokers, err)
		}
		op.ThrottledReplicas = mergeThrottles(op.ThrottledReplicas, added)
		if err := e.save(ctx, op); err != nil {
			return err
		}
	}
	for last := -1; ; {
		ms := catchingUp(st)
		if len(ms) == 0 {
			return nil
		}
		if len(ms) != last {
			last = len(ms)
			e.d.Log.Info(ctx, "waiting for reused brokers to catch up", map[string]any{"operation": op.ID, "brokers": op.ReusedBrokers, "partitions_catching_up": last})
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
			return fmt.Errorf("waiting for brokers %v to rejoin the ISR of %d partition(s): %w", op.ReusedBrokers, len(ms), err)
		}
		if st, err = e.observe(ctx); err != nil {
			return err
		}
	}
}

func sortedParts(m map[partKey]*PartitionStatus) []partKey {
	keys := make([]partKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b partKey) int {
		if a.topic != b.topic {
			return strings.Compare(a.topic, b.topic)
		}
		return int(a.part - b.part)
	})
	return keys
}

func without(s, drop []int32) []int32 {
	var out []int32
	for _, x := range s {
		if !contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// waitBrokers polls the registered brokers until ok holds or ctx ends.
func (e *Executor) waitBrokers(ctx context.Context, what string, ok func([]BrokerStatus) bool) error {
	var last []BrokerStatus
	var lastErr error
	for {
		bs, err := e.d.Kafka.Brokers(ctx)
		lastErr = err
		if err == nil {
			last = bs
			if ok(bs) {
				return nil
			}
		}
		if serr := e.d.Clock.Sleep(ctx, e.s.PollInterval); serr != nil {
			if lastErr != nil {
				// A refusal (such as a missing permission) repeats on every
				// read: it, not the clock, is why the wait failed.
				return fmt.Errorf("waiting for %s: %w; the last read of the brokers failed: %w", what, serr, lastErr)
			}
			return fmt.Errorf("waiting for %s: %w; registered brokers now: %s", what, serr, describeBrokers(last))
		}
	}
}

func describeBrokers(bs []BrokerStatus) string {
	if len(bs) == 0 {
		return "none"
	}
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = fmt.Sprint(b.ID)
		if b.Fenced {
			parts[i] += " (fenced)"
		}
	}
	return strings.Join(parts, ", ")
}

func checkBrokersUp(bs []BrokerStatus, need []int32, op *Operation) error {
	up := unfenced(bs)
	for _, id := range need {
		if !contains(up, id) {
			return &BrokerDownError{Broker: id, Group: op.Group, Groups: len(op.Plan.Groups), Operation: op.ID}
		}
	}
	return nil
}

func unfenced(bs []BrokerStatus) []int32 {
	var out []int32
	for _, b := range bs {
		if !b.Fenced {
			out = append(out, b.ID)
		}
	}
	return out
}

func anyUnfenced(bs []BrokerStatus, set []int32) bool {
	for _, b := range bs {
		if !b.Fenced && contains(set, b.ID) {
			return true
		}
	}
	return false
}

// throttledBrokers are every broker that sends or receives in the plan's
// copying moves.
func throttledBrokers(p *engine.Plan) []int32 {
	seen := map[int32]bool{}
	for _, m := range p.Moves() {
		if !copies(m) {
			continue
		}
		for _, b := range m.OldReplicas {
			seen[b] = true
		}
		for _, b := range m.NewReplicas {
			seen[b] = true
		}
	}
	return sortedKeys(seen)
}

func groupBrokers(g engine.Group) []int32 {
	seen := map[int32]bool{}
	for _, m := range g.Moves() {
		for _, b := range m.OldReplicas {
			seen[b] = true
		}
		for _, b := range m.NewReplicas {
			seen[b] = true
		}
	}
	return sortedKeys(seen)
}

// copies reports whether a move adds a replica. A move that only removes
// replicas (a lower replication factor) sends no data, so it gets no
// throttle: one would only slow an existing follower that fell out of the
// ISR, which the controller may be waiting for to finish the removal.
func copies(m engine.Move) bool {
	return len(without(m.NewReplicas, m.OldReplicas)) > 0
}

// throttleEntries follow Kafka's own reassignment tool for the moves that
// copy: the leader throttle covers the partition's current replicas (any
// may be the one sending), the follower throttle the replicas being added.
// In-sync replicas are never throttled by Kafka, so over-listing costs
// nothing.
func throttleEntries(ms []engine.Move) []ThrottledReplicas {
	byTopic := map[string]*ThrottledReplicas{}
	var topics []string
	for _, m := range ms {
		if !copies(m) {
			continue
		}
		t := byTopic[m.Topic]
		if t == nil {
			t = &ThrottledReplicas{Topic: m.Topic}
			byTopic[m.Topic] = t
			topics = append(topics, m.Topic)
		}
		for _, b := range m.OldReplicas {
			t.Leader = append(t.Leader, fmt.Sprintf("%d:%d", m.Partition, b))
		}
		for _, b := range m.NewReplicas {
			if !contains(m.OldReplicas, b) {
				t.Follower = append(t.Follower, fmt.Sprintf("%d:%d", m.Partition, b))
			}
		}
	}
	sort.Strings(topics)
	out := make([]ThrottledReplicas, len(topics))
	for i, t := range topics {
		out[i] = *byTopic[t]
	}
	return out
}

func mergeThrottles(have, added []ThrottledReplicas) []ThrottledReplicas {
	byTopic := map[string]int{}
	for i, t := range have {
		byTopic[t.Topic] = i
	}
	for _, a := range added {
		if i, ok := byTopic[a.Topic]; ok {
			have[i].Leader = append(have[i].Leader, a.Leader...)
			have[i].Follower = append(have[i].Follower, a.Follower...)
			continue
		}
		byTopic[a.Topic] = len(have)
		have = append(have, a)
	}
	return have
}

func planFields(op *Operation) map[string]any {
	return map[string]any{
		"operation":          op.ID,
		"groups":             len(op.Plan.Groups),
		"moves":              op.Plan.ReplicaMoves,
		"bytes":              op.Plan.TotalBytes,
		"estimated_duration": time.Duration(op.Plan.EstimatedSeconds * int64(time.Second)).String(),
	}
}

func groupFields(op *Operation, g engine.Group) map[string]any {
	f := map[string]any{
		"operation":   op.ID,
		"group":       fmt.Sprintf("%d/%d", min(op.Group+1, len(op.Plan.Groups)), len(op.Plan.Groups)),
		"group_moves": len(g.Moves()),
		"group_bytes": g.Bytes,
		"moves_done":  fmt.Sprintf("%d/%d", op.MovesDone, len(op.Plan.Moves())),
		"bytes_done":  fmt.Sprintf("%d/%d", op.BytesDone, op.Plan.TotalBytes),
		"throttle":    op.ThrottleRate,
	}
	if op.ThrottleRate > 0 {
		f["eta"] = op.Remaining(op.ThrottleRate).Duration.String()
	}
	return f
}

func union(a, b []int32) []int32 {
	out := slices.Clone(a)
	for _, x := range b {
		if !contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func sortedKeys(m map[int32]bool) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func ids(bs []engine.Broker) []int32 {
	out := make([]int32, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}
