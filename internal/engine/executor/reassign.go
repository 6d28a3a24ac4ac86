package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// The reassign phase: the throttle rates, then the plan's moves under the
// continuous schedule (runMoves, continuous.go), and how a move stands in
// the cluster (classify).

// reassign runs the plan's moves from op.Group on, then enters the finish.
func (e *Executor) reassign(ctx context.Context, op *Operation) error {
	if op.Plan == nil {
		return fmt.Errorf("operation %s has no plan in phase %s; this is a bug in kafkascale", op.ID, op.Phase)
	}
	if len(op.ThrottledBrokers) == 0 {
		op.ThrottledBrokers = without(throttledBrokers(op.Plan), op.DeadBrokers)
		// Recorded before the rates are set, as every throttle is: a run
		// killed in between leaves them recorded, so a cancel or the next
		// run removes them; clearing a rate never set changes nothing.
		if len(op.ThrottledBrokers) > 0 {
			if err := e.save(ctx, op); err != nil {
				return err
			}
		}
	}
	if gone, err := e.unregistered(ctx, op.ThrottledBrokers); err != nil {
		return err
	} else if len(gone) > 0 {
		// Another operation removed a broker this plan sends replicas
		// to or from (while this one was paused or failed): no resume
		// can reach the plan's target, so it is given up and the next
		// run plans from the cluster.
		conflicts := make([]string, len(gone))
		for i, b := range gone {
			conflicts[i] = fmt.Sprintf("broker %d, which the plan moves replicas to or from, is no longer registered", b)
		}
		return e.abandon(ctx, op, conflicts)
	}
	if len(op.Plan.Groups) > op.Group && len(op.ThrottledBrokers) > 0 {
		// Re-set on every run: idempotent, and a resumed run may follow
		// a broker restart or a throttle someone removed.
		if err := e.d.Kafka.SetThrottle(ctx, op.ThrottledBrokers, op.ThrottleRate); err != nil {
			return fmt.Errorf("setting the replication throttle of %d B/s on brokers %v: %w", op.ThrottleRate, op.ThrottledBrokers, err)
		}
	}
	if err := e.runMoves(ctx, op); err != nil {
		return err
	}
	return e.enter(ctx, op, PhaseFinish)
}

// unregistered are the brokers of ids that are no longer registered.
func (e *Executor) unregistered(ctx context.Context, ids []int32) ([]int32, error) {
	gone, _, err := e.absent(ctx, ids)
	return gone, err
}

// absent splits ids into the brokers no longer registered and those
// registered but fenced (down); a failed read says neither.
func (e *Executor) absent(ctx context.Context, ids []int32) (gone, down []int32, err error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	bs, err := e.d.Kafka.Brokers(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		i := slices.IndexFunc(bs, func(b BrokerStatus) bool { return b.ID == id })
		switch {
		case i < 0:
			gone = append(gone, id)
		case bs[i].Fenced:
			down = append(down, id)
		}
	}
	return gone, down, nil
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
// change made outside kafkascale. A partition of a started move that reads
// as on the move's old and new replicas together is asked of the
// controller first (confirmTargets), so that there a broker's lag, however
// long, is no conflict when the cluster has the guard (Kafka 4.0+); the
// polls stay the only grace for the rest (a move not yet started, a
// target on a cordoned broker, Kafka 3.9).
const conflictPolls = 5

type classified struct {
	state  moveState
	reason string
	// union says that the partition reads as on the move's old and new
	// replicas together with no reassignment of it listed: the move
	// finished and the broker that answered does not show it yet, or
	// someone else left the partition there.
	union bool
}

// classify says where move m stands from the partition's status p and its
// listed reassignment r. confirmed is the target the controller confirmed
// for the partition in this poll (confirmTargets), if any.
func classify(m engine.Move, p *PartitionStatus, r *Reassignment, confirmed []int32) classified {
	switch {
	case p == nil:
		return classified{moveConflict, "the partition no longer exists", false}
	case r != nil && engine.SameMembers(r.target(), m.NewReplicas):
		return classified{state: moveInFlight}
	case r != nil:
		return classified{moveConflict, fmt.Sprintf("it is being reassigned to %v by someone else; the plan sends it to %v", r.target(), m.NewReplicas), false}
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
		// runs, and brokers learn the end of a reassignment after the
		// controller stops listing it: a moment on a quiet cluster, more
		// than a minute on a loaded one (a 5,000-partition scale-out
		// beside other clusters on two cores). The controller confirming
		// the target's replica count tells that lag apart; read as in
		// flight without it, the move would wait for ever on a partition
		// that someone else left on the union (a replication factor
		// raised onto the plan's new broker), since no reassignment is
		// there to end.
		if confirmed != nil && engine.SameMembers(confirmed, m.NewReplicas) {
			return classified{state: moveInFlight}
		}
		return classified{moveConflict, fmt.Sprintf("its replicas are %v, the plan's before %v and after %v together, and no reassignment of it is in progress",
			p.Replicas, m.OldReplicas, m.NewReplicas), true}
	default:
		return classified{moveConflict, fmt.Sprintf("its replicas are %v; the plan expected %v (before) or %v (after)", p.Replicas, m.OldReplicas, m.NewReplicas), false}
	}
}

// confirmTargets asks the controller about moves this operation submitted
// whose partitions a broker's metadata shows on the old and new replicas
// together with no reassignment listed. Each target goes again to Kafka's
// guard against a change of replication factor: the controller takes it
// when the partition has the target's replica count, which after such a
// reading means it has the target already (a no-op) and the broker that
// answered lags; it refuses it, changing nothing, when the partition has
// the union's count, which someone else left it on. (A partition someone
// else moved elsewhere at the same replication factor would be moved to
// the target again: the plan's own move, resubmitted.) It returns the
// targets taken, by partition.
//
// The question only spares a conflict's polls of grace: whatever goes
// wrong with it leaves the partitions unconfirmed, as on a cluster without
// the guard, and never fails the operation. A target that keeps a replica
// on a broker this operation cordoned is not asked about at all: Kafka
// refuses it before it looks at the replication factor (KIP-1066), and
// four drains of a loaded CI run failed on that refusal when it was an
// error.
func (e *Executor) confirmTargets(ctx context.Context, op *Operation, as []Assignment) map[partKey][]int32 {
	as = slices.DeleteFunc(slices.Clone(as), func(a Assignment) bool {
		return slices.ContainsFunc(a.Replicas, func(b int32) bool { return contains(op.CordonedBrokers, b) })
	})
	if len(as) == 0 {
		return nil
	}
	taken, err := e.d.Kafka.ReassignKeepingReplicationFactor(ctx, as)
	if err != nil && !errors.Is(err, ErrNoReplicationFactorGuard) && ctx.Err() == nil {
		e.d.Log.Warn(ctx, "could not ask the controller about partitions a broker shows on their old and new replicas together; they count as conflicts until the metadata shows otherwise",
			map[string]any{"operation": op.ID, "asked": len(as), "taken": len(taken), "error": err.Error()})
	}
	out := make(map[partKey][]int32, len(taken))
	for _, a := range taken {
		out[partKey{a.Topic, a.Partition}] = a.Replicas
	}
	if len(taken) > 0 {
		e.d.Log.Info(ctx, "a broker's metadata lags the controller: partitions it shows on their old and new replicas together have their target's replica count at the controller", map[string]any{
			"operation": op.ID, "partitions": len(taken), "asked": len(as)})
	}
	return out
}

type partKey struct {
	topic string
	part  int32
}

type clusterState struct {
	parts   map[partKey]*PartitionStatus
	reass   map[partKey]*Reassignment
	brokers []BrokerStatus
	// confirmed are the targets the controller confirmed in this poll
	// (confirmTargets).
	confirmed map[partKey][]int32
}

func (e *Executor) observe(ctx context.Context) (clusterState, error) {
	st := clusterState{parts: map[partKey]*PartitionStatus{}, reass: map[partKey]*Reassignment{}}
	// The three reads are asked at once: a poll costs the slowest, not
	// their sum, and the poll's cost sets how soon a finished move frees
	// its slots. Read one after the other they were no more consistent: a
	// move that ends between two reads is seen half done either way, which
	// a conflict's few polls of grace (conflictPolls) absorb.
	var (
		wg   sync.WaitGroup
		ps   []PartitionStatus
		rs   []Reassignment
		bs   []BrokerStatus
		errs [3]error
	)
	wg.Add(2)
	go func() { defer wg.Done(); rs, errs[1] = e.d.Kafka.Reassignments(ctx) }()
	go func() { defer wg.Done(); bs, errs[2] = e.d.Kafka.Brokers(ctx) }()
	ps, errs[0] = e.d.Kafka.Partitions(ctx)
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return st, err
	}
	for i := range ps {
		st.parts[partKey{ps[i].Topic, ps[i].Partition}] = &ps[i]
	}
	for i := range rs {
		st.reass[partKey{rs[i].Topic, rs[i].Partition}] = &rs[i]
	}
	st.brokers = bs
	return st, nil
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
	return f
}
