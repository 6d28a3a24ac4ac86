package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicData is what deleting a topic loses.
type TopicData struct {
	// Bytes sums, over the partitions, the largest replica's size.
	Bytes int64
	// Records sums, over the partitions, the offsets between the log's
	// start and end: the records held, or for a compacted topic at most
	// that many.
	Records int64
}

// DescribeTopicData reads how much data topic holds; a topic that does not
// exist holds none.
func (c *Client) DescribeTopicData(ctx context.Context, topic string) (TopicData, error) {
	var d TopicData
	err := c.withTimeout(ctx, "reading how much data topic "+topic+" holds", func(ctx context.Context) error {
		all, err := c.partitionOffsets(ctx, nil, topic)
		offsets := all[topic]
		if err != nil || len(offsets) == 0 {
			return err
		}
		set := kadm.TopicsSet{}
		for p, o := range offsets {
			set.Add(topic, p)
			d.Records += o.end - o.start
		}
		dirs, err := c.admin.DescribeAllLogDirs(ctx, set)
		if err != nil {
			return err
		}
		largest := map[int32]int64{}
		for _, ds := range dirs {
			for _, dir := range ds {
				for _, lp := range dir.Topics[topic] {
					if !lp.IsFuture && lp.Size > largest[lp.Partition] {
						largest[lp.Partition] = lp.Size
					}
				}
			}
		}
		for _, size := range largest {
			d.Bytes += size
		}
		return nil
	})
	return d, err
}

// offsetRange is a partition's log from its start offset to its end.
type offsetRange struct{ start, end int64 }

// partitionOffsets reads the start and end offsets of every partition of
// the topics, by topic and partition. A partition Kafka does not know is
// left out; an empty one has start == end. Only the partitions need accepts
// (nil: all) fail the read with their errors; the others are left out.
func (c *Client) partitionOffsets(ctx context.Context, need func(string, int32) bool, topics ...string) (map[string]map[int32]offsetRange, error) {
	ends, err := c.endOffsets(ctx, need, topics...)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]offsetRange{}
	var failed error
	ends.Each(func(end kadm.ListedOffset) {
		if end.Err != nil {
			if failed == nil && !errors.Is(end.Err, kerr.UnknownTopicOrPartition) && needed(need, end.Topic, end.Partition) {
				failed = fmt.Errorf("%s p%d: %w", end.Topic, end.Partition, end.Err)
			}
			return
		}
		m := out[end.Topic]
		if m == nil {
			m = map[int32]offsetRange{}
			out[end.Topic] = m
		}
		m[end.Partition] = offsetRange{start: end.Offset, end: end.Offset}
	})
	if failed != nil {
		// The start offsets would wait out the same partition's error
		// again (listOffsets) for a read that fails anyway.
		return out, failed
	}
	starts, err := c.startOffsets(ctx, need, topics...)
	if err != nil {
		return nil, err
	}
	for topic, m := range out {
		for p, o := range m {
			if start, ok := starts.Lookup(topic, p); ok && start.Err == nil && start.Offset < o.end {
				m[p] = offsetRange{start: start.Offset, end: o.end}
			}
		}
	}
	return out, nil
}
