package executor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// GrowRequest asks for more partitions of one topic.
type GrowRequest struct {
	// ID names the growth in the operation lease. Nothing persisted
	// resumes a growth (the next apply reads the count afresh), so the id
	// is its own.
	ID string
	// Resource names the Terraform resource, for the lease.
	Resource string
	Topic    string
	// Partitions is the count the topic grows to.
	Partitions int
}

// GrowResult is what a growth did.
type GrowResult struct {
	// From is the count the topic had when it was placed.
	From int
	// Added are the new partitions as placed (empty when the topic
	// already had the count).
	Added []engine.Partition
}

// PartitionsNotReadyError says that the new partitions were created but
// did not all get a leader and a full ISR in time. Kafka cannot take them
// back: the next apply finds the topic already grown.
type PartitionsNotReadyError struct {
	Topic    string
	From, To int
	Added    []engine.Partition
	Err      error
}

func (e *PartitionsNotReadyError) Error() string {
	return fmt.Sprintf("topic %s grew from %d to %d partitions, but not every new partition got a leader and a full ISR: %v", e.Topic, e.From, e.To, e.Err)
}

func (e *PartitionsNotReadyError) Unwrap() error { return e.Err }

// GrowPartitions grows req.Topic to req.Partitions under the operation
// lease: it places replicas, so it must not run while another operation
// moves them. Under the lease it reads the cluster as placement needs it,
// places the new partitions with the engine (rack-aware, least-loaded, at
// the topic's own replication factor), creates them as an explicit
// assignment, and waits until every new partition has a leader and a full
// ISR. A topic that already has the count is left alone; one with more
// partitions is refused with an *engine.ShrinkError.
func (e *Executor) GrowPartitions(ctx context.Context, req GrowRequest) (res GrowResult, err error) {
	if e.d.Placer == nil {
		return res, fmt.Errorf("growing topic %s: the executor has no Placer; this is a bug in kafkascale", req.Topic)
	}
	w := Work{ID: req.ID, Resource: req.Resource, What: fmt.Sprintf("grow topic %s to %d partitions", req.Topic, req.Partitions)}
	err = e.Exclusive(ctx, w, func(ctx context.Context) error {
		res, err = e.growPartitions(ctx, req)
		return err
	})
	return res, err
}

func (e *Executor) growPartitions(ctx context.Context, req GrowRequest) (GrowResult, error) {
	from, added, err := e.placeAndCreate(ctx, []string{req.Topic}, req.Partitions, true)
	return GrowResult{From: from[req.Topic], Added: added[req.Topic]}, err
}

// GrowTogether grows every one of topics with fewer than partitions
// partitions to that count, in ONE CreatePartitions request under the
// operation lease, and returns once every new partition has a leader and a
// full ISR. KRaft commits one request as one batch, so a Streams app never
// sees its sources and internal topics half grown. Topics already at the
// count, or above it, are left alone.
func (e *Executor) GrowTogether(ctx context.Context, w Work, topics []string, partitions int) (err error) {
	defer e.clearLeftThrottles(ctx, &err)
	if e.d.Placer == nil {
		return fmt.Errorf("growing topics %v: the executor has no Placer; this is a bug in kafkascale", topics)
	}
	return e.Exclusive(ctx, w, func(ctx context.Context) error {
		_, _, err := e.placeAndCreate(ctx, topics, partitions, false)
		return err
	})
}

// placeAndCreate places the new partitions of each topic below partitions
// with the engine (rack-aware, least-loaded, at the topic's own replication
// factor), each seeing the ones placed before it, creates them all in one
// request, and waits until they are ready. It returns each topic's count
// before and its new partitions. With refuseShrink, a topic above the
// count is refused with an *engine.ShrinkError; otherwise it is left alone.
func (e *Executor) placeAndCreate(ctx context.Context, topics []string, partitions int, refuseShrink bool) (map[string]int, map[string][]engine.Partition, error) {
	from := map[string]int{}
	// A paused drain holds no lease, and its brokers must not receive
	// what it would only have to move off them again.
	rules, err := e.placementRules(ctx, "")
	if err != nil {
		return from, nil, fmt.Errorf("reading the operations before placing the new partitions of %s: %w", strings.Join(topics, ", "), err)
	}
	pl, err := e.d.Placer.BeginPlacement(ctx)
	if err != nil {
		return from, nil, fmt.Errorf("reading the cluster to place the new partitions of %s: %w", strings.Join(topics, ", "), err)
	}
	defer pl.Release()
	// A copy: the placement counts each topic's current partitions from
	// its own view when it creates the new ones.
	view := pl.View()
	view.Partitions = slices.Clone(view.Partitions)
	for _, p := range view.Partitions {
		if slices.Contains(topics, p.Topic) {
			from[p.Topic]++
		}
	}
	added := map[string][]engine.Partition{}
	var problems []error
	for _, t := range topics {
		if partitions <= from[t] {
			if refuseShrink {
				if err := engine.CheckNoShrink(t, from[t], partitions); err != nil {
					problems = append(problems, err)
				}
			}
			continue
		}
		ps, err := engine.PlacePartitionsAround(view, rules.leaving, t, partitions, 0, rules.options)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		added[t] = ps
		view.Partitions = append(view.Partitions, ps...)
	}
	if len(problems) > 0 || len(added) == 0 {
		return from, nil, errors.Join(problems...)
	}
	if err := pl.CreatePartitions(ctx, added); err != nil {
		return from, nil, err
	}
	pl.Release()
	grown := slices.Sorted(maps.Keys(added))
	for _, t := range grown {
		e.d.Log.Info(ctx, "added partitions", map[string]any{"topic": t, "from": from[t], "to": partitions, "assignment": AssignmentText(added[t])})
	}
	for _, t := range grown {
		if err := e.d.Placer.AwaitPartitionsReady(ctx, t, partitions); err != nil {
			return from, added, &PartitionsNotReadyError{Topic: t, From: from[t], To: partitions, Added: added[t], Err: err}
		}
	}
	return from, added, nil
}

// AssignmentText is placed partitions as a log shows them: "p6:[1 4] …".
func AssignmentText(ps []engine.Partition) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("p%d:%v", p.Partition, p.Replicas)
	}
	return strings.Join(parts, " ")
}
