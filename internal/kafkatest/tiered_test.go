package kafkatest_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// The tiered topic of TestTieredStorage: Kafka 4's smallest segment, and a
// local retention of two of them, so that most of each partition lives
// only in remote storage and the local tail spans several segments, tiered
// ones and the active one.
const (
	tieredTopic          = "tiered"
	tieredSegmentBytes   = 1 << 20
	tieredLocalRetention = 2 << 20
	tieredFillBytes      = 16 << 20 // over two partitions
)

// TestTieredStorage runs a real tiered cluster: the segments of a topic
// with remote.storage.enable go to the remote storage fixture, the brokers
// keep only local.retention.bytes of them, every record still reads from
// offset 0 (the old ones from remote storage), and a new replica copies
// only the leader's local log, or with KIP-1023 only the part not tiered
// yet. It prints the figures the planner will have to count with.
func TestTieredStorage(t *testing.T) {
	began := time.Now()
	c := kafkatest.StartT(t, kafkatest.Options{
		Brokers: 3,
		// Started with KIP-1023 on, so that the option itself is what the
		// first move runs under; the second turns it off dynamically.
		Tiered: &kafkatest.TieredOptions{FollowerFetchLastTieredOffset: true},
	})
	ctx := t.Context()
	t.Logf("tiered cluster of 3 brokers ready in %v, remote storage in %s", time.Since(began).Round(time.Millisecond), c.RemoteStorageDir())

	// Two partitions on brokers 1 and 2 only, so that broker 3 can take
	// a new replica of each.
	createTopicWithAssignment(t, c.Client(), tieredTopic, [][]int32{{1, 2}, {2, 1}}, map[string]string{
		"remote.storage.enable": "true",
		"segment.bytes":         strconv.Itoa(tieredSegmentBytes),
		"local.retention.bytes": strconv.Itoa(tieredLocalRetention),
	})
	wrote := time.Now()
	took, err := kafkatest.Fill(ctx, c.BootstrapServers(), tieredTopic, tieredFillBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s to %s in %v", mib(tieredFillBytes), tieredTopic, took.Round(time.Millisecond))

	settled := waitTiered(t, c)
	t.Logf("tiering settled %v after the writes", time.Since(wrote.Add(took)).Round(time.Millisecond))
	for _, s := range settled {
		t.Logf("%s-%d on leader %d: total %s, local %s, remote %s (%d segments), untiered %s; offsets start %d, local start %d, last tiered %d, end %d",
			tieredTopic, s.offsets.Partition, s.offsets.Leader, mib(s.total()), mib(s.local), mib(s.remote.Bytes), s.remote.Segments,
			mib(s.untiered()), s.offsets.LogStart, s.offsets.LocalLogStart, s.offsets.LastTiered, s.offsets.End)
		if s.offsets.LocalLogStart <= s.offsets.LogStart {
			t.Errorf("%s-%d: local log start %d has not moved past the log start %d", tieredTopic, s.offsets.Partition, s.offsets.LocalLogStart, s.offsets.LogStart)
		}
		// Only the bytes before the local log start stay in remote
		// storage whatever a new replica does.
		remoteOnly, estimate := s.total()-s.local, kafka.RemoteOnlyBytes(s.offsets, s.local)
		t.Logf("%s-%d: %s only in remote storage, estimated from offsets %s", tieredTopic, s.offsets.Partition, mib(remoteOnly), mib(estimate))
		if d := estimate - remoteOnly; d < -remoteOnly/4 || d > remoteOnly/4 {
			t.Errorf("RemoteOnlyBytes estimated %s for %s-%d, %s are only in remote storage", mib(estimate), tieredTopic, s.offsets.Partition, mib(remoteOnly))
		}
		if s.local >= s.total()/2 {
			t.Errorf("%s-%d: %s of %s are local; local.retention.bytes is %s", tieredTopic, s.offsets.Partition, mib(s.local), mib(s.total()), mib(tieredLocalRetention))
		}
	}

	t.Run("every record reads from offset 0", func(t *testing.T) {
		consumeAll(t, c, settled)
	})

	// A new replica on broker 3, first with KIP-1023 (from the option),
	// then without it (the cluster-wide dynamic setting overrides the
	// static one).
	moves := []struct {
		name            string
		partition       int32
		to              []int32
		fetchLastTiered bool
	}{
		{"with follower.fetch.last.tiered.offset.enable", 0, []int32{1, 3}, true},
		{"without follower.fetch.last.tiered.offset.enable", 1, []int32{2, 3}, false},
	}
	for _, m := range moves {
		t.Run("new replica "+m.name, func(t *testing.T) {
			s := settled[m.partition]
			if !m.fetchLastTiered {
				setFetchLastTiered(t, c, false)
			}
			moveBegan := time.Now()
			copied := reassignAndWait(t, c, m.partition, m.to, 3)
			estimate := kafka.ReplicaCopyBytes(s.offsets, s.local, m.fetchLastTiered)
			t.Logf("%s-%d -> %v %s: copied %s to broker 3 in %v; total %s, leader's local %s, remote %s, untiered %s; estimated from offsets %s",
				tieredTopic, m.partition, m.to, m.name, mib(copied), time.Since(moveBegan).Round(time.Millisecond),
				mib(s.total()), mib(s.local), mib(s.remote.Bytes), mib(s.untiered()), mib(estimate))
			want := s.local
			if m.fetchLastTiered {
				want = s.untiered()
			}
			// The new replica copies the leader's segments from its start
			// offset on, byte for byte (nothing writes meanwhile); the
			// margin, 64 KiB, is for a segment the new replica rolls at
			// another point than the leader did.
			if diff := copied - want; diff < -64<<10 || diff > 64<<10 {
				t.Errorf("broker 3 holds %s of %s-%d, want about %s (the leader's %s)", mib(copied), tieredTopic, m.partition, mib(want),
					map[bool]string{true: "untiered part", false: "local log"}[m.fetchLastTiered])
			}
			if d := estimate - copied; d < -max(copied/4, 256<<10) || d > max(copied/4, 256<<10) {
				t.Errorf("ReplicaCopyBytes estimated %s for %s-%d, the replica copied %s", mib(estimate), tieredTopic, m.partition, mib(copied))
			}
		})
	}

	// The new replicas lead: one holds only the untiered tail, the other
	// the leader's local log, and both must serve the rest from remote
	// storage.
	t.Run("every record reads from the new replicas as leaders", func(t *testing.T) {
		for _, m := range moves {
			lead := []int32{3, m.to[0]}
			reassignAndWait(t, c, m.partition, lead, 3)
		}
		res, err := c.Admin().ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{tieredTopic: {0: {}, 1: {}}})
		if err != nil {
			t.Fatalf("electing broker 3 to lead %s: %v", tieredTopic, err)
		}
		for _, ps := range res {
			for p, r := range ps {
				// ELECTION_NOT_NEEDED: the controller moved the leadership
				// itself.
				if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
					t.Fatalf("electing broker 3 to lead %s-%d: %v %s", tieredTopic, p, r.Err, r.ErrMessage)
				}
			}
		}
		waitFor(t, time.Minute, "broker 3 to lead both partitions of "+tieredTopic, func(ctx context.Context) (bool, error) {
			md, err := c.Admin().Metadata(ctx, tieredTopic)
			if err != nil {
				return false, err
			}
			for _, p := range md.Topics[tieredTopic].Partitions {
				if p.Leader != 3 {
					return false, nil
				}
			}
			return true, nil
		})
		consumeAll(t, c, settled)
	})

	// Remote retention: with retention.bytes below the partitions' total,
	// the leaders delete the oldest remote segments through the fixture's
	// deleteLogSegmentData, and the log start offset moves up.
	t.Run("retention deletes from remote storage", func(t *testing.T) {
		const retention = 4 << 20
		v := strconv.Itoa(retention)
		resp, err := c.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.bytes", Value: &v}}, tieredTopic)
		if err == nil {
			for _, r := range resp {
				if r.Err != nil {
					err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
				}
			}
		}
		if err != nil {
			t.Fatalf("setting retention.bytes=%s on %s: %v", v, tieredTopic, err)
		}
		var remote map[int32]kafkatest.RemoteLog
		waitFor(t, 2*time.Minute, fmt.Sprintf("the remote logs of %s to shrink under retention.bytes %s", tieredTopic, mib(retention)), func(ctx context.Context) (bool, error) {
			offs, err := kafkatest.ListTieredOffsets(ctx, c.Client(), tieredTopic)
			if err != nil {
				return false, err
			}
			if remote, err = c.RemoteLogs(tieredTopic); err != nil {
				return false, err
			}
			for _, o := range offs {
				if o.LogStart == 0 || remote[o.Partition].Bytes > retention {
					return false, nil
				}
			}
			return true, nil
		})
		for p, r := range remote {
			t.Logf("%s-%d after retention.bytes %s: remote %s in %d segments (was %s)", tieredTopic, p, mib(retention), mib(r.Bytes), r.Segments, mib(settled[p].remote.Bytes))
		}
		checkRemoteFiles(t, c.RemoteStorageDir())
	})
}

// checkRemoteFiles checks that the remote storage holds whole segments
// only: no file left of a deleted segment or of an unfinished copy.
func checkRemoteFiles(t *testing.T, root string) {
	t.Helper()
	bySegment := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if strings.HasSuffix(name, ".tmp") {
			t.Errorf("remote storage holds an unfinished copy: %s", path)
		}
		seg, suffix, _ := strings.Cut(name, ".")
		key := filepath.Join(filepath.Dir(path), seg)
		bySegment[key] = append(bySegment[key], suffix)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for seg, suffixes := range bySegment {
		if !slices.Contains(suffixes, "log") {
			t.Errorf("remote storage holds %v of segment %s, but not its .log: left behind by a deletion", suffixes, seg)
		}
	}
}

// tieredPartition is one partition once its tiering has settled.
type tieredPartition struct {
	offsets  kafkatest.TieredOffsets
	local    int64 // the leader's local log, as DescribeLogDirs reports it
	remote   kafkatest.RemoteLog
	segments []kafkatest.LocalSegment // on the leader's disk
}

// untiered are the local bytes after the last tiered offset: the segments
// whose base offset is past it (segments tier whole).
func (p tieredPartition) untiered() int64 {
	var n int64
	for _, s := range p.segments {
		if s.BaseOffset > p.offsets.LastTiered {
			n += s.Bytes
		}
	}
	return n
}

// total are the partition's bytes wherever they are: in remote storage,
// plus what is only local.
func (p tieredPartition) total() int64 { return p.remote.Bytes + p.untiered() }

// waitTiered waits until, on every partition's leader, every rolled
// segment is in remote storage and the local log has shrunk to its local
// retention; it returns the partitions' figures then.
func waitTiered(t *testing.T, c *kafkatest.Cluster) map[int32]tieredPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var why string
	for {
		out, reason, err := tieredState(ctx, c)
		if err == nil && reason == "" {
			return out
		}
		if err != nil {
			reason = err.Error()
		}
		why = reason
		select {
		case <-ctx.Done():
			t.Fatalf("tiering of %s did not settle within 3m: %s", tieredTopic, why)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// tieredState reads the partitions' figures and says why tiering has not
// settled yet ("" once it has).
func tieredState(ctx context.Context, c *kafkatest.Cluster) (map[int32]tieredPartition, string, error) {
	offs, err := kafkatest.ListTieredOffsets(ctx, c.Client(), tieredTopic)
	if err != nil {
		return nil, "", err
	}
	sizes, err := kafkatest.LocalLogSizes(ctx, c.Admin(), tieredTopic)
	if err != nil {
		return nil, "", err
	}
	remote, err := c.RemoteLogs(tieredTopic)
	if err != nil {
		return nil, "", err
	}
	out := map[int32]tieredPartition{}
	for _, o := range offs {
		segs, err := c.LocalSegments(o.Leader, tieredTopic, o.Partition)
		if err != nil {
			return nil, "", err
		}
		p := tieredPartition{offsets: o, local: sizes[o.Leader][o.Partition], remote: remote[o.Partition], segments: segs}
		active := segs[len(segs)-1]
		var onDisk int64
		for _, s := range segs {
			onDisk += s.Bytes
		}
		name := fmt.Sprintf("%s-%d on broker %d", tieredTopic, o.Partition, o.Leader)
		switch {
		case o.LastTiered+1 != active.BaseOffset:
			return nil, fmt.Sprintf("%s: last tiered offset %d, but the active segment starts at %d", name, o.LastTiered, active.BaseOffset), nil
		case p.remote.EndOffset != o.LastTiered:
			return nil, fmt.Sprintf("%s: the remote storage ends at offset %d, Kafka says %d is tiered", name, p.remote.EndOffset, o.LastTiered), nil
		case len(segs) > 1 && onDisk-segs[0].Bytes >= tieredLocalRetention:
			// Kafka deletes the oldest local segment while what stays
			// without it is at least local.retention.bytes.
			return nil, fmt.Sprintf("%s: %s in %d local segments, over local.retention.bytes %s", name, mib(onDisk), len(segs), mib(tieredLocalRetention)), nil
		case p.local != onDisk:
			return nil, fmt.Sprintf("%s: DescribeLogDirs says %s, the segments hold %s", name, mib(p.local), mib(onDisk)), nil
		case o.LocalLogStart != segs[0].BaseOffset:
			// The offsets are read before the segments: a local segment
			// deleted in between leaves the local log start of before
			// beside the sizes of after (loaded run 2 of 1948a2b read
			// 1265 where the segments began at about 1518, and the
			// estimate from offsets came out at 3.35 MiB for 5.94).
			return nil, fmt.Sprintf("%s: local log start offset %d, but the first local segment starts at %d", name, o.LocalLogStart, segs[0].BaseOffset), nil
		}
		out[o.Partition] = p
	}
	return out, "", nil
}

// consumeAll reads every partition from offset 0 to its end and checks
// that each offset comes back once, in order: the records before the
// local log start come from remote storage.
func consumeAll(t *testing.T, c *kafkatest.Cluster, parts map[int32]tieredPartition) {
	t.Helper()
	start := map[int32]kgo.Offset{}
	next := map[int32]int64{}
	for p := range parts {
		start[p] = kgo.NewOffset().At(0)
		next[p] = 0
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tieredTopic: start}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	var fromRemote, records int
	done := func() bool {
		for p, s := range parts {
			if next[p] < s.offsets.End {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s from offset 0: stopped at %v of ends %v: %v", tieredTopic, next, ends(parts), ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("reading %s-%d at offset %d: %v", topic, p, next[p], err)
		})
		if t.Failed() {
			t.FailNow()
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("%s-%d: offset %d came back, expected %d", tieredTopic, r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			records++
			if r.Offset < parts[r.Partition].offsets.LocalLogStart {
				fromRemote++
			}
		})
	}
	t.Logf("read all %d records of %s from offset 0 in %v, %d of them before the first leaders' local log start (from remote storage)",
		records, tieredTopic, time.Since(began).Round(time.Millisecond), fromRemote)
	if fromRemote == 0 {
		t.Errorf("no record of %s came from before the local log start", tieredTopic)
	}
}

func ends(parts map[int32]tieredPartition) map[int32]int64 {
	out := map[int32]int64{}
	for p, s := range parts {
		out[p] = s.offsets.End
	}
	return out
}

// createTopicWithAssignment creates topic with one replica list per
// partition (the first replica the preferred leader).
func createTopicWithAssignment(t *testing.T, cl *kgo.Client, topic string, replicas [][]int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, rs := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
	for _, r := range resp.Topics {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = ": " + *r.ErrorMessage
			}
			t.Fatalf("creating topic %s: %v%s", topic, err, msg)
		}
	}
}

// setFetchLastTiered sets follower.fetch.last.tiered.offset.enable as the
// cluster-wide dynamic default and waits until broker 3 applies it.
func setFetchLastTiered(t *testing.T, c *kafkatest.Cluster, on bool) {
	t.Helper()
	const key = "follower.fetch.last.tiered.offset.enable"
	v := strconv.FormatBool(on)
	resp, err := c.Admin().AlterBrokerConfigs(t.Context(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &v}})
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("setting %s=%s cluster-wide: %v", key, v, err)
	}
	waitFor(t, time.Minute, fmt.Sprintf("broker 3 to apply %s=%s", key, v), func(ctx context.Context) (bool, error) {
		rcs, err := c.Admin().DescribeBrokerConfigs(ctx, 3)
		if err != nil {
			return false, err
		}
		for _, rc := range rcs {
			for _, cfg := range rc.Configs {
				if cfg.Key == key && cfg.Value != nil && *cfg.Value == v {
					return true, nil
				}
			}
		}
		return false, nil
	})
}

// reassignAndWait moves a partition of the tiered topic to replicas, waits
// until the reassignment is done and newBroker is in the ISR, and returns
// the bytes newBroker then holds of it.
func reassignAndWait(t *testing.T, c *kafkatest.Cluster, partition int32, replicas []int32, newBroker int32) int64 {
	t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(tieredTopic, partition, replicas)
	resp, err := c.Admin().AlterPartitionAssignments(t.Context(), req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("reassigning %s-%d to %v: %v", tieredTopic, partition, replicas, err)
	}
	waitFor(t, 2*time.Minute, fmt.Sprintf("%s-%d to move to %v", tieredTopic, partition, replicas), func(ctx context.Context) (bool, error) {
		ongoing, err := c.Admin().ListPartitionReassignments(ctx, nil)
		if err != nil {
			return false, err
		}
		if _, busy := ongoing[tieredTopic][partition]; busy {
			return false, nil
		}
		md, err := c.Admin().Metadata(ctx, tieredTopic)
		if err != nil {
			return false, err
		}
		p := md.Topics[tieredTopic].Partitions[partition]
		return slices.Equal(p.Replicas, replicas) && slices.Contains(p.ISR, newBroker), nil
	})
	sizes, err := kafkatest.LocalLogSizes(t.Context(), c.Admin(), tieredTopic)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := sizes[newBroker][partition]
	if !ok {
		t.Fatalf("broker %d reports no replica of %s-%d after the move: %v", newBroker, tieredTopic, partition, sizes)
	}
	return got
}

// waitFor polls cond every 250ms until it holds, failing t after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting %v for %s: %v (last error: %v)", d, what, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// The fixture compiles against the storage API of the Kafka the brokers
// run; a different one could load and then fail on a changed interface.
func TestRemoteStoragePomPinsKafkaVersion(t *testing.T) {
	dir, err := kafkatest.RemoteStorageProjectDir()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<kafka.version>([^<]+)</kafka.version>`).FindSubmatch(raw)
	if m == nil || string(m[1]) != kafkatest.KafkaVersion {
		t.Fatalf("%s/pom.xml pins Kafka %q, kafkatest.KafkaVersion is %q", dir, m, kafkatest.KafkaVersion)
	}
}

// Kafka 3.9 has tiered storage but not KIP-1023; asking for it there is a
// mistake Start names before any JVM starts.
func TestTieredOptionsRefuseKIP1023OnKafka39(t *testing.T) {
	_, err := kafkatest.Start(t.Context(), kafkatest.Options{
		KafkaVersion: kafkatest.KafkaVersion39,
		Tiered:       &kafkatest.TieredOptions{FollowerFetchLastTieredOffset: true},
	})
	if err == nil || !strings.Contains(err.Error(), "follower.fetch.last.tiered.offset.enable") {
		t.Fatalf("Start on Kafka %s with KIP-1023: %v, want an error naming follower.fetch.last.tiered.offset.enable", kafkatest.KafkaVersion39, err)
	}
}
