package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// cordon keeps new replicas off the leaving brokers from the start of a
// drain until just before the platform stops them (KIP-1066): a topic created by someone
// else during a drain of hours would otherwise land on a broker that is
// about to go, and the check before the platform stops it would refuse.
//
// It runs on every Resume of an operation with leaving brokers, before any
// reassignment, and sets the cordon again each time: idempotent, and a
// resumed run may follow a restart or a cordon someone removed. A leaving
// broker that was dead at the start is skipped: it cannot take its own
// config. On a Kafka without cordoning, the drain runs uncordoned (the plan
// warns of it).
func (e *Executor) cordon(ctx context.Context, op *Operation) error {
	switch op.Phase {
	case PhaseAddBrokers, PhaseReassign, PhaseFinish:
	default:
		// In remove-brokers the leaving brokers are stopping: they keep
		// the cordon set earlier and cannot take a new one.
		return nil
	}
	want := without(op.RemoveBrokers, op.DeadBrokers)
	if len(want) == 0 {
		return nil
	}
	// A leaving broker that went down since cannot take its own config
	// (no broker answers for its id): it takes no new replica while down,
	// and Scale plans a drain it died during anew (diedLeaving).
	gone, down, err := e.absent(ctx, want)
	if err != nil {
		return fmt.Errorf("reading which leaving brokers %v are up to cordon them: %w", want, err)
	}
	if away := union(gone, down); len(away) > 0 {
		e.d.Log.Warn(ctx, "leaving brokers are down and are not cordoned again", map[string]any{"operation": op.ID, "brokers": fmt.Sprint(away)})
		if want = without(want, away); len(want) == 0 {
			return nil
		}
	}
	ok, err := e.d.Kafka.CordonSupported(ctx)
	if err != nil {
		return fmt.Errorf("detecting whether the cluster supports cordoning brokers %v: %w", want, err)
	}
	if !ok {
		e.d.Log.Warn(ctx, "this Kafka has no cordoned.log.dirs (KIP-1066, Kafka 4.3+): the leaving brokers are drained uncordoned, so a topic created meanwhile may land on them",
			map[string]any{"operation": op.ID, "brokers": want})
		return nil
	}
	// Recorded before it is set: a run that stops half-way still knows
	// which cordons may be ours to remove.
	if !containsAll(op.CordonedBrokers, want) {
		op.CordonedBrokers = union(op.CordonedBrokers, want)
		slices.Sort(op.CordonedBrokers)
		if err := e.save(ctx, op); err != nil {
			return err
		}
	}
	if err := e.d.Kafka.SetCordon(ctx, want, true); err != nil {
		return fmt.Errorf("cordoning the leaving brokers %v so no new replica lands on them: %w", want, err)
	}
	e.d.Log.Info(ctx, "leaving brokers cordoned", map[string]any{"operation": op.ID, "brokers": want})
	return nil
}

// submitCordoned submits a step of reassignments. Kafka refuses a
// reassignment whose target lists a cordoned broker, even one that already
// holds the replica (INVALID_REPLICA_ASSIGNMENT), and a drain moves a
// partition with two replicas on leaving brokers one replica at a time: the
// first move keeps the other. So the cordon is lifted from the brokers a
// step keeps, for as long as it takes to submit it, and set again whatever
// the outcome. The controller learns of a change of cordon from the
// brokers' heartbeats, a moment after the config changes, so a refusal for
// a cordon is retried for a bounded time. A topic created in that window
// may land on the leaving brokers; the check before the platform stops
// them catches it, and the drain is planned anew to drain them too
// (errStrayReplicas).
//
// The cordons of other unfinished operations count too: a replication
// factor change around a drain that another run left unfinished may have
// to keep a replica on a leaving broker for one step, as the drain itself
// does. The caller holds the lease, so no run of that operation changes
// its cordon meanwhile, and the cordon is set again as it was.
func (e *Executor) submitCordoned(ctx context.Context, op *Operation, as []Assignment) error {
	cordoned := op.CordonedBrokers
	if others, err := e.othersCordoned(ctx, op.Key); err != nil {
		return err
	} else if len(others) > 0 {
		cordoned = union(cordoned, others)
	}
	var kept []int32
	for _, a := range as {
		for _, b := range a.Replicas {
			if contains(cordoned, b) && !contains(kept, b) {
				kept = append(kept, b)
			}
		}
	}
	if len(kept) == 0 {
		return e.d.Kafka.AlterAssignments(ctx, as)
	}
	slices.Sort(kept)
	if err := e.d.Kafka.SetCordon(ctx, kept, false); err != nil {
		return fmt.Errorf("lifting the cordon of brokers %v, which the step keeps replicas on: %w", kept, err)
	}
	err := e.d.Kafka.AlterAssignments(ctx, as)
	for try := 1; errors.Is(err, ErrCordoned) && try < cordonSubmitTries; try++ {
		if err = e.d.Clock.Sleep(ctx, cordonSubmitWait); err != nil {
			break
		}
		// Partitions of the step Kafka took already get the same target
		// again: a no-op.
		err = e.d.Kafka.AlterAssignments(ctx, as)
	}
	// Set again even when ctx has ended: a drain must not stay uncordoned
	// until the next apply.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cordonRestoreTimeout)
	defer cancel()
	if cerr := e.d.Kafka.SetCordon(rctx, kept, true); cerr != nil {
		return errors.Join(err, fmt.Errorf("cordoning brokers %v again after the step: %w", kept, cerr))
	}
	return err
}

// othersCordoned are the brokers that unfinished operations under other
// keys than key have cordoned.
func (e *Executor) othersCordoned(ctx context.Context, key string) ([]int32, error) {
	if out, ok := e.othersCordon[key]; ok {
		return out, nil
	}
	others, err := e.unfinishedOthers(ctx, key)
	if err != nil {
		return nil, err
	}
	var out []int32
	for _, o := range others {
		out = union(out, o.CordonedBrokers)
	}
	if e.othersCordon == nil {
		e.othersCordon = map[string][]int32{}
	}
	e.othersCordon[key] = out
	return out, nil
}

// A lifted cordon reaches the controller with a broker's heartbeats
// (broker.heartbeat.interval.ms, 2 s by default). On Kafka 4.4 here that
// took 0.7 s to 12.8 s on an idle machine and more than 20 s under a load
// of 35 (TestCordonOnRealBroker), so a submission refused for it is
// retried every cordonSubmitWait for up to two minutes.
const (
	cordonSubmitWait  = 250 * time.Millisecond
	cordonSubmitTries = 480
)

// cordonRestoreTimeout bounds setting a cordon again after a step when the
// run's context has ended.
const cordonRestoreTimeout = 2 * time.Minute

// uncordon removes the cordon this operation set: when it is cancelled or
// abandoned and its leaving brokers stay, and before the platform stops
// them. A broker no longer registered cannot be reached: its cordon stays
// in the metadata log under its id, and the warning names it. Nor can a
// fenced one take its own config: it stays recorded, and the warning
// names it.
func (e *Executor) uncordon(ctx context.Context, op *Operation, st clusterState) error {
	if len(op.CordonedBrokers) == 0 {
		return nil
	}
	var up, down []int32
	for _, id := range op.CordonedBrokers {
		i := slices.IndexFunc(st.brokers, func(b BrokerStatus) bool { return b.ID == id })
		switch {
		case i < 0, st.brokers[i].Fenced:
			down = append(down, id)
		default:
			up = append(up, id)
		}
	}
	if err := e.d.Kafka.SetCordon(ctx, up, false); err != nil {
		return fmt.Errorf("removing the cordon of operation %s from brokers %v: %w", op.ID, up, err)
	}
	if len(down) > 0 {
		e.d.Log.Warn(ctx, "brokers that are down keep their cordon under their id: delete cordoned.log.dirs from them if they come back",
			map[string]any{"operation": op.ID, "brokers": down})
	}
	op.CordonedBrokers = down
	return nil
}

// liftCordonBeforeStop removes the operation's cordon from the leaving
// brokers once they are drained, recording it first, and returns the
// cluster as it is after. A broker that was down keeps its cordon
// recorded; if the state read after shows it back, its cordon is lifted
// too, or the platform would stop it cordoned and the id would keep the
// cordon. liftCordonTries bounds that for a broker that keeps flapping.
func (e *Executor) liftCordonBeforeStop(ctx context.Context, op *Operation) (clusterState, error) {
	for try := 1; ; try++ {
		if len(op.CordonedBrokers) > 0 {
			bs, err := e.d.Kafka.Brokers(ctx)
			if err != nil {
				return clusterState{}, err
			}
			if err := e.uncordon(ctx, op, clusterState{brokers: bs}); err != nil {
				return clusterState{}, err
			}
			e.d.Log.Info(ctx, "drained brokers uncordoned before they are stopped, so the id carries no cordon", map[string]any{"operation": op.ID, "brokers": op.RemoveBrokers})
			if err := e.save(ctx, op); err != nil {
				return clusterState{}, err
			}
		}
		st, err := e.observe(ctx)
		if err != nil || try == liftCordonTries || !slices.ContainsFunc(st.brokers, func(b BrokerStatus) bool {
			return !b.Fenced && contains(op.CordonedBrokers, b.ID)
		}) {
			return st, err
		}
	}
}

// liftCordonTries is how many times the cordon is lifted before a stop
// when a leaving broker that was down comes back meanwhile.
const liftCordonTries = 3

func containsAll(s, sub []int32) bool {
	for _, x := range sub {
		if !contains(s, x) {
			return false
		}
	}
	return true
}
