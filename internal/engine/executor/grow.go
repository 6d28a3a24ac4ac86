package executor

import (
	"context"
	"fmt"
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
	var res GrowResult
	pl, err := e.d.Placer.BeginPlacement(ctx)
	if err != nil {
		return res, fmt.Errorf("reading the cluster to place the new partitions of %s: %w", req.Topic, err)
	}
	view := pl.View()
	for _, p := range view.Partitions {
		if p.Topic == req.Topic {
			res.From++
		}
	}
	if req.Partitions <= res.From {
		pl.Release()
		return res, engine.CheckNoShrink(req.Topic, res.From, req.Partitions)
	}
	added, err := engine.PlacePartitions(view, req.Topic, req.Partitions, 0, engine.DefaultOptions())
	if err != nil {
		pl.Release()
		return res, err
	}
	err = pl.CreatePartitions(ctx, req.Topic, added)
	pl.Release()
	if err != nil {
		return res, err
	}
	res.Added = added
	e.d.Log.Info(ctx, "added partitions", map[string]any{"topic": req.Topic, "from": res.From, "to": req.Partitions, "assignment": AssignmentText(added)})
	if err := e.d.Placer.AwaitPartitionsReady(ctx, req.Topic, req.Partitions); err != nil {
		return res, &PartitionsNotReadyError{Topic: req.Topic, From: res.From, To: req.Partitions, Added: added, Err: err}
	}
	return res, nil
}

// AssignmentText is placed partitions as a log shows them: "p6:[1 4] …".
func AssignmentText(ps []engine.Partition) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("p%d:%v", p.Partition, p.Replicas)
	}
	return strings.Join(parts, " ")
}
