package kafka

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// PartitionState is one partition as the cluster sees it now.
type PartitionState struct {
	Topic     string
	Partition int32
	// Replicas is the assignment in preference order. During a reassignment
	// Metadata reports the union of the old and new replicas.
	Replicas []int32
	ISR      []int32
	// Leader is -1 when the partition has no leader (offline).
	Leader int32
	// SizeBytes is the largest size any replica reports: the leader's log is
	// the one a new replica has to copy.
	SizeBytes int64
	Internal  bool
}

// UnderReplicated reports whether some assigned replica is out of sync.
func (p PartitionState) UnderReplicated() bool { return len(p.ISR) < len(p.Replicas) }

// Offline reports whether the partition has no leader.
func (p PartitionState) Offline() bool { return p.Leader < 0 }

// BrokerState is one registered broker and its disk.
type BrokerState struct {
	ID   int32
	Rack string
	// UsedBytes sums the replicas in the broker's log dirs.
	UsedBytes int64
	// CapacityBytes is the total size of the volumes holding the log dirs,
	// 0 when the broker does not report it.
	CapacityBytes int64
	// FreeBytes is what the volumes have free, 0 when unreported.
	FreeBytes int64
	// Fenced is true for a registered broker that is not running or not
	// caught up with the controller: Metadata hides it, the registrations
	// list it.
	Fenced bool
}

// Snapshot is a read of brokers and partitions, sorted by id and by topic
// and partition, that the engine plans from.
type Snapshot struct {
	ClusterID  string
	Brokers    []BrokerState
	Partitions []PartitionState
}

// Snapshot reads every partition (internal topics included) with its size,
// and every broker with its disk, in three requests: the registrations
// (fenced brokers included), Metadata and a fan-out of DescribeLogDirs.
func (c *Client) Snapshot(ctx context.Context) (Snapshot, error) {
	at, gen := time.Now(), c.recent.writes.Load()
	s, err := c.snapshot(ctx)
	if err == nil {
		c.recent.keep(s, at, gen)
	}
	return s, err
}

func (c *Client) snapshot(ctx context.Context) (Snapshot, error) {
	var out Snapshot
	regs, err := c.Registrations(ctx)
	if err != nil {
		return out, err
	}
	err = c.withTimeout(ctx, "reading the cluster's partitions", func(ctx context.Context) error {
		md, err := c.admin.Metadata(ctx)
		if err != nil {
			return err
		}
		out.ClusterID = md.Cluster
		sizes := make(map[string]map[int32]int64)
		byID := make(map[int32]int)
		listed := make(map[int32]bool)
		for _, b := range md.Brokers {
			rack := ""
			if b.Rack != nil {
				rack = *b.Rack
			}
			out.Brokers = append(out.Brokers, BrokerState{ID: b.NodeID, Rack: rack})
			listed[b.NodeID] = true
		}
		for _, r := range regs {
			if !listed[r.ID] {
				out.Brokers = append(out.Brokers, BrokerState{ID: r.ID, Rack: r.Rack, Fenced: true})
			}
		}
		sort.Slice(out.Brokers, func(i, j int) bool { return out.Brokers[i].ID < out.Brokers[j].ID })
		for i, b := range out.Brokers {
			byID[b.ID] = i
		}

		dirs, err := c.admin.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			return err
		}
		for broker, ds := range dirs {
			i, ok := byID[broker]
			if !ok {
				continue
			}
			b := &out.Brokers[i]
			for _, d := range ds {
				if d.Err != nil {
					return fmt.Errorf("log dir %s on broker %d: %w", d.Dir, broker, d.Err)
				}
				if d.TotalBytes > 0 {
					b.CapacityBytes += d.TotalBytes
					b.FreeBytes += d.UsableBytes
				}
				for topic, ps := range d.Topics {
					for p, lp := range ps {
						b.UsedBytes += lp.Size
						if lp.IsFuture {
							continue // an intra-broker copy, not the partition's size
						}
						m := sizes[topic]
						if m == nil {
							m = make(map[int32]int64)
							sizes[topic] = m
						}
						if lp.Size > m[p] {
							m[p] = lp.Size
						}
					}
				}
			}
		}

		for _, t := range md.Topics.Sorted() {
			if skip, err := topicFailed(t); skip {
				continue
			} else if err != nil {
				return err
			}
			for _, p := range t.Partitions.Sorted() {
				out.Partitions = append(out.Partitions, PartitionState{
					Topic:     t.Topic,
					Partition: p.Partition,
					Replicas:  append([]int32(nil), p.Replicas...),
					ISR:       append([]int32(nil), p.ISR...),
					Leader:    p.Leader,
					SizeBytes: sizes[t.Topic][p.Partition],
					Internal:  t.IsInternal,
				})
			}
		}
		return nil
	})
	return out, err
}
