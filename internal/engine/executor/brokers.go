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
	// it again before the drain. A new broker that is still starting
	// (registered, fenced until it has caught up with the metadata) is
	// there already.
	bs, err := e.d.Kafka.Brokers(ctx)
	if err != nil {
		return err
	}
	// The phase is timed for the next plan's estimate only when this run
	// asked the platform: a resumed wait would time a fraction of it.
	var asked time.Time
	if !replace || (len(registeredSince(bs, op.BrokersBefore)) < len(op.RemoveBrokers) && reused(bs, op) == nil) {
		e.d.Log.Info(ctx, "asking the platform for brokers", map[string]any{"operation": op.ID, "broker_count": op.TargetBrokerCount, "remove": op.RemoveBrokers})
		asked = e.d.Clock.Now()
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
	measured := e.d.Clock.Now()
	if replace {
		if bs, err = e.d.Kafka.Brokers(ctx); err != nil {
			return err
		}
		if back := reused(bs, op); back != nil && len(newBrokers(bs, op.BrokersBefore)) == 0 {
			e.d.Log.Info(ctx, "the platform brought the dead brokers back under their ids; Kafka re-replicates onto them",
				map[string]any{"operation": op.ID, "brokers": back})
			op.ReusedBrokers, op.RemoveBrokers = back, nil
			op.Plan = &engine.Plan{}
			if len(op.Options.DemotedBrokers) > 0 {
				// Nothing moves, but a demoted broker must not stay the
				// preferred leader of what the dead one led: the finish
				// reorders (engine.PlanLeaders) as well as it elects.
				if op.Plan, err = e.leadersOnly(ctx, op); err != nil {
					return err
				}
			}
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
			// Not timed: the metadata did not follow.
			return fmt.Errorf("%d brokers are registered, but the cluster metadata still lists only %d of them (%v) after %d attempts", want, listed, ids(snap.Brokers), attempt)
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
			return err
		}
	}
	if n := op.brokersToAdd(); !asked.IsZero() && n > 0 {
		// Until the brokers are in the metadata the plan cannot start:
		// that wait is part of adding them.
		op.Timings = op.Timings.With(op.ScalingMethod, e.d.Clock.Now().Sub(asked)/time.Duration(n), 0)
		e.d.Log.Info(ctx, "brokers added", map[string]any{"operation": op.ID, "brokers": n,
			"registered_after": measured.Sub(asked).String(), "in_metadata_after": e.d.Clock.Now().Sub(asked).String()})
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
	op.Group, op.Started = 0, nil
	// Estimated from the reassign phase on: the brokers are there.
	op.Phase = PhaseReassign
	e.estimate(ctx, op)
	e.d.Log.Info(ctx, "planned reassignment", planFields(op))
	return e.enter(ctx, op, PhaseReassign)
}

// errStrayReplicas marks a drain given up because replicas landed on its
// leaving brokers after it was planned.
var errStrayReplicas = errors.New("replicas landed on the leaving brokers after the drain was planned")

// removeBrokers stops the drained brokers through the platform, waits for
// them to leave, and unregisters them: never while one still runs.
func (e *Executor) removeBrokers(ctx context.Context, op *Operation) error {
	// The cordon is a config of the broker id, kept in the metadata log
	// after the broker is unregistered: a platform that reuses ids would
	// bring the broker back cordoned. So it is removed while the brokers
	// can still take it, before the check that they hold nothing, which
	// catches a topic created in between.
	st, err := e.liftCordonBeforeStop(ctx, op)
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
		// Replicas the plan did not know of: a topic created by another
		// tool while the cordon was lifted for a step (submitCordoned),
		// or on Kafka without a cordon. The drain is given up, as one
		// whose plan is out of date, and Scale plans it anew from the
		// cluster as it is (errStrayReplicas), so that they are drained
		// too and the same brokers are then removed.
		sort.Strings(holding)
		e.d.Log.Warn(ctx, "replicas landed on the leaving brokers after the drain was planned; it is planned anew to drain them too", map[string]any{
			"operation": op.ID, "brokers": fmt.Sprint(op.RemoveBrokers), "replicas": strings.Join(firstN(holding, 10), "; "), "count": len(holding)})
		return errors.Join(e.abandon(ctx, op, holding), fmt.Errorf("%w: brokers %v still hold %d replica(s) after draining, so they were not removed",
			errStrayReplicas, op.RemoveBrokers, len(holding)))
	}
	if !slices.ContainsFunc(st.brokers, func(b BrokerStatus) bool { return contains(op.RemoveBrokers, b.ID) }) {
		// A run stopped after it unregistered them and before it recorded
		// the completion: the platform has the target count already, and
		// the same request again (the count, with brokers named) is how a
		// scaling API asks for replacements.
		return e.enter(ctx, op, PhaseCompleted)
	}
	if e.d.Scaler == nil {
		return errors.New("removing brokers needs a scaling method; none is configured")
	}
	asked := e.d.Clock.Now()
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
	// A resumed phase asks the platform again and waits again, so it is
	// timed whole like the first run.
	op.Timings = op.Timings.With(op.ScalingMethod, 0, e.d.Clock.Now().Sub(asked)/time.Duration(len(op.RemoveBrokers)))
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

// registeredSince are the brokers registered now, fenced or not, that
// were not registered before the operation.
func registeredSince(bs []BrokerStatus, before []int32) []int32 {
	var out []int32
	for _, b := range bs {
		if !contains(before, b.ID) {
			out = append(out, b.ID)
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
		if err := e.throttle(ctx, op, ms); err != nil {
			return fmt.Errorf("throttling the re-replication onto brokers %v: %w", op.ReusedBrokers, err)
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

func without[T comparable](s, drop []T) []T {
	var out []T
	for _, x := range s {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// leadersOnly is the reorder that brings the cluster's preferred leaders
// back within op's options (its demotions included), or an empty plan when
// they are: the rebalance of preferred leaders alone (PreviewRebalance).
func (e *Executor) leadersOnly(ctx context.Context, op *Operation) (*engine.Plan, error) {
	snap, err := e.d.Kafka.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	pv, err := PreviewRebalance(snap, op.Options, BalanceLeaders)
	if err != nil {
		return nil, err
	}
	if pv.Imbalance != "" {
		e.d.Log.Info(ctx, "reordering preferred leaders", map[string]any{"operation": op.ID, "because": pv.Imbalance})
	}
	return pv.Plan, nil
}
