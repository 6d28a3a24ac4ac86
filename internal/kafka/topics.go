package kafka

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// buildCreateTopic builds a CreateTopics request that places every replica
// explicitly, so placement is the engine's decision and not the
// controller's. assignment maps partition index to ordered replicas and must
// cover 0..n-1.
func buildCreateTopic(topic string, assignment map[int32][]int32, configs map[string]string) (*kmsg.CreateTopicsRequest, error) {
	if len(assignment) == 0 {
		return nil, fmt.Errorf("topic %s: no partitions to create", topic)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = topic
	t.NumPartitions, t.ReplicationFactor = -1, -1
	parts := make([]int32, 0, len(assignment))
	for p := range assignment {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for i, p := range parts {
		if p != int32(i) {
			return nil, fmt.Errorf("topic %s: partitions must be numbered 0..%d, partition %d is missing", topic, len(parts)-1, i)
		}
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition = p
		ra.Replicas = append([]int32(nil), assignment[p]...)
		t.ReplicaAssignment = append(t.ReplicaAssignment, ra)
	}
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := configs[k]
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, &v
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	return req, nil
}

// CreateTopic creates a topic with an explicit replica assignment.
func (c *Client) CreateTopic(ctx context.Context, topic string, assignment map[int32][]int32, configs map[string]string) error {
	req, err := buildCreateTopic(topic, assignment, configs)
	if err != nil {
		return err
	}
	return c.withTimeout(ctx, "creating topic "+topic, func(ctx context.Context) error {
		req.TimeoutMillis = int32(c.cfg.RequestTimeout.Milliseconds())
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				if t.ErrorMessage != nil {
					return fmt.Errorf("topic %s: %w: %s", t.Topic, err, *t.ErrorMessage)
				}
				return fmt.Errorf("topic %s: %w", t.Topic, err)
			}
		}
		return nil
	})
}
