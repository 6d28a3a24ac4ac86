package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// PartitionState is one partition as the cluster sees it now.
type PartitionState struct {
	Topic     string
	Partition int32
	// Replicas is the assignment in preference order. During a reassignment
	// Metadata reports the union of the old and new replicas.
	Replicas []int32
	// Adding are the replicas a reassignment in progress adds, which
	// Replicas lists already; set only where the reader asked Kafka for
	// the reassignments in progress (TopicDescription).
	Adding []int32
	ISR    []int32
	// Leader is -1 when the partition has no leader (offline).
	Leader int32
	// SizeBytes is the largest size any replica reports: the leader's log is
	// the one a new replica has to copy. For a tiered topic it is the
	// local log only: DescribeLogDirs knows nothing of remote storage.
	SizeBytes int64
	// CopyBytes is what a new replica of a tiered topic copies (the
	// leader's local log, or with KIP-1023 its part not tiered yet),
	// estimated from the leader's offsets; 0 for any other topic, and
	// whenever the leader could not say, where SizeBytes is the copy.
	CopyBytes int64
	// RemoteBytes estimates what of a tiered partition is in remote
	// storage and not copied by a new replica: what is only there, and
	// with KIP-1023 also the tiered segments its leader still keeps.
	RemoteBytes int64
	// PendingUploadUnknown is set for a partition of a tiered topic whose
	// new replica cannot start under KIP-1023 until a record is written
	// (TieredOffsets.PendingUploadUnknown).
	PendingUploadUnknown bool
	Internal             bool
}

// UnderReplicated reports whether some assigned replica is out of sync.
func (p PartitionState) UnderReplicated() bool { return len(p.ISR) < len(p.Replicas) }

// Offline reports whether the partition has no leader.
func (p PartitionState) Offline() bool { return p.Leader < 0 }

// BrokerState is one registered broker and its disk.
type BrokerState struct {
	ID   int32
	Rack string
	// UsedBytes sums the replicas in the broker's log dirs.
	UsedBytes int64
	// CapacityBytes is the total size of the volumes holding the log dirs,
	// 0 when the broker does not report it.
	CapacityBytes int64
	// FreeBytes is what the volumes have free, 0 when unreported.
	FreeBytes int64
	// Fenced is true for a registered broker that is not running or not
	// caught up with the controller: Metadata hides it, the registrations
	// list it.
	Fenced bool
}

// Snapshot is a read of brokers and partitions, sorted by id and by topic
// and partition, that the engine plans from.
type Snapshot struct {
	ClusterID  string
	Brokers    []BrokerState
	Partitions []PartitionState
	// ReadID tells reads apart: every read of a client has its own, and
	// the Snapshots RecentSnapshot shares carry their read's. Callers that
	// derive something costly from a snapshot key it on ReadID.
	ReadID uint64
}

// Snapshot reads every partition (internal topics included) with its size,
// and every broker with its disk, in three requests: the registrations
// (fenced brokers included), Metadata and a fan-out of DescribeLogDirs. It
// works on the raw responses: at 933,000 partitions kadm's maps of them
// cost seconds and gigabytes of garbage.
func (c *Client) Snapshot(ctx context.Context) (Snapshot, error) {
	at, gen := time.Now(), c.recent.writes.Load()
	var s Snapshot
	// Read again once the controller agrees that a broker that refused
	// the connection is down (the snapshot then lists it fenced, as any
	// dead broker), or once it accepts connections after all.
	err := c.retryRefused(ctx, func() (err error) {
		s, err = c.snapshot(ctx)
		return err
	})
	s.ReadID = c.recent.reads.Add(1)
	if err == nil {
		c.recent.keep(s, at, gen)
	}
	return s, err
}

func (c *Client) snapshot(ctx context.Context) (Snapshot, error) {
	var out Snapshot
	regs, err := c.Registrations(ctx)
	if err != nil {
		return out, err
	}
	err = c.withTimeout(ctx, "reading the cluster's partitions", func(ctx context.Context) error {
		md, err := c.metadataListing(ctx, regs)
		if err != nil {
			return err
		}
		if md.ClusterID != nil {
			out.ClusterID = *md.ClusterID
		}
		listed := make(map[int32]bool, len(md.Brokers))
		for _, b := range md.Brokers {
			rack := ""
			if b.Rack != nil {
				rack = *b.Rack
			}
			out.Brokers = append(out.Brokers, BrokerState{ID: b.NodeID, Rack: rack})
			listed[b.NodeID] = true
		}
		for _, r := range regs {
			if !listed[r.ID] {
				out.Brokers = append(out.Brokers, BrokerState{ID: r.ID, Rack: r.Rack, Fenced: true})
			}
		}
		sort.Slice(out.Brokers, func(i, j int) bool { return out.Brokers[i].ID < out.Brokers[j].ID })
		byID := make(map[int32]int, len(out.Brokers))
		for i, b := range out.Brokers {
			byID[b.ID] = i
		}

		idx, err := snapshotPartitions(md, &out)
		md = nil //nolint:ineffassign,wastedassign // the response is tens of megabytes at a million partitions: let it go
		if err != nil {
			return err
		}
		// Tiering is read best-effort: a broker or topic that cannot say
		// (an ACL, an older Kafka) leaves its partitions counted whole,
		// at their local size, which is what a new replica copies
		// without KIP-1023.
		tc, tiered, _ := c.readTiering(ctx, &out)
		var leaderLocal map[int]int64
		if tiered != nil {
			leaderLocal = map[int]int64{}
		}
		if err := c.logDirSizes(ctx, byID, idx, &out, tiered, leaderLocal); err != nil {
			return err
		}
		if tiered != nil {
			_ = c.tieredBytes(ctx, &out, tc, tiered, leaderLocal)
		}
		return nil
	})
	return out, err
}

// metadataListing is allMetadata asked again, a few times, while its
// answer leaves out a broker that the registrations hold running. The two
// come from different brokers' metadata caches: right after a broker was
// unfenced, the broker answering Metadata may not have heard yet, and the
// snapshot would list a live broker as fenced (the soak, seed 22 step 16:
// a scale-out refused because the broker the platform had just started
// was "dead"). A broker still left out after that is taken as fenced.
func (c *Client) metadataListing(ctx context.Context, regs []Registration) (*kmsg.MetadataResponse, error) {
	for attempt := 1; ; attempt++ {
		md, err := c.allMetadata(ctx, regs)
		if err != nil || attempt == metadataAttempts || len(unlisted(md, regs)) == 0 {
			return md, err
		}
		select {
		case <-ctx.Done():
			return md, nil
		case <-time.After(metadataBackoff):
		}
	}
}

// metadataAttempts and metadataBackoff bound how long a snapshot waits for
// metadata to reach the broker it asks: a second, where propagation takes
// milliseconds on a healthy cluster.
const (
	metadataAttempts = 6
	metadataBackoff  = 200 * time.Millisecond
)

// unlisted returns the brokers that regs hold running (registered, not
// fenced) and md does not list.
func unlisted(md *kmsg.MetadataResponse, regs []Registration) []int32 {
	listed := make(map[int32]bool, len(md.Brokers))
	for _, b := range md.Brokers {
		listed[b.NodeID] = true
	}
	var out []int32
	for _, r := range regs {
		if !r.Fenced && !listed[r.ID] {
			out = append(out, r.ID)
		}
	}
	return out
}

// allMetadata asks one broker for every topic. It goes to a broker
// directly rather than through the client's Metadata, which would copy a
// cluster's every partition into franz-go's metadata cache and keep it
// there. It tries the brokers the controller holds alive (regs, not
// fenced), then the seed brokers, three at most.
func (c *Client) allMetadata(ctx context.Context, regs []Registration) (*kmsg.MetadataResponse, error) {
	var brokers []*kgo.Broker
	for _, r := range regs {
		if !r.Fenced {
			brokers = append(brokers, c.kgo.Broker(int(r.ID)))
		}
	}
	brokers = append(brokers, c.kgo.SeedBrokers()...)
	var last error
	for i, b := range brokers {
		if i == 3 || ctx.Err() != nil {
			break
		}
		req := kmsg.NewPtrMetadataRequest() // Topics nil: every topic
		resp, err := req.RequestWith(ctx, b)
		if err == nil {
			return resp, nil
		}
		last = err
	}
	if last == nil {
		last = errors.New("no broker to ask for metadata")
	}
	return nil, fmt.Errorf("reading every topic's metadata: %w", last)
}

// partitionIndex finds a partition of out.Partitions by topic and number.
type partitionIndex struct {
	// topics maps a topic to the range of its partitions in out.Partitions.
	topics map[string][2]int
}

// find returns the index of partition p of the topic whose range is r.
func (x partitionIndex) find(parts []PartitionState, r [2]int, p int32) (int, bool) {
	if i := r[0] + int(p); i < r[1] && parts[i].Partition == p {
		return i, true // partitions 0..n-1, the usual case
	}
	i := sort.Search(r[1]-r[0], func(i int) bool { return parts[r[0]+i].Partition >= p }) + r[0]
	return i, i < r[1] && parts[i].Partition == p
}

// snapshotPartitions fills out.Partitions from md, sorted by topic and
// partition, and indexes them.
func snapshotPartitions(md *kmsg.MetadataResponse, out *Snapshot) (partitionIndex, error) {
	topics := make([]int, 0, len(md.Topics))
	n := 0
	for i := range md.Topics {
		t := &md.Topics[i]
		if t.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				continue // deleted meanwhile
			}
			return partitionIndex{}, fmt.Errorf("topic %s: %w", *t.Topic, err)
		}
		topics = append(topics, i)
		n += len(t.Partitions)
	}
	sort.Slice(topics, func(a, b int) bool { return *md.Topics[topics[a]].Topic < *md.Topics[topics[b]].Topic })
	out.Partitions = make([]PartitionState, 0, n)
	idx := partitionIndex{topics: make(map[string][2]int, len(topics))}
	for _, ti := range topics {
		t := &md.Topics[ti]
		ps := t.Partitions
		if !sort.SliceIsSorted(ps, func(a, b int) bool { return ps[a].Partition < ps[b].Partition }) {
			sort.Slice(ps, func(a, b int) bool { return ps[a].Partition < ps[b].Partition })
		}
		first := len(out.Partitions)
		for j := range ps {
			p := &ps[j]
			out.Partitions = append(out.Partitions, PartitionState{
				Topic:     *t.Topic,
				Partition: p.Partition,
				// The response is ours alone: its slices are kept, not copied.
				Replicas: p.Replicas,
				ISR:      p.ISR,
				Leader:   p.Leader,
				Internal: t.IsInternal,
			})
		}
		idx.topics[*t.Topic] = [2]int{first, len(out.Partitions)}
	}
	return idx, nil
}

// logDirSizes asks every broker for its log dirs (DescribeLogDirs, sent to
// each broker at once) and records each broker's disk and each partition's
// size: the largest of its replicas. For the partitions of tiered topics
// it also records, in leaderLocal by index, their leader's local size,
// the log a new replica copies from.
func (c *Client) logDirSizes(ctx context.Context, byID map[int32]int, idx partitionIndex, out *Snapshot, tiered map[string]bool, leaderLocal map[int]int64) error {
	req := kmsg.NewPtrDescribeLogDirsRequest() // Topics nil: every partition
	for _, shard := range c.kgo.RequestSharded(ctx, req) {
		if shard.Err != nil {
			if errors.Is(shard.Err, syscall.ECONNREFUSED) {
				return &BrokerDownError{ID: shard.Meta.NodeID, Addr: net.JoinHostPort(shard.Meta.Host, strconv.Itoa(int(shard.Meta.Port))), Err: shard.Err}
			}
			return fmt.Errorf("DescribeLogDirs on broker %d: %w", shard.Meta.NodeID, shard.Err)
		}
		resp, err := responseAs[*kmsg.DescribeLogDirsResponse](shard.Resp)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("DescribeLogDirs on broker %d: %w", shard.Meta.NodeID, err)
		}
		i, ok := byID[shard.Meta.NodeID]
		if !ok {
			continue
		}
		b := &out.Brokers[i]
		for _, d := range resp.Dirs {
			if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
				return fmt.Errorf("log dir %s on broker %d: %w", d.Dir, shard.Meta.NodeID, err)
			}
			if d.TotalBytes > 0 {
				b.CapacityBytes += d.TotalBytes
				b.FreeBytes += d.UsableBytes
			}
			for _, t := range d.Topics {
				r, known := idx.topics[t.Topic]
				for _, lp := range t.Partitions {
					b.UsedBytes += lp.Size
					if lp.IsFuture || !known {
						continue // an intra-broker copy, not the partition's size; or a topic created since Metadata
					}
					j, ok := idx.find(out.Partitions, r, lp.Partition)
					if !ok {
						continue
					}
					if lp.Size > out.Partitions[j].SizeBytes {
						out.Partitions[j].SizeBytes = lp.Size
					}
					if leaderLocal != nil && out.Partitions[j].Leader == shard.Meta.NodeID && tiered[t.Topic] {
						leaderLocal[j] = lp.Size
					}
				}
			}
		}
	}
	return nil
}

// BrokerDownError is a broker that the controller still lists as running
// (registered, not fenced) but that refuses connections: it has just
// stopped, and Kafka fences it once broker.session.timeout.ms passes
// without its heartbeat, or it is starting, and opens its listeners a
// moment after the controller unfences it.
type BrokerDownError struct {
	ID   int32
	Addr string
	Err  error
}

func (e *BrokerDownError) Error() string {
	return fmt.Sprintf("broker %d (%s) refused the connection while the controller lists it as running: it has just stopped, "+
		"and Kafka fences it once broker.session.timeout.ms passes without its heartbeat, or it is starting, "+
		"and opens its listeners a moment after the controller unfences it (%v)", e.ID, e.Addr, e.Err)
}

func (e *BrokerDownError) Unwrap() error { return e.Err }

// refused is the broker that err says refused the connection while the
// controller listed it: a BrokerDownError, or a shard of a request sent to
// every broker (kadm's ShardErrors) that failed to dial.
func refused(err error) *BrokerDownError {
	if bd := (*BrokerDownError)(nil); errors.As(err, &bd) {
		return bd
	}
	if se := (*kadm.ShardErrors)(nil); errors.As(err, &se) {
		for _, e := range se.Errs {
			if errors.Is(e.Err, syscall.ECONNREFUSED) && e.Broker.NodeID >= 0 {
				return &BrokerDownError{ID: e.Broker.NodeID, Addr: net.JoinHostPort(e.Broker.Host, strconv.Itoa(int(e.Broker.Port))), Err: e.Err}
			}
		}
	}
	return nil
}

// retryRefused runs read, and once more when it failed on a broker that
// refused the connection, after awaitFencedOrListening: a read that meets a
// broker stopping or starting then succeeds instead of failing the plan.
func (c *Client) retryRefused(ctx context.Context, read func() error) error {
	err := read()
	if bd := refused(err); bd != nil && c.awaitFencedOrListening(ctx, bd) == nil {
		err = read()
	}
	return err
}

// fenceWait bounds how long a read waits for the controller to fence a
// broker that refuses connections: Kafka's default
// broker.session.timeout.ms is 9 s.
const fenceWait = 30 * time.Second

// awaitFencedOrListening waits, up to fenceWait, until the controller
// lists the broker of bd as fenced or not at all, or until the broker
// accepts connections. A plan made a few seconds after a broker died then
// reads the cluster as Kafka will see it, the broker dead, instead of
// failing on the one broker that cannot answer. A broker that is
// starting refuses connections too, for a moment after the controller
// unfences it: Kafka opens its listeners only then. Found by the soak
// (seed 23): a refresh just as the platform added a broker waited the
// whole 30 s for a fence that never came, and failed.
func (c *Client) awaitFencedOrListening(ctx context.Context, bd *BrokerDownError) error {
	ctx, cancel := context.WithTimeout(ctx, fenceWait)
	defer cancel()
	var dialer net.Dialer
	for {
		regs, err := c.Registrations(ctx)
		if err == nil && !slices.ContainsFunc(regs, func(r Registration) bool { return r.ID == bd.ID && !r.Fenced }) {
			return nil
		}
		dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		conn, err := dialer.DialContext(dctx, "tcp", bd.Addr)
		dcancel()
		if err == nil {
			_ = conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
