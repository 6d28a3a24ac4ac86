package kafkatest

// What Kafka tells of a tiered partition, read straight from the cluster
// (and from the remote storage fixture's directory), to check the
// planner's estimates of what a new replica copies (internal/kafka's
// ReplicaCopyBytes and RemoteOnlyBytes) against what really happens.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// TieredOffsets are one partition's offsets as its leader reports them:
// the planner's own type (internal/kafka), which estimates from them what
// a new replica copies (kafka.ReplicaCopyBytes) and what stays remote
// (kafka.RemoteOnlyBytes). The tests here check those rules against what
// a real tiered cluster copies.
type TieredOffsets = kafka.TieredOffsets

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
	for _, ts := range []int64{-2, kafka.TimestampEarliestLocal, kafka.TimestampLatestTiered, -1} {
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
				if o, ok := out[p.Partition]; ok {
					o.Set(ts, p.Offset)
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

// WaitTiered waits until every replica of topic keeps at most maxLocal
// bytes on its broker's disk and every leader's local log starts past its
// log start (the rest is in remote storage only), then returns what the
// leaders hold locally and what remote storage holds of topic. A test that
// plans a move of a tiered topic starts from there: before it, a replica's
// local log still holds segments that are about to be tiered and deleted,
// and what a new replica copies is not yet what it will be.
func (c *Cluster) WaitTiered(ctx context.Context, topic string, maxLocal int64) (local, remote int64, err error) {
	var sizes map[int32]map[int32]int64
	for {
		offs, err := ListTieredOffsets(ctx, c.Client(), topic)
		if err != nil {
			return 0, 0, err
		}
		if sizes, err = LocalLogSizes(ctx, c.Admin(), topic); err != nil {
			return 0, 0, err
		}
		settled := true
		local = 0
		for _, o := range offs {
			local += sizes[o.Leader][o.Partition]
			settled = settled && o.LocalLogStart > o.LogStart
		}
		for _, ps := range sizes {
			for _, s := range ps {
				settled = settled && s <= maxLocal
			}
		}
		if settled {
			logs, err := c.RemoteLogs(topic)
			if err != nil {
				return 0, 0, err
			}
			for _, l := range logs {
				remote += l.Bytes
			}
			return local, remote, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("kafkatest: the replicas of %s did not shrink to %d bytes each (local sizes by broker and partition: %v): %w", topic, maxLocal, sizes, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
