package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// Reassignment by groups: each group's moves are throttled, submitted in
// steps and watched until Kafka completes them, then the next group starts.

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
		// A group of which nothing is submitted yet waits for the next
		// run once the budget is spent; one already submitted (by a run
		// that was killed) is finished first.
		if op.StepsSubmitted == 0 && e.advanced && e.outOfTime() {
			return e.pause(ctx, op)
		}
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

// conflictPolls is how many polls in a row must see a conflict before the
// operation is abandoned: fewer would take a moment of metadata lag for a
// change made outside kafkascale.
const conflictPolls = 5

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
	var (
		st        clusterState
		pending   [][]engine.Move // per step, the moves still to submit
		conflicts []string
		open      []engine.Move // moves not done yet
	)
	// A conflict counts only when it is still there after a few polls: a
	// broker's metadata can lag the controller for a moment (a topic
	// created just before the plan reads as missing).
	for polls := 1; ; polls++ {
		var err error
		if st, err = e.observe(ctx); err != nil {
			return err
		}
		pending, conflicts, open = nil, nil, nil
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
		if len(conflicts) == 0 || polls >= conflictPolls {
			break
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
			return err
		}
	}
	if err := checkBrokersUp(st.brokers, without(groupBrokers(g), op.DeadBrokers), op); err != nil {
		return err
	}
	if len(conflicts) > 0 {
		return e.abandon(ctx, op, conflicts)
	}

	fields := groupFields(op, g)
	e.d.Log.Info(ctx, "reassignment group starting", fields)

	if err := e.throttle(ctx, op, open); err != nil {
		return fmt.Errorf("throttling the replicas of group %d/%d: %w", op.Group+1, len(op.Plan.Groups), err)
	}

	for _, step := range pending {
		if err := ctx.Err(); err != nil {
			return err
		}
		as := make([]Assignment, len(step))
		for i, m := range step {
			as[i] = Assignment{Topic: m.Topic, Partition: m.Partition, Replicas: slices.Clone(m.NewReplicas)}
		}
		if err := e.submitCordoned(ctx, op, as); err != nil {
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
	e.advanced = true
	e.d.Log.Info(ctx, "reassignment group done", groupFields(op, g))
	return e.save(ctx, op)
}

// waitGroup polls until every open move of the group is done, adjusting the
// throttle on the way. It never submits anything.
func (e *Executor) waitGroup(ctx context.Context, op *Operation, g engine.Group, open []engine.Move) error {
	lastAdjust, lastProgress := e.d.Clock.Now(), e.d.Clock.Now()
	conflicted := 0 // consecutive polls that saw a conflict
	need := without(groupBrokers(g), op.DeadBrokers)
	released := map[partKey]bool{} // finished moves whose throttles are gone
	for {
		st, err := e.observe(ctx)
		if err != nil {
			return err
		}
		remaining := 0
		var conflicts []string
		var finished []engine.Move
		for _, m := range open {
			k := partKey{m.Topic, m.Partition}
			switch c := classify(m, st.parts[k], st.reass[k]); c.state {
			case moveDone:
				if !released[k] {
					released[k] = true
					finished = append(finished, m)
				}
			case moveConflict:
				conflicts = append(conflicts, fmt.Sprintf("%s p%d: %s", m.Topic, m.Partition, c.reason))
			default:
				remaining++
			}
		}
		if len(conflicts) > 0 {
			if conflicted++; conflicted >= conflictPolls {
				return e.abandon(ctx, op, conflicts)
			}
		} else {
			conflicted = 0
		}
		if remaining == 0 && len(conflicts) == 0 {
			return nil // the group's end removes what is left
		}
		if err := checkBrokersUp(st.brokers, need, op); err != nil {
			return err
		}
		if err := e.releaseThrottles(ctx, op, finished); err != nil {
			return err
		}
		if e.d.Advisor != nil && e.d.Clock.Now().Sub(lastAdjust) >= e.s.AdjustInterval {
			lastAdjust = e.d.Clock.Now()
			if err := e.adjustThrottle(ctx, op); err != nil {
				return err
			}
		}
		// An apply that runs for hours shows only "Still modifying…":
		// the INFO log is where a user follows it, metrics block or not.
		if now := e.d.Clock.Now(); now.Sub(lastProgress) >= e.s.ProgressInterval {
			lastProgress = now
			f := groupFields(op, g)
			f["phase"] = string(op.Phase)
			f["moves_in_flight"] = remaining
			e.d.Log.Info(ctx, "reassignment progress", f)
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
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

func planFields(op *Operation) map[string]any {
	return map[string]any{
		"operation":          op.ID,
		"groups":             len(op.Plan.Groups),
		"moves":              op.Plan.ReplicaMoves,
		"bytes":              op.Plan.TotalBytes,
		"estimated_duration": time.Duration(op.Plan.EstimatedSeconds * int64(time.Second)).String(),
		"eta":                op.Remaining(op.ThrottleRate).ETA.String(),
	}
}

func groupFields(op *Operation, g engine.Group) map[string]any {
	f := map[string]any{
		"operation":   op.ID,
		"group":       fmt.Sprintf("%d/%d", min(op.Group+1, len(op.Plan.Groups)), len(op.Plan.Groups)),
		"group_moves": len(g.Moves()),
		"group_bytes": g.Bytes,
		// The busiest broker's bytes set the group's copy time.
		"group_busiest_bytes": g.BusiestBrokerBytes,
		"moves_done":          fmt.Sprintf("%d/%d", op.MovesDone, len(op.Plan.Moves())),
		"bytes_done":          fmt.Sprintf("%d/%d", op.BytesDone, op.Plan.TotalBytes),
		"throttle":            op.ThrottleRate,
	}
	if op.ThrottleRate > 0 {
		f["eta"] = op.Remaining(op.ThrottleRate).Duration.String()
	}
	return f
}
