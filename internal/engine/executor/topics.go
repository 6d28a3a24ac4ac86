package executor

// Creating, configuring and deleting a topic, beside whatever operation is
// unfinished on the cluster.
//
// The rule, in one place (beside): a change to a topic waits for the
// cluster's operation lease only when it could break an operation that is
// unfinished now; otherwise it runs at once, so that a drain of hours does
// not hold up a new topic or a retention change of a topic it does not
// move.
//   - Creating a topic never waits. It places the new partitions around
//     the brokers an unfinished operation drains (read from that
//     operation's record, so on Kafka without the cordon of KIP-1066 too)
//     and counts each partition a move in flight reassigns as the replicas
//     it heads for (the Placer's view).
//   - Changing the configs of, or deleting, a topic that an unfinished
//     operation moves waits for the lease. A deleted topic makes the
//     operation's plan wrong (it stops, as changed outside kafkascale),
//     and a config such as min.insync.replicas changes what a move may
//     cost the topic's producers; after the operation both are safe.
//   - Changing the configs of, or deleting, any other topic runs at once.
//
// Growing a topic or changing its replication factor moves or places
// replicas against the plan of a running operation, so those always take
// the lease (GrowPartitions, ChangeReplicationFactor).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// CreateTopicRequest asks for a new topic.
type CreateTopicRequest struct {
	// Resource names the Terraform resource, for the log.
	Resource          string
	Topic             string
	Partitions        int
	ReplicationFactor int
	// Configs are the topic's own configs.
	Configs map[string]string
}

// CreateTopicResult is what a creation did.
type CreateTopicResult struct {
	// Placed are the topic's partitions as created.
	Placed []engine.Partition
	// Leaving are the brokers the placement kept clear of, because an
	// unfinished operation drains them.
	Leaving []int32
}

// TopicExistsError says the topic to create is already there.
type TopicExistsError struct {
	Topic string
	// Partitions are the existing topic's, as the placement read them.
	Partitions []engine.Partition
}

func (e *TopicExistsError) Error() string {
	return fmt.Sprintf("topic %s already exists (%d partitions)", e.Topic, len(e.Partitions))
}

// createAttempts bounds how often a creation places again after Kafka
// refused a cordoned broker: each attempt reads the unfinished operations
// afresh, and a drain that began in between is on record by then.
const createAttempts = 3

// CreateTopic creates req.Topic with its partitions placed by the engine
// (rack-aware, least-loaded) around the brokers unfinished operations
// drain, and waits until every partition has a leader and a full ISR and
// every broker serves its configs. It takes no lease (see beside): a topic
// created while a drain runs must not wait hours behind it.
//
// A topic that already exists is a *TopicExistsError; partitions created
// that did not become ready in time are a *PartitionsNotReadyError (Kafka
// cannot take them back).
func (e *Executor) CreateTopic(ctx context.Context, req CreateTopicRequest) (res CreateTopicResult, err error) {
	defer e.clearLeftThrottles(ctx, &err)
	if e.d.Placer == nil || e.d.Topics == nil {
		return res, fmt.Errorf("creating topic %s: the executor has no Placer or Topics port; this is a bug in kafkascale", req.Topic)
	}
	for attempt := 1; ; attempt++ {
		rules, err := e.placementRules(ctx, "")
		if err != nil {
			return res, fmt.Errorf("reading the operations before placing topic %s: %w", req.Topic, err)
		}
		res.Leaving = rules.leaving
		res.Placed, err = e.placeTopic(ctx, req, rules)
		if errors.Is(err, ErrCordoned) && attempt < createAttempts {
			e.d.Log.Info(ctx, "Kafka refused a cordoned broker for the new topic; placing it again", map[string]any{
				"topic": req.Topic, "attempt": attempt, "error": err.Error()})
			continue
		}
		if err != nil {
			return res, err
		}
		break
	}
	f := map[string]any{"topic": req.Topic, "partitions": req.Partitions, "replication_factor": req.ReplicationFactor,
		"assignment": AssignmentText(res.Placed)}
	if len(res.Leaving) > 0 {
		f["placed_around_leaving_brokers"] = fmt.Sprint(res.Leaving)
	}
	e.d.Log.Info(ctx, "created topic", f)
	err = e.d.Topics.AwaitTopicReady(ctx, req.Topic, req.Partitions, req.ReplicationFactor)
	if err == nil {
		err = e.d.Topics.AwaitTopicConfigs(ctx, req.Topic, req.Configs, nil)
	}
	if err != nil {
		return res, &PartitionsNotReadyError{Topic: req.Topic, From: 0, To: req.Partitions, Added: res.Placed, Err: err}
	}
	return res, nil
}

// placeTopic places and creates the topic under the placement lock, so
// that topics created at once each see the ones placed before them.
func (e *Executor) placeTopic(ctx context.Context, req CreateTopicRequest, rules placement) ([]engine.Partition, error) {
	pl, err := e.d.Placer.BeginPlacement(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster to place topic %s: %w", req.Topic, err)
	}
	defer pl.Release()
	view := pl.View()
	var existing []engine.Partition
	for _, p := range view.Partitions {
		if p.Topic == req.Topic {
			existing = append(existing, p)
		}
	}
	if len(existing) > 0 {
		// Placing it again would only fail on "partitions must grow":
		// what the caller is looking at is an existing topic.
		return nil, &TopicExistsError{Topic: req.Topic, Partitions: existing}
	}
	placed, err := engine.PlacePartitionsAround(view, rules.leaving, req.Topic, req.Partitions, req.ReplicationFactor, rules.options)
	if err != nil {
		return nil, err
	}
	if err := pl.CreateTopic(ctx, req.Topic, placed, req.Configs); err != nil {
		return nil, &PlacementRefusedError{Topic: req.Topic, Placed: placed, Err: err}
	}
	return placed, nil
}

// PlacementRefusedError says Kafka refused to create partitions where the
// engine placed them. It is Kafka's refusal of kafkascale's assignment, not
// a mistake in what the user asked for: Err says why (a cordoned broker, a
// policy, a topic that appeared meanwhile).
type PlacementRefusedError struct {
	Topic  string
	Placed []engine.Partition
	Err    error
}

func (e *PlacementRefusedError) Error() string {
	return fmt.Sprintf("Kafka refused to create topic %s on brokers %v, where kafkascale placed it: %v", e.Topic, placedBrokers(e.Placed), e.Err)
}

func (e *PlacementRefusedError) Unwrap() error { return e.Err }

// placedBrokers are the brokers placed partitions use, ascending.
func placedBrokers(ps []engine.Partition) []int32 {
	seen := map[int32]bool{}
	for _, p := range ps {
		for _, b := range p.Replicas {
			seen[b] = true
		}
	}
	return sortedKeys(seen)
}

// TopicConfigRequest asks for a change of a topic's own configs.
type TopicConfigRequest struct {
	// ID names the change in the operation lease, should it wait for it.
	ID       string
	Resource string
	Topic    string
	Set      map[string]string
	Delete   []string
}

// AlterTopicConfigs sets and deletes the topic's own configs and returns
// once every broker serves them, after the operation that moves the topic,
// if one is unfinished (see beside).
func (e *Executor) AlterTopicConfigs(ctx context.Context, req TopicConfigRequest) error {
	if len(req.Set) == 0 && len(req.Delete) == 0 {
		return nil
	}
	if e.d.Topics == nil {
		return fmt.Errorf("changing the configs of topic %s: the executor has no Topics port; this is a bug in kafkascale", req.Topic)
	}
	w := Work{ID: req.ID, Resource: req.Resource, What: "change the configs of topic " + req.Topic}
	return e.beside(ctx, req.Topic, w, func(ctx context.Context) error {
		if err := e.d.Topics.AlterTopicConfigs(ctx, req.Topic, req.Set, req.Delete); err != nil {
			return err
		}
		e.d.Log.Info(ctx, "changed topic configs", map[string]any{"topic": req.Topic, "set": strings.Join(slices.Sorted(maps.Keys(req.Set)), ","),
			"deleted": strings.Join(req.Delete, ",")})
		return nil
	})
}

// TopicDeleteRequest asks for a topic's deletion.
type TopicDeleteRequest struct {
	ID       string
	Resource string
	Topic    string
}

// DeleteTopic deletes the topic and returns once no broker lists it, after
// the operation that moves it, if one is unfinished (see beside).
func (e *Executor) DeleteTopic(ctx context.Context, req TopicDeleteRequest) error {
	if e.d.Topics == nil {
		return fmt.Errorf("deleting topic %s: the executor has no Topics port; this is a bug in kafkascale", req.Topic)
	}
	w := Work{ID: req.ID, Resource: req.Resource, What: "delete topic " + req.Topic}
	return e.beside(ctx, req.Topic, w, func(ctx context.Context) error {
		if err := e.d.Topics.DeleteTopic(ctx, req.Topic); err != nil {
			return err
		}
		e.d.Log.Info(ctx, "deleted topic", map[string]any{"topic": req.Topic})
		return nil
	})
}

// UpdateTopicRequest asks for a change of an existing topic: any of its
// own configs, its replication factor and its partition count.
type UpdateTopicRequest struct {
	// ID names the change: the replication factor change takes it as its
	// operation's id, the other steps as their lease's, with a suffix.
	ID       string
	Resource string
	Topic    string
	// Set and Delete change the topic's own configs; none leaves them.
	Set    map[string]string
	Delete []string
	// ReplicationFactor, when not zero, is the factor every partition
	// goes to, as a change persisted under Key at Throttle
	// (ChangeReplicationFactor).
	ReplicationFactor int
	Key               string
	Throttle          int64
	// BeforeReplicationFactor, when set, runs once the configs are in
	// force and before the replication factor change starts: the caller
	// records there where an interrupted change is to be found.
	BeforeReplicationFactor func(ctx context.Context) error
	// Partitions, when not zero, is the count the topic grows to.
	Partitions int
}

// UpdateStep is a step of a topic's update, in the order they run.
type UpdateStep int

const (
	// StepConfigs changes the topic's own configs.
	StepConfigs UpdateStep = iota
	// StepReplicationFactor changes the replication factor, and
	// StepReplicasInSync waits until every broker shows every partition
	// with its new replicas in sync.
	StepReplicationFactor
	StepReplicasInSync
	// StepGrowth adds partitions.
	StepGrowth
)

// UpdateTopicError says which step of a topic's update failed; the steps
// before it are done, the ones after it not started.
type UpdateTopicError struct {
	Step UpdateStep
	// Operation is the replication factor change that ran last, when the
	// step is StepReplicationFactor (nil when nothing had to move).
	Operation *Operation
	Err       error
}

func (e *UpdateTopicError) Error() string { return e.Err.Error() }

func (e *UpdateTopicError) Unwrap() error { return e.Err }

// UpdateTopic changes an existing topic, one step after another, each
// under the rule of its own entry point (AlterTopicConfigs,
// ChangeReplicationFactor, GrowPartitions). The order is the rule:
//   - configs first: a lower min.insync.replicas must be in force before
//     the replication factor drops under the old one;
//   - then the replication factor, so that new partitions are created
//     with the new one and nothing is copied twice;
//   - then the growth.
//
// A step that fails stops the update, as an *UpdateTopicError.
func (e *Executor) UpdateTopic(ctx context.Context, req UpdateTopicRequest) (err error) {
	defer e.clearLeftThrottles(ctx, &err)
	fail := func(step UpdateStep, op *Operation, err error) error {
		return &UpdateTopicError{Step: step, Operation: op, Err: err}
	}
	err = e.AlterTopicConfigs(ctx, TopicConfigRequest{ID: req.ID + "-configs", Resource: req.Resource, Topic: req.Topic,
		Set: req.Set, Delete: req.Delete})
	if err != nil {
		return fail(StepConfigs, nil, err)
	}
	if req.ReplicationFactor > 0 {
		if req.BeforeReplicationFactor != nil {
			if err := req.BeforeReplicationFactor(ctx); err != nil {
				return fail(StepReplicationFactor, nil, err)
			}
		}
		op, err := e.ChangeReplicationFactor(ctx, ReplicationFactorRequest{Key: req.Key, ID: req.ID, Resource: req.Resource,
			Topic: req.Topic, ReplicationFactor: req.ReplicationFactor, Throttle: req.Throttle})
		if err != nil {
			return fail(StepReplicationFactor, op, err)
		}
		if e.d.Topics == nil {
			return fail(StepReplicasInSync, nil, fmt.Errorf("the executor has no Topics port; this is a bug in kafkascale"))
		}
		if err := e.d.Topics.AwaitTopicReady(ctx, req.Topic, 0, req.ReplicationFactor); err != nil {
			return fail(StepReplicasInSync, nil, err)
		}
	}
	if req.Partitions > 0 {
		if _, err := e.GrowPartitions(ctx, GrowRequest{ID: req.ID + "-growth", Resource: req.Resource, Topic: req.Topic, Partitions: req.Partitions}); err != nil {
			return fail(StepGrowth, nil, err)
		}
	}
	return nil
}

// beside runs fn, a change of topic, by the rule at the top of this file:
// under the lease when an unfinished operation moves the topic, saying so
// in the log, and at once otherwise.
func (e *Executor) beside(ctx context.Context, topic string, w Work, fn func(ctx context.Context) error) error {
	running, err := e.unfinished(ctx)
	if err != nil {
		return fmt.Errorf("reading the unfinished operations before changing topic %s: %w", topic, err)
	}
	var moving []string
	for _, op := range running {
		if op.Moves(topic) {
			moving = append(moving, op.ID)
		}
	}
	if len(moving) == 0 {
		return fn(ctx)
	}
	e.d.Log.Info(ctx, "waiting for the operation lease: an unfinished operation moves this topic, and the change waits until it is over", map[string]any{
		"topic": topic, "change": w.What, "operations": strings.Join(moving, ",")})
	return e.Exclusive(ctx, w, fn)
}

// placement is what partitions placed outside a cluster operation (a new
// topic, a topic's new partitions) keep to: leaving are the brokers that
// unfinished operations drain, which receive no replica; options carry the
// brokers the cluster's configuration demotes, which lead no new partition
// another replica can lead. Both come from the operation log, which every
// working directory reads, rather than from one resource's configuration.
type placement struct {
	leaving []int32
	options engine.Options
}

// placementRules reads them from the operations on record; the unfinished
// operation under own (a key, or "") is the caller's and is left out of
// leaving.
func (e *Executor) placementRules(ctx context.Context, own string) (placement, error) {
	rules := placement{options: engine.DefaultOptions()}
	all, err := e.operations(ctx)
	if err != nil {
		return rules, err
	}
	rules.leaving = drained(slices.DeleteFunc(slices.Clone(all), func(op *Operation) bool { return op.Done() || (own != "" && op.Key == own) }))
	rules.options.DemotedBrokers = demotedNow(all)
	return rules, nil
}

// demotedNow are the brokers that the cluster's last operation (its scale,
// replacement or rebalance started last) demotes: the cluster resource
// records its demote_broker_ids in the options of every operation it runs,
// and a change of them runs a rebalance.
func demotedNow(all []*Operation) []int32 {
	var last *Operation
	for _, op := range all {
		if op.Kind == KindReplicationFactor {
			continue
		}
		if last == nil || op.StartedAt.After(last.StartedAt) {
			last = op
		}
	}
	if last == nil {
		return nil
	}
	return slices.Clone(last.Options.DemotedBrokers)
}

// operations are every operation on record. A store that cannot list has
// none to tell.
func (e *Executor) operations(ctx context.Context) ([]*Operation, error) {
	l, ok := e.d.Store.(Lister)
	if !ok {
		return nil, nil
	}
	return l.List(ctx)
}

// unfinished are the operations on record that are not over, by key.
func (e *Executor) unfinished(ctx context.Context) ([]*Operation, error) {
	all, err := e.operations(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Operation
	for _, op := range all {
		if !op.Done() {
			out = append(out, op)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// unfinishedOthers are the unfinished operations under other keys than key.
func (e *Executor) unfinishedOthers(ctx context.Context, key string) ([]*Operation, error) {
	running, err := e.unfinished(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the unfinished operations: %w", err)
	}
	return slices.DeleteFunc(running, func(op *Operation) bool { return op.Key == key }), nil
}

// drained are the brokers the operations remove, ascending.
func drained(ops []*Operation) []int32 {
	seen := map[int32]bool{}
	for _, op := range ops {
		for _, b := range op.RemoveBrokers {
			seen[b] = true
		}
	}
	return sortedKeys(seen)
}

// Moves reports whether the operation's plan moves a replica of topic or
// reorders one of its partitions. An operation that has no plan yet (its
// brokers are being added) plans from the cluster it finds once they are,
// so it moves nothing yet.
func (o *Operation) Moves(topic string) bool {
	if o.Plan == nil {
		return false
	}
	for _, m := range o.Plan.Moves() {
		if m.Topic == topic {
			return true
		}
	}
	for _, r := range o.Plan.Reorders {
		if r.Topic == topic {
			return true
		}
	}
	return false
}
