package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reassignment is one partition reassignment in progress (KIP-455).
type Reassignment struct {
	Topic     string
	Partition int32
	// Replicas is the union of the old and new replicas while it runs.
	Replicas []int32
	Adding   []int32
	Removing []int32
}

// Assignment is the full, ordered replica list one partition should have.
type Assignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// PartitionError is the failure of one partition inside a request that
// otherwise went through.
type PartitionError struct {
	Topic     string
	Partition int32
	Err       error
}

func (e PartitionError) Error() string { return fmt.Sprintf("%s p%d: %v", e.Topic, e.Partition, e.Err) }

// PartitionErrors collects per-partition failures, sorted, so one bad
// partition does not hide the others.
type PartitionErrors []PartitionError

func (es PartitionErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return fmt.Sprintf("%d partition(s) failed: %s", len(es), strings.Join(parts, "; "))
}

func (es PartitionErrors) orNil() error {
	if len(es) == 0 {
		return nil
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].Topic != es[j].Topic {
			return es[i].Topic < es[j].Topic
		}
		return es[i].Partition < es[j].Partition
	})
	return es
}

// ListReassignments returns every reassignment in progress, sorted.
func (c *Client) ListReassignments(ctx context.Context) ([]Reassignment, error) {
	var out []Reassignment
	err := c.readAny(ctx, "listing partition reassignments", func(ctx context.Context) error {
		// Topics left null asks for every reassignment. kadm's helper
		// returns an empty answer for an empty topic set without asking.
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		req.TimeoutMillis = int32(c.cfg.RequestTimeout.Milliseconds())
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if resp.ErrorMessage != nil {
				return fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
			}
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				out = append(out, Reassignment{
					Topic: t.Topic, Partition: p.Partition,
					Replicas: p.Replicas, Adding: p.AddingReplicas, Removing: p.RemovingReplicas,
				})
			}
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Topic != out[j].Topic {
				return out[i].Topic < out[j].Topic
			}
			return out[i].Partition < out[j].Partition
		})
		return nil
	})
	return out, err
}

// buildAlterAssignments turns assignments into kadm's request; a nil
// Replicas cancels that partition's reassignment.
func buildAlterAssignments(as []Assignment) kadm.AlterPartitionAssignmentsReq {
	req := make(kadm.AlterPartitionAssignmentsReq)
	for _, a := range as {
		if a.Replicas == nil {
			req.CancelAssign(a.Topic, a.Partition)
			continue
		}
		req.Assign(a.Topic, a.Partition, append([]int32(nil), a.Replicas...))
	}
	return req
}

// AlterAssignments submits one AlterPartitionAssignments request. A failed
// request is the returned error; partitions Kafka refused come back as
// PartitionErrors, and the others were accepted. Empty input sends nothing.
func (c *Client) AlterAssignments(ctx context.Context, as []Assignment) error {
	if len(as) == 0 {
		return nil
	}
	var perPartition PartitionErrors
	err := c.withTimeout(ctx, "submitting partition reassignments", func(ctx context.Context) error {
		resp, err := c.admin.AlterPartitionAssignments(ctx, buildAlterAssignments(as))
		if err != nil {
			return err
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				e := r.Err
				if r.ErrMessage != "" {
					e = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
				}
				perPartition = append(perPartition, PartitionError{Topic: r.Topic, Partition: r.Partition, Err: e})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return perPartition.orNil()
}

// ErrNoReplicationFactorGuard is what ReassignKeepingReplicationFactor
// returns when a broker does not know the guard (Kafka before 4.0).
var ErrNoReplicationFactorGuard = errors.New("the brokers do not know the replication factor guard of AlterPartitionReassignments v1 (KIP-860, Kafka 4.0)")

// alterReassignmentsKey is the API key of AlterPartitionReassignments.
const alterReassignmentsKey = 45

// checkReplicationFactorGuard returns ErrNoReplicationFactorGuard unless
// every broker that answers knows AlterPartitionReassignments v1. A
// cluster seen to know it is not asked again: brokers are not downgraded
// below 4.0 under a running client.
func (c *Client) checkReplicationFactorGuard(ctx context.Context) error {
	if c.rfGuard.Load() {
		return nil
	}
	vs, err := c.admin.ApiVersions(ctx)
	if err != nil {
		return err
	}
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			continue // a broker down: the request goes to one that answered
		}
		if maxV, ok := v.KeyMaxVersion(alterReassignmentsKey); !ok || maxV < 1 {
			return fmt.Errorf("broker %d: %w", v.NodeID, ErrNoReplicationFactorGuard)
		}
	}
	c.rfGuard.Store(true)
	return nil
}

// ReassignKeepingReplicationFactor submits as with Kafka's guard against a
// change of replication factor (KIP-860): the controller refuses a target
// whose size differs from the partition's replica count as the controller
// has it, and takes the others. A target a partition already has is a
// no-op there. So it asks the controller itself, which no broker's
// metadata can be ahead of, whether a partition has as many replicas as
// the target. It returns the assignments the controller took. When a
// broker does not know the guard (it would send version 0, which drops
// it), nothing is sent and the error is ErrNoReplicationFactorGuard.
func (c *Client) ReassignKeepingReplicationFactor(ctx context.Context, as []Assignment) ([]Assignment, error) {
	if len(as) == 0 {
		return nil, nil
	}
	var taken []Assignment
	err := c.withTimeout(ctx, "submitting partition reassignments that keep their replication factor", func(ctx context.Context) error {
		if err := c.checkReplicationFactorGuard(ctx); err != nil {
			return err
		}
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.TimeoutMillis = int32(c.cfg.RequestTimeout.Milliseconds())
		req.AllowReplicationFactorChange = false
		byTopic := map[string]int{}
		for _, a := range as {
			i, ok := byTopic[a.Topic]
			if !ok {
				i = len(req.Topics)
				byTopic[a.Topic] = i
				t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
				t.Topic = a.Topic
				req.Topics = append(req.Topics, t)
			}
			p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			p.Partition, p.Replicas = a.Partition, slices.Clone(a.Replicas)
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
		}
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		if err := errWithMessage("AlterPartitionReassignments", resp.ErrorCode, resp.ErrorMessage); err != nil {
			return err
		}
		var failed PartitionErrors
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				err := errWithMessage("AlterPartitionReassignments", p.ErrorCode, p.ErrorMessage)
				switch {
				case err == nil:
					i := slices.IndexFunc(as, func(a Assignment) bool { return a.Topic == t.Topic && a.Partition == p.Partition })
					if i >= 0 {
						taken = append(taken, as[i])
					}
				case errors.Is(err, kerr.InvalidReplicationFactor):
					// The controller has another replica count: refused,
					// and nothing changed.
				default:
					failed = append(failed, PartitionError{Topic: t.Topic, Partition: p.Partition, Err: err})
				}
			}
		}
		return failed.orNil()
	})
	return taken, err
}

// CancelReassignments stops the given partitions' reassignments, leaving
// them on their original replicas. A partition whose reassignment finished
// after it was listed answers NO_REASSIGNMENT_IN_PROGRESS: it is not moving
// any more, which is what a cancel wants, so that is not an error.
func (c *Client) CancelReassignments(ctx context.Context, parts []Assignment) error {
	cancel := make([]Assignment, len(parts))
	for i, p := range parts {
		cancel[i] = Assignment{Topic: p.Topic, Partition: p.Partition}
	}
	err := c.AlterAssignments(ctx, cancel)
	var pe PartitionErrors
	if errors.As(err, &pe) {
		pe = slices.DeleteFunc(pe, func(e PartitionError) bool { return errors.Is(e.Err, kerr.NoReassignmentInProgress) })
		return pe.orNil()
	}
	return err
}

// ElectPreferredLeaders moves leadership back to each partition's first
// replica. Partitions already led by it are not errors.
func (c *Client) ElectPreferredLeaders(ctx context.Context, parts []Assignment) error {
	if len(parts) == 0 {
		return nil
	}
	set := make(kadm.TopicsSet)
	for _, p := range parts {
		set.Add(p.Topic, p.Partition)
	}
	var perPartition PartitionErrors
	err := c.withTimeout(ctx, "electing preferred leaders", func(ctx context.Context) error {
		resp, err := c.admin.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		if err != nil {
			return err
		}
		for _, ps := range resp {
			for _, r := range ps {
				if r.Err == nil || errors.Is(r.Err, kerr.ElectionNotNeeded) {
					continue
				}
				perPartition = append(perPartition, PartitionError{Topic: r.Topic, Partition: r.Partition, Err: fmt.Errorf("%w %s", r.Err, r.ErrMessage)})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return perPartition.orNil()
}
