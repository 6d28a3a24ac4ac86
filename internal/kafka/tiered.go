package kafka

// Tiered storage (KIP-405): a topic with remote.storage.enable keeps most
// of its log in remote storage and only a local tail on the brokers'
// disks, which is all DescribeLogDirs reports. A new replica copies that
// tail from its leader's local log start, and with KIP-1023 only the part
// not in remote storage yet. The snapshot counts what it copies
// (PartitionState.CopyBytes) and what stays remote (RemoteBytes) from the
// leaders' offsets, so that a plan counts, and waits for, only the bytes a
// reassignment really moves.

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The configs that say whether, and how, a topic tiers.
const (
	// ConfigRemoteStorageEnable is the topic config of a tiered topic.
	ConfigRemoteStorageEnable = "remote.storage.enable"
	// ConfigRemoteLogStorageSystemEnable is the broker config without
	// which no topic of the broker tiers (static).
	ConfigRemoteLogStorageSystemEnable = "remote.log.storage.system.enable"
	// ConfigFollowerFetchLastTieredOffset is KIP-1023's broker config
	// (Kafka 4.3+): an empty follower starts after the leader's last
	// tiered offset instead of at its local log start.
	ConfigFollowerFetchLastTieredOffset = "follower.fetch.last.tiered.offset.enable"
)

// ListOffsets timestamps beyond earliest (-2) and latest (-1).
const (
	// TimestampEarliestLocal asks for the leader's local log start offset
	// (KIP-405, ListOffsets v8+): the first offset still on its disk.
	TimestampEarliestLocal = -4
	// TimestampLatestTiered asks for the highest offset copied to remote
	// storage (KIP-1005, ListOffsets v9+), -1 when nothing is.
	TimestampLatestTiered = -5
	// TimestampEarliestPendingUpload asks for the first offset not yet
	// copied to remote storage (KIP-1023, ListOffsets v11+, Kafka 4.2+):
	// where a new follower with KIP-1023 starts. -1 when the leader has
	// none to give.
	TimestampEarliestPendingUpload = -6
)

// TieredOffsets are one partition's offsets as its leader reports them.
// For a topic that does not tier, LocalLogStart is LogStart and LastTiered
// is -1.
type TieredOffsets struct {
	Partition int32
	Leader    int32
	// LogStart is the first offset a consumer can read, locally or from
	// remote storage.
	LogStart int64
	// LocalLogStart is the first offset on the leader's disk: a new
	// replica without KIP-1023 starts copying here.
	LocalLogStart int64
	// LastTiered is the highest offset in remote storage, -1 if none: a
	// new replica with KIP-1023 starts copying after it.
	LastTiered int64
	// End is the log end offset (the high watermark).
	End int64
	// PendingUpload is the earliest offset not yet in remote storage, -1
	// when the leader has none to give, and PendingUploadNotAnswered when
	// it was not asked or answered with an error.
	PendingUpload int64
}

// PendingUploadUnknown says whether a new follower with KIP-1023 cannot
// start: the leader has segments in remote storage but no earliest
// pending upload offset to give. On Kafka 4.4 the follower then fails with
// "Segments are uploaded to remote storage, but the leader does not know
// the earliest pending upload offset" and retries until a record is
// written to the partition. A tiered partition gets there once it is idle
// longer than its local retention: its last segment is rolled, uploaded
// and deleted locally, and nothing is pending.
func (o TieredOffsets) PendingUploadUnknown() bool {
	return o.PendingUpload == -1 && o.LastTiered >= 0
}

// PendingUploadNotAnswered is TieredOffsets.PendingUpload before the
// leader answered: no offset, and not the leader's -1 either.
const PendingUploadNotAnswered = -2

// Set records offset, the answer of ListOffsets for timestamp: -2
// (earliest), TimestampEarliestLocal, TimestampLatestTiered or -1
// (latest). Any other timestamp is ignored.
func (o *TieredOffsets) Set(timestamp, offset int64) {
	switch timestamp {
	case -2:
		o.LogStart = offset
	case TimestampEarliestLocal:
		o.LocalLogStart = offset
	case TimestampLatestTiered:
		o.LastTiered = offset
	case TimestampEarliestPendingUpload:
		o.PendingUpload = offset
	case -1:
		o.End = offset
	}
}

// ReplicaCopyBytes estimates what a new replica of a partition copies from
// its leader, whose local log holds leaderLocalBytes:
//   - without KIP-1023 (Kafka 3.6+ with tiering, and 4.3+ by default) the
//     replica learns from the leader that the start of the log is in
//     remote storage, builds its state from the remote metadata, and copies
//     the leader's whole local log, from LocalLogStart on, tiered segments
//     still kept locally included;
//   - with follower.fetch.last.tiered.offset.enable (KIP-1023, 4.3+) it
//     copies only the offsets after LastTiered, those not in remote storage
//     yet.
//
// Kafka reports no byte position for an offset, so the second case scales
// the local bytes by the share of local offsets past LastTiered: exact for
// records of one size, an estimate otherwise.
func ReplicaCopyBytes(o TieredOffsets, leaderLocalBytes int64, fetchLastTiered bool) int64 {
	if !fetchLastTiered || o.LastTiered < o.LocalLogStart || o.End <= o.LocalLogStart {
		return leaderLocalBytes
	}
	untiered := max(0, o.End-(o.LastTiered+1))
	return int64(float64(leaderLocalBytes) * float64(untiered) / float64(o.End-o.LocalLogStart))
}

// RemoteOnlyBytes estimates the bytes of a partition that are only in
// remote storage, before the leader's local log start: what no new replica
// copies, and what a plan can say stays where it is. Like ReplicaCopyBytes
// it scales the leader's local bytes by offsets. Kafka's exact figure is
// the broker metric RemoteLogSizeBytes (KIP-963), which counts the tiered
// segments still local too.
func RemoteOnlyBytes(o TieredOffsets, leaderLocalBytes int64) int64 {
	if o.LocalLogStart <= o.LogStart || o.End <= o.LocalLogStart {
		return 0
	}
	return int64(float64(leaderLocalBytes) * float64(o.LocalLogStart-o.LogStart) / float64(o.End-o.LocalLogStart))
}

// tieredCluster is what the brokers' configs say of tiering, read once
// per snapshot.
type tieredCluster struct {
	// enabled: some broker has remote.log.storage.system.enable; else no
	// topic tiers and nothing more is read.
	enabled bool
	// fetchLastTiered: every broker that answered has KIP-1023 on, and
	// every alive one answered. Brokers that disagree count as off, the
	// larger copy, so that a plan is never optimistic.
	fetchLastTiered bool
}

// readTieredCluster asks every alive broker of out for its two tiering
// configs.
func (c *Client) readTieredCluster(ctx context.Context, out *Snapshot) (tieredCluster, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	alive := 0
	for _, b := range out.Brokers {
		if b.Fenced {
			continue
		}
		alive++
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeBroker
		r.ResourceName = strconv.Itoa(int(b.ID))
		r.ConfigNames = []string{ConfigRemoteLogStorageSystemEnable, ConfigFollowerFetchLastTieredOffset}
		req.Resources = append(req.Resources, r)
	}
	if alive == 0 {
		return tieredCluster{}, nil
	}
	// The client sends each broker's resource to that broker; one that
	// does not answer leaves the others' answers.
	answers := map[string]map[string]string{}
	for _, shard := range c.kgo.RequestSharded(ctx, req) {
		if shard.Err != nil {
			continue
		}
		resp, err := responseAs[*kmsg.DescribeConfigsResponse](shard.Resp)
		if err != nil {
			return tieredCluster{}, err
		}
		for _, r := range resp.Resources {
			if kerr.ErrorForCode(r.ErrorCode) != nil {
				continue
			}
			cfgs := map[string]string{}
			for _, cfg := range r.Configs {
				if cfg.Value != nil {
					cfgs[cfg.Name] = *cfg.Value
				}
			}
			answers[r.ResourceName] = cfgs
		}
	}
	return tieringOf(alive, answers), nil
}

// tieringOf reads the tiering configs of the alive brokers that answered
// (answers, by broker): tiering is on when any broker has remote storage,
// and KIP-1023 counts only when every alive broker answered with it on.
func tieringOf(alive int, answers map[string]map[string]string) tieredCluster {
	tc := tieredCluster{fetchLastTiered: alive > 0 && len(answers) == alive}
	for _, cfgs := range answers {
		tc.enabled = tc.enabled || cfgs[ConfigRemoteLogStorageSystemEnable] == "true"
		tc.fetchLastTiered = tc.fetchLastTiered && cfgs[ConfigFollowerFetchLastTieredOffset] == "true"
	}
	return tc
}

// tieredTopics reads remote.storage.enable of every topic of out, in one
// DescribeConfigs asking for that config alone, and returns the topics
// that tier.
func (c *Client) tieredTopics(ctx context.Context, out *Snapshot) (map[string]bool, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for i, p := range out.Partitions {
		if (i > 0 && out.Partitions[i-1].Topic == p.Topic) || p.Internal {
			continue
		}
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = p.Topic
		r.ConfigNames = []string{ConfigRemoteStorageEnable}
		req.Resources = append(req.Resources, r)
	}
	if len(req.Resources) == 0 {
		return nil, nil
	}
	resp, err := req.RequestWith(ctx, c.kgo)
	if err != nil {
		return nil, err
	}
	tiered := map[string]bool{}
	for _, r := range resp.Resources {
		if kerr.ErrorForCode(r.ErrorCode) != nil {
			continue // deleted meanwhile, or not ours to describe: counted whole
		}
		for _, cfg := range r.Configs {
			if cfg.Name == ConfigRemoteStorageEnable && cfg.Value != nil && *cfg.Value == "true" {
				tiered[r.ResourceName] = true
			}
		}
	}
	return tiered, nil
}

// listTieredOffsets reads, from their leaders, the offsets of the
// partitions of out at indices, by index: one ListOffsets per timestamp
// (a request may not name a partition twice). LastTiered is read only
// when fetchLastTiered needs it (ListOffsets v9, Kafka 3.9+); otherwise it
// is -1. A partition whose leader answers with an error is left out.
func (c *Client) listTieredOffsets(ctx context.Context, out *Snapshot, indices []int, fetchLastTiered bool) (map[int]TieredOffsets, error) {
	offs := make(map[int]TieredOffsets, len(indices))
	at := make(map[string]map[int32]int, 8)
	for _, j := range indices {
		p := out.Partitions[j]
		if at[p.Topic] == nil {
			at[p.Topic] = map[int32]int{}
		}
		at[p.Topic][p.Partition] = j
		offs[j] = TieredOffsets{Partition: p.Partition, Leader: p.Leader, LastTiered: -1, PendingUpload: PendingUploadNotAnswered}
	}
	stamps := []int64{-2, TimestampEarliestLocal, -1}
	if fetchLastTiered {
		stamps = append(stamps, TimestampLatestTiered, TimestampEarliestPendingUpload)
	}
	failed := map[int]bool{}
	for _, ts := range stamps {
		req := kmsg.NewPtrListOffsetsRequest()
		for topic, parts := range at {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			for p := range parts {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp = p, ts
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		// The client sends each partition to its leader.
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return nil, err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				j, ok := at[t.Topic][p.Partition]
				if !ok {
					continue
				}
				if kerr.ErrorForCode(p.ErrorCode) != nil {
					// The earliest pending upload alone failing (a
					// leader that moved, a Kafka before 4.2) leaves
					// the other offsets standing, and no flag.
					failed[j] = failed[j] || ts != TimestampEarliestPendingUpload
					continue
				}
				o := offs[j]
				o.Set(ts, p.Offset)
				offs[j] = o
			}
		}
	}
	for j := range failed {
		delete(offs, j)
	}
	return offs, nil
}

// readTiering reads which topics of out tier, and how a new replica of
// them copies: nothing more than the brokers' configs when no broker has
// remote storage. nil when no topic tiers.
func (c *Client) readTiering(ctx context.Context, out *Snapshot) (tieredCluster, map[string]bool, error) {
	tc, err := c.readTieredCluster(ctx, out)
	if err != nil || !tc.enabled {
		return tc, nil, err
	}
	tiered, err := c.tieredTopics(ctx, out)
	if len(tiered) == 0 {
		tiered = nil
	}
	return tc, tiered, err
}

// tieredBytes sets CopyBytes and RemoteBytes of every partition of a
// tiered topic in out, from its leader's offsets and local size
// (leaderLocal, by index, where DescribeLogDirs gave it; SizeBytes
// otherwise). A partition it cannot read keeps them zero: counted whole,
// as DescribeLogDirs has it. Copies are at least one byte, as zero means
// the whole size.
func (c *Client) tieredBytes(ctx context.Context, out *Snapshot, tc tieredCluster, tiered map[string]bool, leaderLocal map[int]int64) error {
	var indices []int
	for j, p := range out.Partitions {
		// An empty local log copies nothing, but with KIP-1023 it is how
		// an idle partition looks whose new follower cannot start.
		if tiered[p.Topic] && p.Leader >= 0 && (p.SizeBytes > 0 || tc.fetchLastTiered) {
			indices = append(indices, j)
		}
	}
	if len(indices) == 0 {
		return nil
	}
	offs, err := c.listTieredOffsets(ctx, out, indices, tc.fetchLastTiered)
	if err != nil {
		return err
	}
	for j, o := range offs {
		p := &out.Partitions[j]
		p.PendingUploadUnknown = tc.fetchLastTiered && o.PendingUploadUnknown()
		if p.SizeBytes == 0 {
			continue
		}
		local, ok := leaderLocal[j]
		if !ok {
			local = p.SizeBytes
		}
		p.CopyBytes = max(1, min(ReplicaCopyBytes(o, local, tc.fetchLastTiered), p.SizeBytes))
		p.RemoteBytes = RemoteOnlyBytes(o, local)
		if tc.fetchLastTiered {
			// The tiered segments the leader still keeps locally are in
			// remote storage too, and with KIP-1023 not copied either.
			p.RemoteBytes += max(0, local-p.CopyBytes)
		}
	}
	return nil
}
