package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

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
		var err error
		out, err = c.describe(ctx, names, names == nil, nil)
		return err
	})
	return out, err
}

// describe reads topics: their partitions from one Metadata request, which
// check may refuse before anything else is asked, then their configs.
//
// Metadata lists a moving partition's old and new replicas together, and
// only the reassignments in progress, which the controller answers, tell
// which are new. Those are asked for just before and just after the
// Metadata request, so that a move that starts or ends between the answers
// is settled from the controller's side (reconcileMoves) rather than
// counted as a replica more or less. Two cases are still read half done: a
// move that starts and ends in that moment, unseen by both lists, and one
// that the answering broker has not caught up with (brokers apply the
// controller's changes a moment after it makes them). Both show as a topic
// whose partitions have different replica counts, or as lists that differ;
// the reads are then made again, moveRereadPause apart, up to
// maxMoveRereads times. A topic whose partitions really differ costs that
// wait, and is reported as it is.
func (c *Client) describe(ctx context.Context, names []string, skipInternal bool, check func(*kmsg.MetadataResponse) error) (map[string]TopicDescription, error) {
	var (
		out           map[string]TopicDescription
		before, after []Reassignment
	)
	for attempt := 0; ; attempt++ {
		var err error
		if before, err = c.ListReassignments(ctx); err != nil {
			return nil, fmt.Errorf("listing the reassignments in progress: %w", err)
		}
		md, err := metadataRequest(names).RequestWith(ctx, c.kgo)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(md); err != nil {
				return nil, err
			}
		}
		out = make(map[string]TopicDescription, len(md.Topics))
		for _, t := range md.Topics {
			d, ok, err := topicFromMetadata(t, skipInternal)
			if err != nil {
				return nil, err
			}
			if ok {
				out[d.Name] = d
			}
		}
		if len(out) == 0 {
			return out, nil
		}
		if after, err = c.ListReassignments(ctx); err != nil {
			return nil, fmt.Errorf("listing the reassignments in progress: %w", err)
		}
		reconcileMoves(out, before, after)
		if attempt == maxMoveRereads || slices.EqualFunc(movesOf(out, before), movesOf(out, after), sameReassignment) && !anyMixed(out) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(moveRereadPause):
		}
	}
	found := make([]string, 0, len(out))
	for n := range out {
		found = append(found, n)
	}
	sort.Strings(found)
	configs, err := c.describeTopicConfigs(ctx, found)
	if err != nil {
		return nil, err
	}
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

// maxMoveRereads bounds the reads made again while moves start and end: a
// large rebalance may start or finish some move in every moment, and the
// reconciliation of the last read is then the answer. A move that starts
// and ends within one read is in neither list of reassignments, and only
// another read tells its partition's replicas: with moves every 150 ms
// on a loaded machine, four reads in a row each caught one once in 69
// reads (TestTopicReadWhileMovesStartAndEnd beside make soak). Each read
// more cuts that chance by the same factor; a topic whose partitions
// really differ pays 0.6 s.
const (
	maxMoveRereads  = 6
	moveRereadPause = 100 * time.Millisecond
)

// anyMixed reports whether some topic of out has partitions with different
// replica counts.
func anyMixed(out map[string]TopicDescription) bool {
	for _, d := range out {
		if len(d.ReplicationFactors()) > 1 {
			return true
		}
	}
	return false
}

// movesOf returns the reassignments of rs (sorted) that touch a topic of
// out.
func movesOf(out map[string]TopicDescription, rs []Reassignment) []Reassignment {
	var in []Reassignment
	for _, r := range rs {
		if _, ok := out[r.Topic]; ok {
			in = append(in, r)
		}
	}
	return in
}

func sameReassignment(a, b Reassignment) bool {
	return a.Topic == b.Topic && a.Partition == b.Partition && slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.Adding, b.Adding)
}

// reconcileMoves settles each partition of out, read from Metadata between
// the reassignments before and after, on one consistent view:
//   - moving in after: the controller's replicas and adding replicas, even
//     where Metadata (from a broker that had not yet applied the move, or
//     read before it began) shows the replicas from before it;
//   - moving in before only (the move ended between the reads): as moving
//     when Metadata still shows the old and new replicas together, since
//     whether it completed or was cancelled is not known; as read otherwise;
//   - moving in neither: as read.
func reconcileMoves(out map[string]TopicDescription, before, after []Reassignment) {
	type key struct {
		topic     string
		partition int32
	}
	index := func(rs []Reassignment) map[key]Reassignment {
		m := make(map[key]Reassignment, len(rs))
		for _, r := range rs {
			if _, ok := out[r.Topic]; ok && len(r.Adding) > 0 {
				m[key{r.Topic, r.Partition}] = r
			}
		}
		return m
	}
	was, is := index(before), index(after)
	if len(was) == 0 && len(is) == 0 {
		return
	}
	for _, d := range out {
		for i := range d.Partitions {
			p := &d.Partitions[i]
			k := key{d.Name, p.Partition}
			r, ok := is[k]
			if !ok {
				if r, ok = was[k]; ok && !sameSet(p.Replicas, r.Replicas) {
					ok = false
				}
			}
			if ok {
				p.Replicas = append([]int32(nil), r.Replicas...)
				p.Adding = append([]int32(nil), r.Adding...)
			}
		}
	}
}

// sameSet reports whether a and b hold the same brokers, in any order.
func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
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
