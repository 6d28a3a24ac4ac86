package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicDescription is one topic as the topic resource reads it.
type TopicDescription struct {
	Name string
	// Partitions are sorted by index. SizeBytes is not read (zero).
	Partitions []PartitionState
	// Configs are the topic's own settings (source DYNAMIC_TOPIC_CONFIG):
	// what was set on the topic, not what it inherits from the broker or
	// from Kafka's defaults.
	Configs map[string]string
	// Effective is every config in force for the topic, whatever its
	// source, with its value.
	Effective map[string]string
}

// ReplicationFactors returns the distinct replica counts of the topic's
// partitions, ascending: one value for a healthy topic, more after someone
// changed some partitions only. A partition being reassigned counts the
// replicas it has before the move: Metadata lists its old and new replicas
// together, and a move that keeps the count (any scale-out or drain) must
// not read as a change of replication factor.
func (t TopicDescription) ReplicationFactors() []int {
	seen := map[int]bool{}
	var out []int
	for _, p := range t.Partitions {
		if n := len(p.Replicas) - len(p.Adding); !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// Reassigning reports whether a reassignment of one of the topic's
// partitions is in progress.
func (t TopicDescription) Reassigning() bool {
	for _, p := range t.Partitions {
		if len(p.Adding) > 0 {
			return true
		}
	}
	return false
}

// SameConfigValue reports whether two values of a config are the same
// setting: list values ("compact, delete") compare item by item, ignoring
// the spaces around commas that Kafka drops.
func SameConfigValue(a, b string) bool {
	if a == b {
		return true
	}
	as, bs := strings.Split(a, ","), strings.Split(b, ",")
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if strings.TrimSpace(as[i]) != strings.TrimSpace(bs[i]) {
			return false
		}
	}
	return true
}

// describeConfigsChunk bounds the topics named in one DescribeConfigs
// request, which keeps each response to a few megabytes.
const describeConfigsChunk = 1000

// DescribeTopics reads the named topics (all non-internal topics when names
// is nil) in batches: one Metadata request, and one DescribeConfigs request
// per thousand topics, sent together. Topics that do not exist are absent
// from the result. A failed request, or a topic Kafka cannot describe, is
// the returned error.
func (c *Client) DescribeTopics(ctx context.Context, names []string) (map[string]TopicDescription, error) {
	if names != nil && len(names) == 0 {
		return map[string]TopicDescription{}, nil
	}
	var out map[string]TopicDescription
	err := c.withTimeout(ctx, "describing topics", func(ctx context.Context) error {
		md, err := metadataRequest(names).RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		out, err = c.describeFromMetadata(ctx, md, names == nil)
		return err
	})
	return out, err
}

// describeFromMetadata completes a Metadata response with the configs of
// its topics.
func (c *Client) describeFromMetadata(ctx context.Context, md *kmsg.MetadataResponse, skipInternal bool) (map[string]TopicDescription, error) {
	out := make(map[string]TopicDescription, len(md.Topics))
	for _, t := range md.Topics {
		d, ok, err := topicFromMetadata(t, skipInternal)
		if err != nil {
			return nil, err
		}
		if ok {
			out[d.Name] = d
		}
	}
	found := make([]string, 0, len(out))
	for n := range out {
		found = append(found, n)
	}
	sort.Strings(found)
	// The reassignments in progress are asked for beside the configs: a
	// partition that moves is listed with its old and new replicas, and
	// only the reassignment tells which are new.
	var (
		moving    []Reassignment
		movingErr error
		wg        sync.WaitGroup
	)
	if len(found) > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); moving, movingErr = c.ListReassignments(ctx) }()
	}
	configs, err := c.describeTopicConfigs(ctx, found)
	wg.Wait()
	if err == nil && movingErr != nil {
		err = fmt.Errorf("listing the reassignments in progress: %w", movingErr)
	}
	if err != nil {
		return nil, err
	}
	withAdding(out, moving)
	for _, n := range found {
		cs, ok := configs[n]
		if !ok {
			delete(out, n) // deleted between the two requests
			continue
		}
		d := out[n]
		d.Configs, d.Effective = cs.dynamic, cs.effective
		out[n] = d
	}
	return out, nil
}

// withAdding marks, in the topics of out, the replicas that the
// reassignments rs add.
func withAdding(out map[string]TopicDescription, rs []Reassignment) {
	for _, r := range rs {
		d, ok := out[r.Topic]
		if !ok || len(r.Adding) == 0 {
			continue
		}
		for i := range d.Partitions {
			if d.Partitions[i].Partition == r.Partition {
				d.Partitions[i].Adding = append([]int32(nil), r.Adding...)
			}
		}
	}
}

// metadataRequest asks for the named topics, or for every topic when names
// is nil, and never creates one.
func metadataRequest(names []string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	if names != nil {
		req.Topics = make([]kmsg.MetadataRequestTopic, 0, len(names))
		for _, n := range names {
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

// topicFromMetadata converts one topic of a Metadata response. ok is false
// for a topic that does not exist, and for internal topics when skipInternal.
func topicFromMetadata(t kmsg.MetadataResponseTopic, skipInternal bool) (TopicDescription, bool, error) {
	name := ""
	if t.Topic != nil {
		name = *t.Topic
	}
	switch err := kerr.ErrorForCode(t.ErrorCode); {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return TopicDescription{}, false, nil
	case err != nil && !errors.Is(err, kerr.LeaderNotAvailable):
		// LEADER_NOT_AVAILABLE only says a new topic's leaders are not
		// elected yet: its partitions are still listed.
		return TopicDescription{}, false, fmt.Errorf("topic %s: %w", name, err)
	}
	if skipInternal && t.IsInternal {
		return TopicDescription{}, false, nil
	}
	d := TopicDescription{Name: name, Partitions: make([]PartitionState, 0, len(t.Partitions))}
	for _, p := range t.Partitions {
		d.Partitions = append(d.Partitions, PartitionState{
			Topic: name, Partition: p.Partition, Leader: p.Leader, Internal: t.IsInternal,
			Replicas: append([]int32(nil), p.Replicas...), ISR: append([]int32(nil), p.ISR...),
		})
	}
	sort.Slice(d.Partitions, func(i, j int) bool { return d.Partitions[i].Partition < d.Partitions[j].Partition })
	return d, true, nil
}

type topicConfigs struct {
	dynamic, effective map[string]string
}

// describeTopicConfigs reads every config of the named topics, in chunks
// sent concurrently. Topics that no longer exist are absent.
func (c *Client) describeTopicConfigs(ctx context.Context, names []string) (map[string]topicConfigs, error) {
	out := make(map[string]topicConfigs, len(names))
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
	)
	for start := 0; start < len(names); start += describeConfigsChunk {
		chunk := names[start:min(start+describeConfigsChunk, len(names))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := c.describeTopicConfigsOnce(ctx, chunk, nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			for k, v := range got {
				out[k] = v
			}
		}()
	}
	wg.Wait()
	return out, firstErr
}

// describeTopicConfigsOnce sends one DescribeConfigs request, to broker when
// it is not nil and else to any broker.
func (c *Client) describeTopicConfigsOnce(ctx context.Context, names []string, broker *int32) (map[string]topicConfigs, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, n := range names {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = n
		req.Resources = append(req.Resources, r)
	}
	var resp *kmsg.DescribeConfigsResponse
	var err error
	if broker != nil {
		resp, err = req.RequestWith(ctx, c.kgo.Broker(int(*broker)))
	} else {
		resp, err = req.RequestWith(ctx, c.kgo)
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]topicConfigs, len(resp.Resources))
	for _, r := range resp.Resources {
		if te := topicError(r.ResourceName, r.ErrorCode, r.ErrorMessage); te != nil {
			if te.Kind() == TopicErrorNotFound {
				continue
			}
			return nil, te
		}
		tc := topicConfigs{dynamic: map[string]string{}, effective: make(map[string]string, len(r.Configs))}
		for _, cfg := range r.Configs {
			if cfg.Value == nil {
				continue
			}
			tc.effective[cfg.Name] = *cfg.Value
			if cfg.Source == kmsg.ConfigSourceDynamicTopicConfig {
				tc.dynamic[cfg.Name] = *cfg.Value
			}
		}
		out[r.ResourceName] = tc
	}
	return out, nil
}

// ClusterID reads the cluster's id with one Metadata request that names no
// topic.
func (c *Client) ClusterID(ctx context.Context) (string, error) {
	// A cluster's id never changes, and a refresh asks for it once per
	// topic: the first answer serves the client's life.
	if id := c.clusterID.Load(); id != nil {
		return *id, nil
	}
	var id string
	err := c.withTimeout(ctx, "reading the cluster id", func(ctx context.Context) error {
		resp, err := metadataRequest([]string{}).RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		if resp.ClusterID == nil {
			return errors.New("the cluster reported no cluster id")
		}
		id = *resp.ClusterID
		return nil
	})
	if err == nil {
		c.clusterID.Store(&id)
	}
	return id, err
}
