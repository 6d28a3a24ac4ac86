package streamstest

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Observer reads the app's output (read_committed, from the start) while
// the test runs: the latest count per product, where every record landed,
// and how many joined orders found no customer.
type Observer struct {
	cl     *kgo.Client
	counts string

	mu         sync.Mutex
	latest     map[string]int64
	perTopic   map[string]map[int32]int64
	misplaced  []string
	badRecords []string
	joinMisses int64
	enriched   int64

	cancel context.CancelFunc
	done   chan struct{}
}

// NewObserver starts reading topics: the counts sink (its values are
// decoded as counts), and any others whose keys name a home partition
// (the enriched sink, a changelog).
func NewObserver(bootstrap []string, counts string, others ...string) (*Observer, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap...),
		kgo.ConsumeTopics(append([]string{counts}, others...)...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// New partitions are consumed from their start once seen.
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.MetadataMaxAge(time.Second),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Observer{
		cl: cl, counts: counts, latest: map[string]int64{}, perTopic: map[string]map[int32]int64{},
		cancel: cancel, done: make(chan struct{}),
	}
	go o.run(ctx)
	return o, nil
}

func (o *Observer) run(ctx context.Context) {
	defer close(o.done)
	for {
		fs := o.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		o.mu.Lock()
		fs.EachRecord(o.record)
		o.mu.Unlock()
	}
}

// record is called with o.mu held.
func (o *Observer) record(r *kgo.Record) {
	byPart := o.perTopic[r.Topic]
	if byPart == nil {
		byPart = map[int32]int64{}
		o.perTopic[r.Topic] = byPart
	}
	byPart[r.Partition]++
	key := string(r.Key)
	home, err := Home(key)
	if err != nil {
		o.badRecords = append(o.badRecords, fmt.Sprintf("%s partition %d offset %d: %v", r.Topic, r.Partition, r.Offset, err))
		return
	}
	if home != r.Partition {
		o.misplaced = append(o.misplaced, fmt.Sprintf("%s: key %s (home %d) in partition %d at offset %d", r.Topic, key, home, r.Partition, r.Offset))
	}
	switch {
	case r.Topic == o.counts:
		if len(r.Value) != 8 {
			o.badRecords = append(o.badRecords, fmt.Sprintf("%s: key %s has a %d-byte value, want an 8-byte count", r.Topic, key, len(r.Value)))
			return
		}
		o.latest[key] = int64(binary.BigEndian.Uint64(r.Value))
	case strings.HasSuffix(r.Topic, "enriched"):
		o.enriched++
		if strings.HasSuffix(string(r.Value), ";customer=-") {
			o.joinMisses++
		}
	}
}

// Close stops reading.
func (o *Observer) Close() {
	o.cancel()
	<-o.done
	o.cl.Close()
}

// Observed is what an Observer has read so far.
type Observed struct {
	// Counts is the latest count per product.
	Counts map[string]int64
	// Records is the number of records per topic and partition.
	Records map[string]map[int32]int64
	// Misplaced lists records outside their key's home partition.
	Misplaced []string
	// Bad lists records whose key or value could not be read.
	Bad []string
	// Enriched and JoinMisses count joined orders, and those that found
	// no customer.
	Enriched, JoinMisses int64
}

// Snapshot returns what was read so far.
func (o *Observer) Snapshot() Observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	recs := map[string]map[int32]int64{}
	for t, m := range o.perTopic {
		recs[t] = maps.Clone(m)
	}
	return Observed{
		Counts: maps.Clone(o.latest), Records: recs,
		Misplaced: slices.Clone(o.misplaced), Bad: slices.Clone(o.badRecords),
		Enriched: o.enriched, JoinMisses: o.joinMisses,
	}
}

// CountDiff lists, sorted, every product whose count differs from want.
func CountDiff(got, want map[string]int64) []string {
	var diff []string
	for k, w := range want {
		if g := got[k]; g != w {
			diff = append(diff, fmt.Sprintf("%s: counted %d, produced %d", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: counted %d, produced none", k, g))
		}
	}
	slices.Sort(diff)
	return diff
}

// WaitCounts waits until the latest counts equal want exactly, and returns
// the remaining differences when ctx ends first.
func (o *Observer) WaitCounts(ctx context.Context, want map[string]int64) ([]string, error) {
	for {
		diff := CountDiff(o.Snapshot().Counts, want)
		if len(diff) == 0 {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return diff, fmt.Errorf("%d of %d products' counts differ from the orders produced: %w", len(diff), len(want), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
