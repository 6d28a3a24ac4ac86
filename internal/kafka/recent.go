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
	// reads numbers Snapshot's reads (Snapshot.ReadID).
	reads atomic.Uint64
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

// readOnlyAPI says whether a request key changes nothing on the cluster.
func readOnlyAPI(key int16) bool {
	switch key {
	case 1, // Fetch
		2,  // ListOffsets
		3,  // Metadata
		9,  // OffsetFetch
		10, // FindCoordinator
		15, // DescribeGroups
		16, // ListGroups
		17, // SaslHandshake
		18, // ApiVersions
		29, // DescribeAcls
		32, // DescribeConfigs
		35, // DescribeLogDirs
		36, // SaslAuthenticate
		46, // ListPartitionReassignments
		48, // DescribeClientQuotas
		50, // DescribeUserScramCredentials
		55, // DescribeQuorum
		60, // DescribeCluster
		61, // DescribeProducers
		65, // DescribeTransactions
		66, // ListTransactions
		69, // ConsumerGroupDescribe
		75, // DescribeTopicPartitions
		89: // StreamsGroupDescribe
		return true
	}
	return false
}

// writeHook counts every request that may change the cluster, sent or
// only attempted, so that RecentSnapshot never returns a read from before
// it.
type writeHook struct{ r *recentSnapshot }

var _ kgo.HookBrokerWrite = writeHook{}

func (h writeHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if !readOnlyAPI(key) {
		h.r.writes.Add(1)
	}
}
