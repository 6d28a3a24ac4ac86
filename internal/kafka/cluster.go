package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerDescription is one broker with the load it carries.
type BrokerDescription struct {
	ID   int32
	Host string
	Port int32
	Rack string
	// Replicas is the number of partition replicas the broker hosts.
	Replicas int
	// PreferredLeaders counts partitions whose first replica is this broker.
	PreferredLeaders int
	// Leaders counts partitions this broker leads right now.
	Leaders int
	// BytesOnDisk sums the sizes of every replica in the broker's log dirs.
	BytesOnDisk int64
	// DiskTotalBytes and DiskUsableBytes describe the volumes holding the
	// broker's log dirs (KIP-827); -1 when the broker does not report them.
	DiskTotalBytes  int64
	DiskUsableBytes int64
}

// ClusterDescription is a consistent read of the cluster's shape.
type ClusterDescription struct {
	ClusterID string
	// ControllerID is the active KRaft controller (the leader of the
	// metadata quorum), not the random broker Metadata names for clients.
	ControllerID int32
	Brokers      []BrokerDescription // sorted by id
}

// DescribeCluster reads brokers, their replica and leader counts and their
// bytes on disk. It makes three requests: Metadata, DescribeQuorum and
// DescribeLogDirs (fanned out to every broker by kadm).
func (c *Client) DescribeCluster(ctx context.Context) (ClusterDescription, error) {
	var out ClusterDescription
	err := c.withTimeout(ctx, "describing the cluster", func(ctx context.Context) error {
		md, err := c.admin.Metadata(ctx)
		if err != nil {
			return err
		}
		out.ClusterID = md.Cluster
		byID := make(map[int32]*BrokerDescription, len(md.Brokers))
		for _, b := range md.Brokers {
			rack := ""
			if b.Rack != nil {
				rack = *b.Rack
			}
			out.Brokers = append(out.Brokers, BrokerDescription{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: rack, DiskTotalBytes: -1, DiskUsableBytes: -1})
		}
		sort.Slice(out.Brokers, func(i, j int) bool { return out.Brokers[i].ID < out.Brokers[j].ID })
		for i := range out.Brokers {
			byID[out.Brokers[i].ID] = &out.Brokers[i]
		}
		for _, t := range md.Topics {
			if skip, err := topicFailed(t); skip {
				continue
			} else if err != nil {
				return err
			}
			for _, p := range t.Partitions {
				for i, r := range p.Replicas {
					if b := byID[r]; b != nil {
						b.Replicas++
						if i == 0 {
							b.PreferredLeaders++
						}
					}
				}
				if b := byID[p.Leader]; b != nil {
					b.Leaders++
				}
			}
		}

		ctrl, err := c.activeController(ctx)
		if err != nil {
			return err
		}
		out.ControllerID = ctrl

		dirs, err := c.admin.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			return err
		}
		for broker, ds := range dirs {
			b := byID[broker]
			if b == nil {
				continue
			}
			var total, usable int64
			reported := false
			for _, d := range ds {
				if d.Err != nil {
					return fmt.Errorf("log dir %s on broker %d: %w", d.Dir, broker, d.Err)
				}
				b.BytesOnDisk += d.Size()
				if d.TotalBytes >= 0 {
					reported = true
					total += d.TotalBytes
					usable += d.UsableBytes
				}
			}
			if reported {
				b.DiskTotalBytes, b.DiskUsableBytes = total, usable
			}
		}
		return nil
	})
	return out, err
}

// activeController asks the metadata quorum for its leader. Under KRaft the
// controller id in a Metadata response is a random broker, so it cannot say
// which controller is active.
func (c *Client) activeController(ctx context.Context) (int32, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	p.Partition = 0
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, c.kgo)
	if err != nil {
		return -1, fmt.Errorf("DescribeQuorum: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, fmt.Errorf("DescribeQuorum: %w", err)
	}
	for _, t := range resp.Topics {
		if len(t.Partitions) == 0 {
			continue
		}
		// The metadata log has one partition.
		p := t.Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return -1, fmt.Errorf("DescribeQuorum %s-%d: %w", t.Topic, p.Partition, err)
		}
		return p.LeaderID, nil
	}
	return -1, fmt.Errorf("DescribeQuorum returned no partition for __cluster_metadata")
}

// topicFailed sorts a topic's metadata error: a topic that does not exist
// (deleted meanwhile, or one the client once asked about and franz-go keeps
// asking for) is skipped; any other error fails the read.
func topicFailed(t kadm.TopicDetail) (skip bool, err error) {
	switch {
	case t.Err == nil:
		return false, nil
	case errors.Is(t.Err, kerr.UnknownTopicOrPartition):
		return true, nil
	default:
		return false, fmt.Errorf("topic %s: %w", t.Topic, t.Err)
	}
}
