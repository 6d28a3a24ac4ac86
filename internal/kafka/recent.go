package kafka

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recentSnapshotMaxAge is how old a cluster read RecentSnapshot may return.
// A Terraform run starts the provider afresh, so a read is shared only by
// the resources and data sources of one run: at 933,000 partitions one read
// is a Metadata answer of tens of megabytes and a DescribeLogDirs from every
// broker, and the refresh, the plan and each data source read the cluster.
const recentSnapshotMaxAge = 30 * time.Second

// recentSnapshot is the last full read of the cluster a Client made.
type recentSnapshot struct {
	// load serialises RecentSnapshot's reads, so that resources refreshed
	// in parallel share one read instead of each making its own.
	load sync.Mutex
	mu   sync.Mutex
	snap Snapshot
	at   time.Time
	gen  uint64 // writes when snap was read
	ok   bool
	// writes counts requests that may change the cluster; a read taken
	// before the latest of them is never reused.
	writes atomic.Uint64
}

// RecentSnapshot returns a Snapshot at most 30 seconds old, read afresh only
// when no younger one exists, and none older than a request of this client
// that may have changed the cluster (anything but a read). Plans, refreshes
// and data sources use it; what acts on the cluster, and the refresh after
// an apply, read afresh with Snapshot. The Snapshot returned is shared:
// callers must not change it.
func (c *Client) RecentSnapshot(ctx context.Context) (Snapshot, error) {
	r := &c.recent
	r.load.Lock()
	defer r.load.Unlock()
	r.mu.Lock()
	snap, fresh := r.snap, r.ok && time.Since(r.at) <= recentSnapshotMaxAge && r.gen == r.writes.Load()
	r.mu.Unlock()
	if fresh {
		return snap, nil
	}
	return c.Snapshot(ctx)
}

// keep records s, read when gen writes had been sent, for RecentSnapshot.
func (r *recentSnapshot) keep(s Snapshot, at time.Time, gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ok && r.at.After(at) {
		return
	}
	r.snap, r.at, r.gen, r.ok = s, at, gen, true
}

// readOnlyAPIs are the request keys that change nothing on the cluster.
var readOnlyAPIs = map[int16]bool{
	1:  true, // Fetch
	2:  true, // ListOffsets
	3:  true, // Metadata
	9:  true, // OffsetFetch
	10: true, // FindCoordinator
	15: true, // DescribeGroups
	16: true, // ListGroups
	17: true, // SaslHandshake
	18: true, // ApiVersions
	29: true, // DescribeAcls
	32: true, // DescribeConfigs
	35: true, // DescribeLogDirs
	36: true, // SaslAuthenticate
	46: true, // ListPartitionReassignments
	48: true, // DescribeClientQuotas
	50: true, // DescribeUserScramCredentials
	55: true, // DescribeQuorum
	60: true, // DescribeCluster
	61: true, // DescribeProducers
	65: true, // DescribeTransactions
	66: true, // ListTransactions
	69: true, // ConsumerGroupDescribe
	75: true, // DescribeTopicPartitions
	89: true, // StreamsGroupDescribe
}

// writeHook counts every request that may change the cluster, sent or
// only attempted, so that RecentSnapshot never returns a read from before
// it.
type writeHook struct{ r *recentSnapshot }

var _ kgo.HookBrokerWrite = writeHook{}

func (h writeHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if !readOnlyAPIs[key] {
		h.r.writes.Add(1)
	}
}
