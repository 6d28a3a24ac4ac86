package executor

import (
	"context"
	"fmt"
	"slices"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// Cancellation is what cancelling an unfinished operation does, as a plan
// shows it before and the log records it after.
type Cancellation struct {
	Operation string
	Kind      Kind
	// InFlight are the moves Kafka is making now: cancelling reverts each
	// of those partitions to its replicas before the move (KIP-455).
	InFlight int
	// Finished are the moves already made. They stay where they are; the
	// plan to the new target moves back what it needs to.
	Finished int
	// AddedBrokers are the brokers the operation added, which a lower
	// count drains and removes first.
	AddedBrokers []int32
	// DiedLeaving are the brokers the operation drains that went down
	// during it (diedLeaving): the reason it is cancelled although the
	// configuration still asks for its target.
	DiedLeaving []int32
	// AddingBrokers is set when the operation was waiting for the
	// platform's new brokers: a platform that adds them in the background
	// (Settler) is waited for, and the brokers it adds are drained.
	AddingBrokers bool
}

func (c Cancellation) String() string {
	s := fmt.Sprintf("cancels operation %s (%s): %d move(s) in flight are reverted, %d finished move(s) stay until the new plan moves them",
		c.Operation, c.Kind, c.InFlight, c.Finished)
	if len(c.AddedBrokers) > 0 {
		s += fmt.Sprintf("; it had added brokers %v", c.AddedBrokers)
	}
	if c.AddingBrokers {
		s += "; it was adding brokers: where the platform is still adding them, the apply waits for that request to end, then drains and removes the brokers it added"
	}
	return s
}

// heading says whether an unfinished operation already heads for what a
// request asks: then the request resumes it, and otherwise cancels it.
// Brokers named to leave count only when named again: an apply that
// resumes an operation does not repeat them.
func headsForCount(op *Operation, target int, remove []int32) bool {
	if op.TargetBrokerCount != target {
		return false
	}
	return len(remove) == 0 || engine.SameMembers(remove, op.RemoveBrokers)
}

// diedLeaving are the brokers op drains that were up when it was planned
// and are down (fenced or gone) now, while it still moves replicas. Its
// plan moves a partition's replicas one at a time, so a step may keep such
// a broker in its target, and no reassignment completes with a replica
// that cannot join the ISR: resumed, the drain would wait for the broker
// for good. It is cancelled and planned anew from the cluster instead,
// where those brokers count as dead, as a replacement of a dead broker is.
// up says whether a broker is registered and unfenced.
func diedLeaving(op *Operation, up func(int32) bool) []int32 {
	if op.Phase != PhaseAddBrokers && op.Phase != PhaseReassign {
		return nil
	}
	var out []int32
	for _, id := range op.RemoveBrokers {
		if !contains(op.DeadBrokers, id) && !up(id) {
			out = append(out, id)
		}
	}
	return out
}

// TargetReplicationFactor is the replication factor a replication factor
// change leads to (0 when its plan moves nothing).
func (op *Operation) TargetReplicationFactor() int {
	if op.Plan == nil || len(op.Plan.Target) == 0 {
		return 0
	}
	return len(op.Plan.Target[0].Replicas)
}

// inFlight are the moves in progress (openMoves) that Kafka is still
// reassigning, as st shows them.
func inFlight(op *Operation, st clusterState) []engine.Move {
	var out []engine.Move
	for _, m := range op.openMoves() {
		k := partKey{m.Topic, m.Partition}
		if r := st.reass[k]; r != nil && engine.SameMembers(r.target(), m.NewReplicas) {
			out = append(out, m)
		}
	}
	return out
}

// finishedMoves counts the moves made: those the record counts and the moves in
// progress (openMoves) whose partitions already have their new replicas
// (done), or those of a later move of the same partition.
func finishedMoves(op *Operation, done func(engine.Move) bool) int {
	n := op.MovesDone
	open := op.openMoves()
	for i, m := range open {
		for _, later := range open[i:] {
			if later.Topic == m.Topic && later.Partition == m.Partition && done(later) {
				n++
				break
			}
		}
	}
	return n
}

// addedBrokers are the brokers registered now that the operation did not
// start with, when it is one that adds brokers.
func addedBrokers(op *Operation, registered []int32) []int32 {
	if op.Kind != KindScaleOut && op.Kind != KindReplace {
		return nil
	}
	var out []int32
	for _, b := range registered {
		if !contains(op.BrokersBefore, b) {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// leavingAfterCancel is who leaves when a cancelled operation is followed
// by a lower count and the user named nobody: the brokers the cancelled
// operation added, when they are exactly as many as must go. Reverting a
// scale-out removes what it added, not whatever the default choice would.
func leavingAfterCancel(c *Cancellation, registered int, target int, named []int32) []int32 {
	if len(named) > 0 || c == nil || len(c.AddedBrokers) == 0 || registered-target != len(c.AddedBrokers) {
		return named
	}
	return c.AddedBrokers
}

// leavingAfterAbandon is who leaves when an operation abandoned for a
// conflict is followed by the same count and the user named nobody: the
// brokers it was removing, when they are all still registered and exactly
// as many as must go (or, for a replacement, all still there). Terraform
// keeps the brokers an apply named once that apply returns, even paused,
// so the provider names them only once; the default choice would drain
// other brokers and leave the named ones in the cluster.
func leavingAfterAbandon(prev *Operation, registered []int32, target int, named []int32) []int32 {
	if len(named) > 0 || prev == nil || prev.Phase != PhaseAbandoned || prev.TargetBrokerCount != target ||
		len(prev.RemoveBrokers) == 0 || !containsAll(registered, prev.RemoveBrokers) {
		return named
	}
	if len(registered)-target == len(prev.RemoveBrokers) || (prev.Kind == KindReplace && len(registered) == target) {
		return slices.Clone(prev.RemoveBrokers)
	}
	return named
}

// moveKey tells apart the moves of one partition by their new replicas.
type moveKey struct {
	part partKey
	to   string
}

// PreviewCancel is what cancelling op would do on the cluster c (a
// snapshot, in which a partition being reassigned lists its old and new
// replicas together), and the cluster as the cancel leaves it: each
// partition in flight back on the replicas it had before the move. The
// plan to the next target is made from that cluster.
//
// reassigning, when known (ListPartitionReassignments), says which moves
// are in flight. Without it (nil) a move is taken as in flight when the
// snapshot lists its old and new replicas together; a move that only adds
// replicas then reads as finished, as Metadata shows an added replica from
// the start.
func PreviewCancel(c engine.Cluster, op *Operation, reassigning []Reassignment) (Cancellation, engine.Cluster) {
	cn := Cancellation{Operation: op.ID, Kind: op.Kind, AddingBrokers: op.Phase == PhaseAddBrokers}
	var registered []int32
	for _, b := range c.Brokers {
		registered = append(registered, b.ID)
	}
	cn.AddedBrokers = addedBrokers(op, registered)
	open := op.openMoves()
	if len(open) == 0 {
		cn.Finished = op.MovesDone
		return cn, c
	}
	// A partition may have more than one move in progress: the last one
	// started is the one Kafka can be running.
	moving := map[partKey][]engine.Move{}
	for _, m := range open {
		k := partKey{m.Topic, m.Partition}
		moving[k] = append(moving[k], m)
	}
	listed := map[partKey]Reassignment{}
	for _, r := range reassigning {
		listed[partKey{r.Topic, r.Partition}] = r
	}
	inFlight := func(k partKey, m engine.Move, replicas []int32) bool {
		if reassigning != nil {
			r, ok := listed[k]
			return ok && engine.SameMembers(r.target(), m.NewReplicas)
		}
		return !engine.SameMembers(replicas, m.NewReplicas) && engine.SameMembers(replicas, union(m.OldReplicas, m.NewReplicas))
	}
	out := engine.Cluster{Brokers: c.Brokers, Partitions: make([]engine.Partition, len(c.Partitions))}
	done := map[moveKey]bool{}
	for i, p := range c.Partitions {
		out.Partitions[i] = p
		k := partKey{p.Topic, p.Partition}
		for _, m := range moving[k] {
			switch {
			case inFlight(k, m, p.Replicas):
				out.Partitions[i].Replicas = slices.Clone(m.OldReplicas)
				cn.InFlight++
			case engine.SameMembers(p.Replicas, m.NewReplicas):
				done[moveKey{k, fmt.Sprint(m.NewReplicas)}] = true
			}
		}
	}
	cn.Finished = finishedMoves(op, func(m engine.Move) bool {
		return done[moveKey{partKey{m.Topic, m.Partition}, fmt.Sprint(m.NewReplicas)}]
	})
	return cn, out
}

// Cancel stops the unfinished operation under key, if there is one, under
// the lease: see cancel. It returns what was cancelled (nil when nothing
// was unfinished).
func (e *Executor) Cancel(ctx context.Context, key, why string) (c *Cancellation, err error) {
	err = e.Exclusive(ctx, Work{Key: key, What: "cancel the unfinished operation " + key}, func(ctx context.Context) error {
		op, err := e.d.Store.Load(ctx, key)
		if err != nil || op == nil || op.Done() {
			return err
		}
		c, err = e.cancel(ctx, op, why)
		return err
	})
	return c, err
}

// cancel stops an unfinished operation: its reassignments in flight are
// cancelled, which puts each partition back on its replicas before the
// move, its throttles and cordons are removed, and it is recorded as
// cancelled. Moves
// already finished stay; the caller plans from the cluster as it is.
func (e *Executor) cancel(ctx context.Context, op *Operation, why string) (*Cancellation, error) {
	if err := e.awaitPlatform(ctx, op); err != nil {
		return nil, err
	}
	st, err := e.observe(ctx)
	if err != nil {
		return nil, err
	}
	c := &Cancellation{Operation: op.ID, Kind: op.Kind, AddingBrokers: op.Phase == PhaseAddBrokers}
	var registered []int32
	for _, b := range st.brokers {
		registered = append(registered, b.ID)
	}
	c.AddedBrokers = addedBrokers(op, registered)
	moving := inFlight(op, st)
	c.InFlight = len(moving)
	c.Finished = finishedMoves(op, func(m engine.Move) bool {
		p := st.parts[partKey{m.Topic, m.Partition}]
		return p != nil && st.reass[partKey{m.Topic, m.Partition}] == nil && engine.SameMembers(p.Replicas, m.NewReplicas)
	})
	e.d.Log.Info(ctx, "cancelling operation", map[string]any{"operation": op.ID, "kind": string(op.Kind), "phase": string(op.Phase),
		"in_flight": c.InFlight, "finished": c.Finished, "because": why})
	// First, as Kafka refuses a reassignment that lists a cordoned broker:
	// reverting may put replicas back on the leaving brokers.
	if err := e.uncordon(ctx, op, st); err != nil {
		return c, err
	}
	if len(moving) > 0 {
		as := make([]Assignment, len(moving))
		for i, m := range moving {
			as[i] = Assignment{Topic: m.Topic, Partition: m.Partition}
		}
		if err := e.d.Kafka.CancelReassignments(ctx, as); err != nil {
			return c, fmt.Errorf("cancelling the %d reassignment(s) in flight of operation %s: %w", len(as), op.ID, err)
		}
		if err := e.awaitReverted(ctx, moving); err != nil {
			return c, fmt.Errorf("waiting for the cancelled reassignments of operation %s to stop: %w", op.ID, err)
		}
	}
	if err := e.clearThrottles(ctx, op); err != nil {
		return c, err
	}
	op.Phase = PhaseCancelled
	op.StepsSubmitted = 0
	op.CompletedAt = e.d.Clock.Now().UTC()
	op.LastError = "cancelled: " + why
	if err := e.save(ctx, op); err != nil {
		return c, err
	}
	// The next operation under the same key replaces this record: keep a
	// copy under a key of its own, so the cancel stays in the history
	// (kafkascale operations lists it).
	hist := *op
	hist.Key = HistoryKey(op)
	if err := e.d.Store.Save(ctx, &hist); err != nil {
		e.d.Log.Warn(ctx, "could not keep the cancelled operation in the history", map[string]any{"operation": op.ID, "error": err.Error()})
	}
	return c, nil
}

// awaitPlatform waits, for an operation cancelled while it was adding
// brokers, until the platform runs its request no more (Settler): the
// brokers it adds then count as the operation's (AddedBrokers), and the
// plan that follows drains them. Found by the soak (seed 22): a scale-out
// cut by its timeout was reverted, the revert rebalanced the old brokers,
// and the platform's broker registered during it, so the apply that asked
// for 4 brokers ended with 5.
func (e *Executor) awaitPlatform(ctx context.Context, op *Operation) error {
	s, ok := e.d.Scaler.(Settler)
	if !ok || op.Phase != PhaseAddBrokers {
		return nil
	}
	e.d.Log.Info(ctx, "waiting for the platform's scaling request of the cancelled operation to end", map[string]any{
		"operation": op.ID, "broker_count": op.TargetBrokerCount})
	if err := s.AwaitIdle(ctx); err != nil {
		return fmt.Errorf("cancelling operation %s: waiting for the platform to finish the request for %d brokers it made, whose brokers the cancel then removes: %w",
			op.ID, op.TargetBrokerCount, err)
	}
	return nil
}

// keepInHistory saves prev, the finished operation whose record a new one
// is about to replace under the same key, under a key of its own when it
// still lists what only its record knows: the rates and entries it left on
// brokers that were down (orphaned throttles, which the next apply removes
// once they are back) and the cordons it could not lift. A cancelled one
// was kept when it was cancelled. Found by the simulation (seed 9114): a
// drain abandoned while a throttled broker was dead, then a new drain
// under the same key, and the broker's rate was left for good once it came
// back.
func (e *Executor) keepInHistory(ctx context.Context, prev *Operation) {
	if prev == nil || !prev.Done() || prev.Phase == PhaseCancelled ||
		len(prev.ThrottledBrokers)+len(prev.ThrottledReplicas)+len(prev.CordonedBrokers) == 0 {
		return
	}
	hist := *prev
	hist.Key = HistoryKey(prev)
	if err := e.d.Store.Save(ctx, &hist); err != nil {
		e.d.Log.Warn(ctx, "could not keep the finished operation's orphaned throttles in the history", map[string]any{"operation": prev.ID, "error": err.Error()})
	}
}

// HistoryKey is where a cancelled operation's record is kept once the next
// operation under its key replaces it.
func HistoryKey(op *Operation) string { return op.Key + "#" + op.ID }

// awaitReverted waits until Kafka lists none of ms as reassigning and, for
// a bounded time, until metadata shows each back on its old replicas: the
// controller ends a cancelled reassignment at once, and brokers learn it a
// moment later. The plan that follows must not read the old union as an
// under-replicated partition.
func (e *Executor) awaitReverted(ctx context.Context, ms []engine.Move) error {
	settle := 30
	for {
		st, err := e.observe(ctx)
		if err != nil {
			return err
		}
		reassigning, lagging := 0, 0
		for _, m := range ms {
			k := partKey{m.Topic, m.Partition}
			if st.reass[k] != nil {
				reassigning++
			} else if p := st.parts[k]; p != nil && !engine.SameMembers(p.Replicas, m.OldReplicas) && !engine.SameMembers(p.Replicas, m.NewReplicas) {
				// A move that finished before its cancel reached the
				// controller stays finished; any other list is the
				// brokers' metadata catching up.
				lagging++
			}
		}
		if reassigning == 0 && (lagging == 0 || settle == 0) {
			return nil
		}
		if reassigning == 0 {
			settle--
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
			return err
		}
	}
}
