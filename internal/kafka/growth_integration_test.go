package kafka_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// RecentGrowth on a real broker: of a partition's records, only those
// stamped within the window count, at the partition's mean record size;
// an old partition grows at 0, and one Kafka does not know is left out.
func TestRecentGrowthCountsOnlyTheWindowsRecords(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx := context.Background()
	if err := cl.CreateTopic(ctx, "growth", map[int32][]int32{0: {1, 2}, 1: {2, 3}}, nil); err != nil {
		t.Fatal(err)
	}
	pr, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	// Partition 0: 300 records an hour old, then 100 just now. Partition
	// 1: 50 records an hour old, nothing since.
	old := time.Now().Add(-time.Hour)
	var rs []*kgo.Record
	for i := range 400 {
		r := &kgo.Record{Topic: "growth", Partition: 0, Value: make([]byte, 1000)}
		if i < 300 {
			r.Timestamp = old
		}
		rs = append(rs, r)
	}
	for range 50 {
		rs = append(rs, &kgo.Record{Topic: "growth", Partition: 1, Value: make([]byte, 1000), Timestamp: old})
	}
	if err := pr.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The sizes are what the plan passes: 400 and 50 records' worth.
	const p0, p1 = 400 * 1000, 50 * 1000
	window := time.Minute
	got, err := cl.Port().RecentGrowth(ctx, []engine.PartitionSize{
		{Topic: "growth", Partition: 0, SizeBytes: p0},
		{Topic: "growth", Partition: 1, SizeBytes: p1},
		{Topic: "no-such-topic", Partition: 0, SizeBytes: 1},
	}, window)
	if err != nil {
		t.Fatal(err)
	}
	want := 100 * float64(p0) / 400 / window.Seconds() // 100 records of 1000 bytes in a minute
	if r := got["growth"][0]; math.Abs(r-want) > 1e-6 {
		t.Errorf("growth p0 = %.1f B/s, want %.1f (100 of its 400 records within the window)", r, want)
	}
	if r, ok := got["growth"][1]; ok {
		t.Errorf("growth p1 = %.1f B/s, want none: its records are an hour old", r)
	}
	if _, ok := got["no-such-topic"]; ok {
		t.Error("a topic Kafka does not know has a growth rate")
	}
}
