package kafka

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// KeyEvidence is what a topic says about whether its records are keyed.
type KeyEvidence struct {
	// Compacted is true when cleanup.policy includes compact, which keeps
	// the latest record per key: a compacted topic is keyed by design.
	Compacted bool
	// KeyedPartitions are the partitions whose latest records carry a key.
	KeyedPartitions []int32
	// SampledPartitions counts the partitions that had records to look at.
	SampledPartitions int
}

// Keyed reports whether the topic is known to hold keyed records.
func (e KeyEvidence) Keyed() bool { return e.Compacted || len(e.KeyedPartitions) > 0 }

// Reason says, in a sentence for the user, how the topic is known to be
// keyed; it is empty when it is not.
func (e KeyEvidence) Reason() string {
	var why []string
	if e.Compacted {
		why = append(why, "its cleanup.policy includes compact, which keeps the latest record per key")
	}
	if n := len(e.KeyedPartitions); n > 0 {
		ps := make([]string, 0, min(n, 8))
		for _, p := range e.KeyedPartitions[:min(n, 8)] {
			ps = append(ps, fmt.Sprintf("p%d", p))
		}
		more := ""
		if n > 8 {
			more = fmt.Sprintf(" and %d more", n-8)
		}
		why = append(why, fmt.Sprintf("the latest records of %s%s carry keys", strings.Join(ps, ", "), more))
	}
	return strings.Join(why, ", and ")
}

// IsCompacted reports whether a cleanup.policy value includes compact.
func IsCompacted(cleanupPolicy string) bool {
	for _, p := range strings.Split(cleanupPolicy, ",") {
		if strings.TrimSpace(p) == "compact" {
			return true
		}
	}
	return false
}

// keySampleDepth is how many of the latest records of each partition are
// looked at, and keySampleTime how long the look may take.
const (
	keySampleDepth = 5
	keySampleTime  = 5 * time.Second
)

// SampleKeys looks at the latest records of every partition of topic (at
// most keySampleDepth each) and reports which partitions carry keys. It
// joins no group and commits nothing. It stops at the first keyed record,
// and after keySampleTime returns what it has seen. A compacted topic is
// keyed by design and is not read.
func (c *Client) SampleKeys(ctx context.Context, topic string, compacted bool) (KeyEvidence, error) {
	ev := KeyEvidence{Compacted: compacted}
	if compacted {
		return ev, nil
	}
	var from map[int32]kgo.Offset
	last := map[int32]int64{}
	err := c.withTimeout(ctx, "reading the offsets of topic "+topic, func(ctx context.Context) error {
		offsets, err := c.partitionOffsets(ctx, nil, topic)
		from = map[int32]kgo.Offset{}
		for p, o := range offsets[topic] {
			if o.end > o.start { // an empty partition has nothing to sample
				from[p] = kgo.NewOffset().At(max(o.start, o.end-keySampleDepth))
				last[p] = o.end - 1
			}
		}
		return err
	})
	if err != nil || len(from) == 0 {
		return ev, err
	}

	sctx, cancel := context.WithTimeout(ctx, keySampleTime)
	defer cancel()
	cons, err := kgo.NewClient(append(append([]kgo.Opt(nil), c.opts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return ev, err
	}
	defer cons.Close()
	sampled, keyed := map[int32]bool{}, map[int32]bool{}
	done := map[int32]bool{}
	for len(keyed) == 0 && len(done) < len(from) && sctx.Err() == nil {
		fs := cons.PollFetches(sctx)
		fs.EachRecord(func(r *kgo.Record) {
			sampled[r.Partition] = true
			if r.Key != nil {
				keyed[r.Partition] = true
			}
			if r.Offset >= last[r.Partition] {
				done[r.Partition] = true
			}
		})
	}
	ev.SampledPartitions = len(sampled)
	for p := range keyed {
		ev.KeyedPartitions = append(ev.KeyedPartitions, p)
	}
	sort.Slice(ev.KeyedPartitions, func(i, j int) bool { return ev.KeyedPartitions[i] < ev.KeyedPartitions[j] })
	return ev, nil
}
