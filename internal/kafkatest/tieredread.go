package kafkatest

// What Kafka tells of a tiered partition, and what a new replica of it
// copies. These are the readings the planner will need to count only the
// bytes a reassignment really moves (issue 39); they live here, beside the
// cluster that makes them true, until the engine takes them over.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets timestamps beyond earliest (-2) and latest (-1).
const (
	// earliestLocalTimestamp asks for the leader's local log start offset
	// (KIP-405, ListOffsets v8+): the first offset still on its disk.
	earliestLocalTimestamp = -4
	// latestTieredTimestamp asks for the highest offset copied to remote
	// storage (KIP-1005, ListOffsets v9+), -1 when nothing is.
	latestTieredTimestamp = -5
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
}

// ListTieredOffsets reads the offsets of every partition of topic from its
// leader. It needs Kafka 3.9+ (ListOffsets v9, for LastTiered).
func ListTieredOffsets(ctx context.Context, cl *kgo.Client, topic string) ([]TieredOffsets, error) {
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("reading the metadata of topic %s: %w", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("topic %s is not in the metadata: %v", topic, td.Err)
	}
	out := make(map[int32]*TieredOffsets, len(td.Partitions))
	for _, p := range td.Partitions {
		out[p.Partition] = &TieredOffsets{Partition: p.Partition, Leader: p.Leader}
	}
	for _, ts := range []int64{-2, earliestLocalTimestamp, latestTieredTimestamp, -1} {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for id := range out {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = id, ts
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		// The client sends each partition to its leader.
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("ListOffsets (timestamp %d) for topic %s: %w", ts, topic, err)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, fmt.Errorf("ListOffsets (timestamp %d) for %s-%d: %w", ts, topic, p.Partition, err)
				}
				o, ok := out[p.Partition]
				if !ok {
					continue
				}
				switch ts {
				case -2:
					o.LogStart = p.Offset
				case earliestLocalTimestamp:
					o.LocalLogStart = p.Offset
				case latestTieredTimestamp:
					o.LastTiered = p.Offset
				case -1:
					o.End = p.Offset
				}
			}
		}
	}
	res := make([]TieredOffsets, 0, len(out))
	for _, o := range out {
		res = append(res, *o)
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Partition < res[j].Partition })
	return res, nil
}

// LocalLogSizes are the bytes each replica of topic holds on its broker's
// disks, by broker and partition, as DescribeLogDirs reports them: only
// the local log, never what is in remote storage. A future replica (a move
// between a broker's log directories) is left out.
func LocalLogSizes(ctx context.Context, adm *kadm.Client, topic string) (map[int32]map[int32]int64, error) {
	// DescribeLogDirs answers only for the partitions it is asked for: a
	// topic without partitions gets nothing back.
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("reading the metadata of topic %s: %w", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("topic %s is not in the metadata: %v", topic, td.Err)
	}
	set := kadm.TopicsSet{}
	for p := range td.Partitions {
		set.Add(topic, p)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("describing the log dirs of topic %s: %w", topic, err)
	}
	out := map[int32]map[int32]int64{}
	var errs []error
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			errs = append(errs, fmt.Errorf("broker %d, log dir %s: %w", d.Broker, d.Dir, d.Err))
			return
		}
		for p, dp := range d.Topics[topic] {
			if dp.IsFuture {
				continue
			}
			if out[d.Broker] == nil {
				out[d.Broker] = map[int32]int64{}
			}
			out[d.Broker][p] += dp.Size
		}
	})
	return out, errors.Join(errs...)
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

// RemoteLog is what the remote storage fixture holds of one partition.
type RemoteLog struct {
	Segments int
	// Bytes are the tiered segments' record bytes (their .log files),
	// indexes left out, comparable with LocalLogSizes.
	Bytes int64
	// EndOffset is the highest offset tiered, -1 if none.
	EndOffset int64
}

// RemoteLogs reads what the remote storage fixture holds of topic, by
// partition, straight from Cluster.RemoteStorageDir. Kafka itself reports
// remote sizes only as metrics (RemoteLogSizeBytes); tests compare against
// this. Segments of an earlier topic of the same name count too until
// Kafka deletes them.
func (c *Cluster) RemoteLogs(topic string) (map[int32]RemoteLog, error) {
	root := c.RemoteStorageDir()
	if root == "" {
		return nil, errors.New("kafkatest: the cluster has no remote storage (Options.Tiered is not set)")
	}
	out := map[int32]RemoteLog{}
	parts, err := os.ReadDir(filepath.Join(root, topic))
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, pe := range parts {
		p, err := strconv.ParseInt(pe.Name(), 10, 32)
		if err != nil {
			continue
		}
		logs, err := filepath.Glob(filepath.Join(root, topic, pe.Name(), "*", "*.log"))
		if err != nil {
			return nil, err
		}
		rl := RemoteLog{EndOffset: -1}
		for _, f := range logs {
			// <start>-<end>-<segment id>.log; the id may hold '-'.
			fields := strings.SplitN(filepath.Base(f), "-", 3)
			if len(fields) != 3 {
				continue
			}
			end, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				continue
			}
			fi, err := os.Stat(f)
			if err != nil {
				// Deleted by Kafka since the glob.
				continue
			}
			rl.Segments++
			rl.Bytes += fi.Size()
			rl.EndOffset = max(rl.EndOffset, end)
		}
		out[int32(p)] = rl
	}
	return out, nil
}

// LocalSegment is one segment of a partition's log on a broker's disk.
type LocalSegment struct {
	BaseOffset int64
	Bytes      int64
}

// LocalSegments lists the segments of topic-partition on broker's disk, by
// base offset; the last is the active one, which is never tiered. Segments
// that Kafka has deleted but not yet removed (.deleted) are left out.
func (c *Cluster) LocalSegments(broker int32, topic string, partition int32) ([]LocalSegment, error) {
	n, err := c.broker(broker)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(n.dataDir(), topic+"-"+strconv.Itoa(int(partition)))
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	var out []LocalSegment
	for _, f := range files {
		base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(f), ".log"), 10, 64)
		if err != nil {
			continue
		}
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		out = append(out, LocalSegment{BaseOffset: base, Bytes: fi.Size()})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("broker %d has no segment of %s-%d in %s", broker, topic, partition, dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BaseOffset < out[j].BaseOffset })
	return out, nil
}
