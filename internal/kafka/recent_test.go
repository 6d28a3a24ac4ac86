package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkafake"
)

func startFake(t *testing.T, cfg kafkafake.Config) (*kafkafake.Cluster, *Client) {
	t.Helper()
	fake, err := kafkafake.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	c, err := NewClient(Config{BootstrapServers: fake.Addrs()[:1], RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return fake, c
}

// The fake's cluster read through the adapter: every partition with its
// replicas and size, every broker with its rack and disk.
func TestSnapshotOfFake(t *testing.T) {
	fake, c := startFake(t, kafkafake.Config{ClusterID: "fake-1", Brokers: 7, Racks: 3, Topics: 40, PartitionsPerTopic: 6,
		ReplicationFactor: 3, MaxPartitionBytes: 1 << 30, DiskBytes: 1 << 40, Extra: []kafkafake.Topic{{Name: OperationsTopic, Partitions: 1}}})
	s, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.ClusterID != "fake-1" || len(s.Brokers) != 7 || len(s.Partitions) != 241 {
		t.Fatalf("snapshot: cluster %q, %d brokers, %d partitions; want fake-1, 7, 241", s.ClusterID, len(s.Brokers), len(s.Partitions))
	}
	used := map[int32]int64{}
	sized := 0
	for _, p := range s.Partitions {
		if len(p.Replicas) != 3 || p.Leader != p.Replicas[0] {
			t.Fatalf("%s-%d: replicas %v, leader %d", p.Topic, p.Partition, p.Replicas, p.Leader)
		}
		for _, r := range p.Replicas {
			used[r] += p.SizeBytes
		}
		if p.SizeBytes > 0 {
			sized++
		}
	}
	if sized < 200 {
		t.Errorf("only %d partitions have a size", sized)
	}
	for _, b := range s.Brokers {
		if b.UsedBytes != used[b.ID] || b.CapacityBytes != 1<<40 || b.FreeBytes != 1<<40-used[b.ID] || b.Rack == "" {
			t.Errorf("broker %d: used %d (replicas hold %d), capacity %d, free %d, rack %q", b.ID, b.UsedBytes, used[b.ID], b.CapacityBytes, b.FreeBytes, b.Rack)
		}
	}
	if n := fake.Requests()["DescribeLogDirs"]; n != 7 {
		t.Errorf("%d DescribeLogDirs for 7 brokers", n)
	}
	for k := range fake.Requests() {
		if len(k) > 11 && k[:11] == "unanswered:" {
			t.Errorf("the read sent %s, which the fake does not answer", k)
		}
	}
}

// A plan's reads share one read of the cluster, until it is 30 s old or a
// request that may change the cluster is sent.
func TestRecentSnapshotShared(t *testing.T) {
	fake, c := startFake(t, kafkafake.Config{Brokers: 4, Topics: 10, PartitionsPerTopic: 3, ReplicationFactor: 2})
	ctx := context.Background()
	if _, err := c.RecentSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	first := fake.Requests()
	for i := 0; i < 3; i++ {
		if _, err := c.RecentSnapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := fake.Requests(); got["DescribeLogDirs"] != first["DescribeLogDirs"] || got["Metadata"] != first["Metadata"] {
		t.Fatalf("recent reads went to the cluster again: %s, after the first %s", kafkafake.FormatRequests(got), kafkafake.FormatRequests(first))
	}

	// A write (CreatePartitions, say) makes the next read fresh.
	writeHook{&c.recent}.OnBrokerWrite(kgo.BrokerMetadata{}, 37, 0, 0, 0, nil)
	if _, err := c.RecentSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fake.Requests()["DescribeLogDirs"]; got != 2*first["DescribeLogDirs"] {
		t.Fatalf("after a write, %d DescribeLogDirs; want a fresh read (%d)", got, 2*first["DescribeLogDirs"])
	}
	// So does age.
	c.recent.mu.Lock()
	c.recent.at = c.recent.at.Add(-recentSnapshotMaxAge - time.Second)
	c.recent.mu.Unlock()
	if _, err := c.RecentSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fake.Requests()["DescribeLogDirs"]; got != 3*first["DescribeLogDirs"] {
		t.Fatalf("after 30 s, %d DescribeLogDirs; want a fresh read (%d)", got, 3*first["DescribeLogDirs"])
	}
}
