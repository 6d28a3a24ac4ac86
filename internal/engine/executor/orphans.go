package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// OrphanedThrottle is a replication throttle that an operation recorded as
// done, or paused, still lists. kafkascale set it, and nothing would
// remove it: the operation that would have is over (its record was
// completed or abandoned by hand, or removing the throttle failed as it
// stopped), or it is paused, holds no throttle until its next run (which may
// be days away), and kept the rate of a broker that was down when it
// paused. Left on, it silently caps replication, and a partition catching
// up after a broker failure is slowed by it.
type OrphanedThrottle struct {
	Operation string
	Key       string
	// Brokers carry the rate Rate that the operation set.
	Brokers  []int32
	Rate     int64
	Replicas []ThrottledReplicas
}

func (o OrphanedThrottle) String() string {
	var parts []string
	if len(o.Brokers) > 0 {
		parts = append(parts, fmt.Sprintf("a rate of %d B/s on brokers %v", o.Rate, o.Brokers))
	}
	for _, t := range o.Replicas {
		parts = append(parts, fmt.Sprintf("%d throttled replica(s) of topic %s", len(t.Leader)+len(t.Follower), t.Topic))
	}
	return fmt.Sprintf("operation %s (%s): %s", o.Operation, o.Key, strings.Join(parts, ", "))
}

// OrphanedThrottles finds them among the stored operations: the throttles
// that operations recorded as done or paused still list, less any that a
// running or interrupted operation lists too (that one still needs it).
// Throttles no operation lists were set by someone else and are never
// touched.
func OrphanedThrottles(ops []*Operation) []OrphanedThrottle {
	liveBrokers := map[int32]bool{}
	liveEntries := map[string]bool{}
	for _, op := range ops {
		if leftThrottles(op) {
			continue
		}
		for _, b := range op.ThrottledBrokers {
			liveBrokers[b] = true
		}
		for _, t := range op.ThrottledReplicas {
			for _, e := range append(slices.Clone(t.Leader), t.Follower...) {
				liveEntries[t.Topic+"/"+e] = true
			}
		}
	}
	var out []OrphanedThrottle
	for _, op := range ops {
		if !leftThrottles(op) || (len(op.ThrottledBrokers) == 0 && len(op.ThrottledReplicas) == 0) {
			continue
		}
		o := OrphanedThrottle{Operation: op.ID, Key: op.Key, Rate: op.ThrottleRate}
		for _, b := range op.ThrottledBrokers {
			if !liveBrokers[b] {
				o.Brokers = append(o.Brokers, b)
			}
		}
		keep := func(topic string, es []string) []string {
			var kept []string
			for _, e := range es {
				if !liveEntries[topic+"/"+e] {
					kept = append(kept, e)
				}
			}
			return kept
		}
		for _, t := range op.ThrottledReplicas {
			t := ThrottledReplicas{Topic: t.Topic, Leader: keep(t.Topic, t.Leader), Follower: keep(t.Topic, t.Follower)}
			if len(t.Leader)+len(t.Follower) > 0 {
				o.Replicas = append(o.Replicas, t)
			}
		}
		if len(o.Brokers) > 0 || len(o.Replicas) > 0 {
			out = append(out, o)
		}
	}
	return out
}

// leftThrottles says whether what op lists as throttled is no longer in
// use: it is done, or paused (a pause removes every throttle it can; what
// it still lists is a rate on a broker that was down).
func leftThrottles(op *Operation) bool { return op.Done() || op.Paused() }

// clearLeftThrottles is the last step of an operation that succeeded
// (*err is nil), when Settings.ClearLeftThrottles asks for it: the
// throttles finished or paused operations left are removed, once per
// Executor. A failure to is kept for LeftThrottles, not returned: the
// operation itself is done, and the next apply tries again.
func (e *Executor) clearLeftThrottles(ctx context.Context, err *error) {
	if *err != nil || !e.s.ClearLeftThrottles || e.left.done {
		return
	}
	e.left.done = true
	e.left.removed, e.left.err = e.ClearOrphanedThrottles(ctx)
}

// LeftThrottles is what the operations of this Executor removed of the
// throttles finished or paused operations left (Settings.ClearLeftThrottles),
// and the error that stopped the removal, if one did.
func (e *Executor) LeftThrottles() ([]OrphanedThrottle, error) {
	return e.left.removed, e.left.err
}

// FindOrphanedThrottles lists the orphaned throttles the store's records
// show (none when the store cannot list). It changes nothing: a plan calls
// it.
func (e *Executor) FindOrphanedThrottles(ctx context.Context) ([]OrphanedThrottle, error) {
	ops, err := e.operations(ctx)
	if err != nil {
		return nil, err
	}
	return OrphanedThrottles(ops), nil
}

// ClearOrphanedThrottles removes the orphaned throttles, under the lease.
// A broker's rate is cleared only where it still equals the rate the
// operation set, and only the replica entries the operation added are
// removed from a topic: what others set stays. Each operation's record
// then lists no throttle. It returns what it removed.
func (e *Executor) ClearOrphanedThrottles(ctx context.Context) ([]OrphanedThrottle, error) {
	found, err := e.FindOrphanedThrottles(ctx)
	if err != nil || len(found) == 0 {
		return nil, err
	}
	var removed []OrphanedThrottle
	err = e.Exclusive(ctx, Work{What: "remove replication throttles left by finished or paused operations"}, func(ctx context.Context) error {
		// Read again under the lease: an operation may have started or
		// ended since.
		found, err := e.FindOrphanedThrottles(ctx)
		if err != nil {
			return err
		}
		for _, o := range found {
			// A broker that is down can neither be read nor changed: its
			// rate stays recorded until it is back. One no longer
			// registered has no config left to clear.
			gone, down, err := e.absent(ctx, o.Brokers)
			if err != nil {
				return err
			}
			o.Brokers = without(without(o.Brokers, gone), down)
			if len(o.Brokers) == 0 && len(o.Replicas) == 0 && len(gone) == 0 {
				continue
			}
			rates, err := e.d.Kafka.BrokerThrottles(ctx, o.Brokers)
			if err != nil {
				return fmt.Errorf("reading the replication throttle of brokers %v: %w", o.Brokers, err)
			}
			var ours []int32
			for _, b := range o.Brokers {
				if r := rates[b]; r.Leader == o.Rate || r.Follower == o.Rate {
					ours = append(ours, b)
				}
			}
			if err := e.d.Kafka.UnthrottleReplicas(ctx, o.Replicas); err != nil {
				return fmt.Errorf("removing the throttled replicas left by %s: %w", o, err)
			}
			if err := e.d.Kafka.ClearThrottle(ctx, ours); err != nil {
				return fmt.Errorf("removing the replication throttle of brokers %v left by operation %s: %w", ours, o.Operation, err)
			}
			op, err := e.d.Store.Load(ctx, o.Key)
			if err != nil {
				return err
			}
			if op != nil && op.ID == o.Operation && leftThrottles(op) {
				op.ThrottledBrokers, op.ThrottledReplicas = down, nil
				if err := e.d.Store.Save(ctx, op); err != nil {
					return fmt.Errorf("recording that operation %s holds no throttle: %w", op.ID, err)
				}
			}
			o.Brokers = ours
			removed = append(removed, o)
			e.d.Log.Info(ctx, "removed an orphaned replication throttle", map[string]any{"throttle": o.String()})
		}
		return nil
	})
	return removed, err
}
