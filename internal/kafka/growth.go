package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// RecentGrowth measures how fast producers wrote to each of parts over
// the last window, in bytes/s: the records appended since then (from the
// offset of the first record at or after the window's start to the end
// offset) times the partition's mean record size (its size over the
// records its log holds). Compaction and retention can make that mean
// wrong; it is an estimate for the ETA, never for a safety decision.
// Three ListOffsets requests per partition leader serve any number of
// partitions. A partition Kafka does not know, or one with no records,
// grows at 0.
func (p *Port) RecentGrowth(ctx context.Context, parts []engine.PartitionSize, window time.Duration) (map[string]map[int32]float64, error) {
	// An empty partition grows at 0 whatever it holds now (its mean
	// record size is unknown): it costs no request. Reading offsets for
	// the 750 empty partitions of a 1,000-partition scale-in took 9.5 s
	// (make bench-reassign, BenchmarkFirstStep1000Partitions).
	parts = slices.DeleteFunc(slices.Clone(parts), func(ps engine.PartitionSize) bool { return ps.SizeBytes <= 0 })
	if len(parts) == 0 || window <= 0 {
		return nil, nil
	}
	var topics []string
	moving := map[string]map[int32]bool{}
	for _, ps := range parts {
		if moving[ps.Topic] == nil {
			topics = append(topics, ps.Topic)
			moving[ps.Topic] = map[int32]bool{}
		}
		moving[ps.Topic][ps.Partition] = true
	}
	// The other partitions of the topics are listed too, and one of them
	// offline (its leader's broker dead) must neither fail nor hold up
	// the read of the moving ones.
	need := func(topic string, partition int32) bool { return moving[topic][partition] }
	out := make(map[string]map[int32]float64)
	err := p.c.withTimeout(ctx, "reading the recent growth of the moving partitions", func(ctx context.Context) error {
		since := time.Now().Add(-window).UnixMilli()
		offsets, err := p.c.partitionOffsets(ctx, need, topics...)
		if err != nil {
			return err
		}
		after, err := p.c.offsetsAfterMilli(ctx, need, since, topics...)
		if err != nil {
			return err
		}
		for _, ps := range parts {
			o, ok := offsets[ps.Topic][ps.Partition]
			a, found := after.Lookup(ps.Topic, ps.Partition)
			if !ok || !found || o.end <= o.start {
				continue
			}
			if a.Err != nil {
				if errors.Is(a.Err, kerr.UnknownTopicOrPartition) {
					continue
				}
				return fmt.Errorf("%s p%d: %w", ps.Topic, ps.Partition, a.Err)
			}
			// No record at or after the window's start: Kafka answers
			// with the end offset (or -1 before Kafka 3.x did so).
			from := a.Offset
			if from < 0 || from > o.end {
				from = o.end
			}
			from = max(from, o.start)
			written := o.end - from
			if written == 0 {
				continue
			}
			perRecord := float64(ps.SizeBytes) / float64(o.end-o.start)
			m := out[ps.Topic]
			if m == nil {
				m = make(map[int32]float64)
				out[ps.Topic] = m
			}
			m[ps.Partition] = float64(written) * perRecord / window.Seconds()
		}
		return nil
	})
	return out, err
}
