package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// ReplicationFactorRequest asks for every partition of one topic at a new
// replication factor.
type ReplicationFactorRequest struct {
	// Key is the topic's key in the operation store: an unfinished change
	// under it is resumed first.
	Key string
	// ID is the id a new operation gets.
	ID string
	// Resource names the Terraform resource, for the lease.
	Resource string
	Topic    string
	// ReplicationFactor is the target, per partition.
	ReplicationFactor int
	// Throttle is the replication throttle, bytes/s per broker; a resumed
	// change takes it too, so raising it finishes sooner.
	Throttle int64
}

// PreviewReplicationFactor plans the change on c without running it: the
// plan's cost, and the refusal of a change the brokers cannot hold. The
// plan at apply is made the same way, from the cluster as it is then.
//
// leaving are the brokers other unfinished operations drain: the change
// puts no replica on them and moves the topic's replicas off them, as the
// drain would (Kafka's cordon refuses a move onto them, and on Kafka
// without it they would be stopped holding the new replicas). The drain's
// own moves of the topic are then out of date: it stops as changed
// outside, owes its balance, and its next run plans from the cluster.
// demoted are the brokers the cluster's configuration demotes: they lead
// none of the topic's partitions that another replica can lead.
func PreviewReplicationFactor(c engine.Cluster, topic string, rf int, throttle int64, leaving, demoted []int32) (*engine.Plan, error) {
	opts := engine.DefaultOptions()
	opts.ThrottleBytesPerSec = throttle
	opts.DemotedBrokers = demoted
	var drained []int32
	for _, id := range leaving {
		if slices.ContainsFunc(c.Brokers, func(b engine.Broker) bool { return b.ID == id }) {
			drained = append(drained, id)
		}
	}
	return engine.PlanReassignment(topicOnly(c, topic), engine.Change{ReplicationFactor: map[string]int{topic: rf}, RemoveBrokers: drained}, opts)
}

// PreviewReplicationFactorFrom is what ChangeReplicationFactor would do now
// with prev, the operation stored under the topic's key (nil when none):
// the plan it would run and, when prev heads for another factor, what
// cancelling prev does first. It is the one preview the plan shows, so
// that the plan and the apply take the same branch. An unfinished change
// to the same factor is resumed: its Remaining is the cost, and the plan
// returned is empty.
//
// reassigning are the reassignments in flight, as PreviewCancel takes them.
func PreviewReplicationFactorFrom(c engine.Cluster, prev *Operation, reassigning []Reassignment, topic string, rf int, throttle int64, leaving, demoted []int32) (*engine.Plan, *Cancellation, error) {
	switch {
	case prev == nil || prev.Done():
		p, err := PreviewReplicationFactor(c, topic, rf, throttle, leaving, demoted)
		return p, nil, err
	case resumesReplicationFactor(prev, rf):
		return &engine.Plan{}, nil, nil
	}
	cn, after := PreviewCancel(c, prev, reassigning)
	p, err := PreviewReplicationFactor(after, topic, rf, throttle, leaving, demoted)
	return p, &cn, err
}

// topicOnly keeps every broker but only the topic's partitions, so that a
// replication factor change moves this topic's replicas and nothing else.
// Brokers keep their used bytes, so the other topics still count on disk.
func topicOnly(c engine.Cluster, topic string) engine.Cluster {
	out := engine.Cluster{Brokers: c.Brokers}
	for _, p := range c.Partitions {
		if p.Topic == topic {
			out.Partitions = append(out.Partitions, p)
		}
	}
	return out
}

// ChangeReplicationFactor brings req.Topic to req.ReplicationFactor as a
// throttled reassignment, persisted under req.Key so that an interrupted
// apply resumes it. Under the lease it first finishes an unfinished change
// of the topic to the same factor (at the new throttle), or cancels one to
// another factor, then plans from the cluster that left, and runs the
// plan. It returns the operation that ran last (nil when nothing had to
// move).
func (e *Executor) ChangeReplicationFactor(ctx context.Context, req ReplicationFactorRequest) (op *Operation, err error) {
	if err := e.ensureStore(ctx); err != nil {
		return nil, err
	}
	w := Work{Key: req.Key, ID: req.ID, Resource: req.Resource,
		What: fmt.Sprintf("change topic %s to %d replicas", req.Topic, req.ReplicationFactor)}
	// The plan is made under the lease too: one made while another
	// operation moves this topic's replicas would be stale by its start.
	err = e.Exclusive(ctx, w, func(ctx context.Context) error {
		op, err = e.changeReplicationFactor(ctx, req)
		return err
	})
	return op, err
}

func (e *Executor) changeReplicationFactor(ctx context.Context, req ReplicationFactorRequest) (*Operation, error) {
	prev, err := e.d.Store.Load(ctx, req.Key)
	if err != nil {
		return nil, err
	}
	if prev != nil && !prev.Done() && !resumesReplicationFactor(prev, req.ReplicationFactor) {
		// The configuration asks for another factor: the partitions
		// already changed are planned back from where they are.
		if _, err := e.cancel(ctx, prev, fmt.Sprintf("the configuration asks for %d replicas", req.ReplicationFactor)); err != nil {
			return prev, err
		}
	}
	if prev != nil && !prev.Done() {
		e.d.Log.Info(ctx, "resuming an interrupted replication factor change", map[string]any{"topic": req.Topic,
			"operation": prev.ID, "phase": string(prev.Phase), "throttle_before": prev.ThrottleRate, "throttle": req.Throttle})
		if prev.ThrottleRate != req.Throttle {
			// The rate is set again on resume: a user who raised the
			// throttle to finish sooner gets the new rate.
			prev.recordThrottle(e.d.Clock.Now().UTC(), req.Throttle, "the configuration's throttle changed before the resume")
			if err := e.save(ctx, prev); err != nil {
				return prev, err
			}
		}
		// An unfinished change finishes first, and the new plan starts
		// from what it left: a plan made before the resume would expect
		// replicas the resume moves.
		op, err := e.runPlan(ctx, req.Key, req.ID, KindReplicationFactor, &engine.Plan{}, req.Throttle)
		var conflict *ConflictError
		switch {
		case errors.As(err, &conflict) && op != nil && op.Phase == PhaseAbandoned:
			// Another operation (a drain that resumed while this one
			// was stopped) moved some of the topic's partitions: the
			// plan is out of date, and was given up with its throttles.
			// The configuration still asks for the same factor, so the
			// change is planned anew from the cluster, as the next
			// apply would.
			e.d.Log.Warn(ctx, "the interrupted replication factor change was out of date; planning it anew", map[string]any{
				"topic": req.Topic, "operation": op.ID, "error": err.Error()})
		case err != nil || (op != nil && op.Paused()):
			return op, err
		}
	}
	snap, err := e.d.Kafka.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster to plan the replication factor change: %w", err)
	}
	rules, err := e.placementRules(ctx, req.Key)
	if err != nil {
		return nil, fmt.Errorf("reading the unfinished operations: %w", err)
	}
	p, err := PreviewReplicationFactor(snap, req.Topic, req.ReplicationFactor, req.Throttle, rules.leaving, rules.options.DemotedBrokers)
	if err != nil {
		return nil, err
	}
	e.d.Log.Info(ctx, "planned replication factor change", map[string]any{"topic": req.Topic, "replication_factor": req.ReplicationFactor,
		"moves": p.ReplicaMoves, "bytes": p.TotalBytes, "groups": len(p.Groups), "throttle": req.Throttle, "around_drained": fmt.Sprint(rules.leaving),
		"estimated_duration": p.ETA(engine.ETAInputs{Throttle: req.Throttle}).String()})
	return e.runPlan(ctx, req.Key, req.ID, KindReplicationFactor, p, req.Throttle)
}

// resumesReplicationFactor says whether an unfinished change heads for rf
// (or for nothing in particular, having no plan): then it is resumed, and
// otherwise cancelled.
func resumesReplicationFactor(prev *Operation, rf int) bool {
	return prev.TargetReplicationFactor() == rf || prev.TargetReplicationFactor() == 0
}

// ReplicationFactorCost is what a change of a topic's replication factor
// would do now (PreviewReplicationFactorCost).
type ReplicationFactorCost struct {
	// Resumes is the unfinished change to the same factor that the apply
	// resumes; its Remaining is then the cost, and Plan is empty.
	Resumes *Operation
	// Plan is what the apply runs, after the cancel of Cancels when an
	// unfinished change heads for another factor. Its moving partitions
	// carry their recent write rate when it could be read.
	Plan    *engine.Plan
	Cancels *Cancellation
	// PendingUpload says which partitions' new replicas cannot start
	// until a record is written to them, as Preview.PendingUpload.
	PendingUpload string
}

// CostReadError says which read a preview of a change could not make.
type CostReadError struct {
	// Reassignments is true when the reassignments in flight could not be
	// listed, false when the operation stored under the key could not be
	// loaded.
	Reassignments bool
	Err           error
}

func (e *CostReadError) Error() string { return e.Err.Error() }

func (e *CostReadError) Unwrap() error { return e.Err }

// PreviewReplicationFactorCost is what ChangeReplicationFactor under key
// would do now on c (PreviewReplicationFactorFrom), reading the operation
// stored under key and, when it is unfinished, the reassignments in
// flight: a move that only adds a replica looks done in Metadata from its
// start, and only they say which are not. A failed read is a
// *CostReadError; a refused plan is the planner's error.
func (e *Executor) PreviewReplicationFactorCost(ctx context.Context, key string, c engine.Cluster, topic string, rf int, throttle int64) (ReplicationFactorCost, error) {
	var out ReplicationFactorCost
	prev, err := e.d.Store.Load(ctx, key)
	if err != nil {
		return out, &CostReadError{Err: err}
	}
	var reassigning []Reassignment
	if prev != nil && !prev.Done() {
		if reassigning, err = e.d.Kafka.Reassignments(ctx); err != nil {
			return out, &CostReadError{Reassignments: true, Err: err}
		}
		if reassigning == nil {
			reassigning = []Reassignment{}
		}
	}
	rules, err := e.placementRules(ctx, key)
	if err != nil {
		return out, &CostReadError{Err: fmt.Errorf("reading the unfinished operations: %w", err)}
	}
	out.Plan, out.Cancels, err = PreviewReplicationFactorFrom(c, prev, reassigning, topic, rf, throttle, rules.leaving, rules.options.DemotedBrokers)
	if err != nil {
		return out, err
	}
	if prev != nil && !prev.Done() && out.Cancels == nil {
		out.Resumes = prev
		return out, nil
	}
	if err := MeasureGrowth(ctx, e.d.Kafka, out.Plan); err != nil {
		e.d.Log.Warn(ctx, "could not read the moving partitions' recent writes; the estimate leaves out the catch-up", map[string]any{"error": err.Error()})
	}
	out.PendingUpload = pendingUploadNote(engine.PendingUploadUnknownMoves(c, out.Plan))
	return out, nil
}
