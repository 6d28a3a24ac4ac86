package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// abandon stops an operation whose plan no longer matches the cluster. Our
// throttles and cordons go (nothing of ours stays in flight to need them,
// and the leaving brokers may stay) and the next run plans anew.
func (e *Executor) abandon(ctx context.Context, op *Operation, conflicts []string) error {
	cerr := &ConflictError{Operation: op.ID, Conflicts: conflicts}
	if err := e.clearThrottles(ctx, op); err != nil {
		return errors.Join(cerr, err)
	}
	if len(op.CordonedBrokers) > 0 {
		bs, err := e.d.Kafka.Brokers(ctx)
		if err == nil {
			err = e.uncordon(ctx, op, clusterState{brokers: bs})
		}
		if err != nil {
			return errors.Join(cerr, err)
		}
	}
	op.Phase = PhaseAbandoned
	op.LastError = cerr.Error()
	if err := e.save(ctx, op); err != nil {
		return errors.Join(cerr, err)
	}
	return cerr
}

// clearThrottles removes the operation's replica throttles and its brokers'
// throttle rates, together: one changes topics' configs, the other
// brokers'.
func (e *Executor) clearThrottles(ctx context.Context, op *Operation) error {
	// A broker that another operation removed meanwhile takes no config:
	// no broker answers for its id. Its rates leave the record uncleared,
	// or every finish, cancel and abandon would fail on it for good. A
	// broker that is down (fenced) takes none either, and no other broker
	// may change it for it (Kafka answers INVALID_REQUEST): its rates stay
	// recorded, so that once the operation is done they are an orphaned
	// throttle the next apply removes when the broker is back.
	gone, down, err := e.absent(ctx, op.ThrottledBrokers)
	if err == nil && len(gone) > 0 {
		e.d.Log.Warn(ctx, "brokers of the operation's throttle are no longer registered; their rates are not cleared", map[string]any{
			"operation": op.ID, "brokers": fmt.Sprint(gone)})
		op.ThrottledBrokers = without(op.ThrottledBrokers, gone)
	}
	if len(down) > 0 {
		e.d.Log.Warn(ctx, "brokers of the operation's throttle are down; their rates stay recorded and are removed once they are back", map[string]any{
			"operation": op.ID, "brokers": fmt.Sprint(down)})
	}
	up := without(op.ThrottledBrokers, down)
	replicas := make(chan error, 1)
	go func() { replicas <- e.d.Kafka.UnthrottleReplicas(ctx, op.ThrottledReplicas) }()
	berr := e.d.Kafka.ClearThrottle(ctx, up)
	if err := <-replicas; err != nil {
		err = fmt.Errorf("removing replica throttles: %w", err)
		if berr == nil {
			op.ThrottledBrokers = down
			return err
		}
		return errors.Join(err, fmt.Errorf("removing the replication throttle from brokers %v: %w", up, berr))
	}
	op.ThrottledReplicas = nil
	if berr != nil {
		return fmt.Errorf("removing the replication throttle from brokers %v: %w", up, berr)
	}
	op.ThrottledBrokers = down
	return nil
}

// finish applies the reorders, verifies that every partition of the plan
// equals its target, elects preferred leaders and removes every throttle.
func (e *Executor) finish(ctx context.Context, op *Operation) error {
	st, err := e.observe(ctx)
	if err != nil {
		return err
	}
	start := e.d.Clock.Now()
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
	reordered := len(reorders)
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
	for first := true; ; first = false {
		// Without reorders the state read above is the one to verify.
		if !first || reordered > 0 {
			if st, err = e.observe(ctx); err != nil {
				return err
			}
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
		// Past the time the metadata gets to catch up, and with nothing
		// reassigning, a partition off its target was moved by someone
		// else (an operation of another resource that ran while this one
		// was paused or failed): every resume would find it so again, so
		// the plan is given up and the next run plans from the cluster.
		return e.abandon(ctx, op, mismatches)
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
	verified := e.d.Clock.Now()
	// The election and the throttles' removal touch different things (the
	// leaders; the topics' and brokers' configs): they run together.
	elected := make(chan time.Time, 1)
	go func() {
		if err := e.d.Kafka.ElectPreferredLeaders(ctx, elect); err != nil {
			// Leadership is a preference, not data: a partition whose
			// preferred leader is briefly out of sync is not worth failing
			// the apply.
			e.d.Log.Warn(ctx, "preferred leader election incomplete", map[string]any{"operation": op.ID, "error": err.Error()})
		}
		elected <- e.d.Clock.Now()
	}()
	cerr := e.clearThrottles(ctx, op)
	at := <-elected
	// Where the finish spends its time, against the ETA's figure for it.
	e.d.Log.Info(ctx, "verified and elected leaders", map[string]any{"operation": op.ID, "reorders": reordered, "elections": len(elect),
		"verify": verified.Sub(start).String(), "elect": at.Sub(verified).String()})
	if cerr != nil {
		return cerr
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
