package provider_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// These checks ask the real cluster, never the provider's state.

func createTopicRF(t *testing.T, c *kafkatest.Cluster, topic string, partitions int32, rf int16) {
	t.Helper()
	resp, err := c.Admin().CreateTopic(context.Background(), partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
}

// fillTopic writes about total bytes of incompressible records, spread
// evenly over the topic's partitions.
func fillTopic(t *testing.T, c *kafkatest.Cluster, topic string, total int64) {
	t.Helper()
	took, err := kafkatest.Fill(context.Background(), c.BootstrapServers(), topic, total)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d MiB to %s in %s", total>>20, topic, took.Round(time.Millisecond))
}

// assertTopicReadable consumes the whole topic and checks its byte count.
func assertTopicReadable(t *testing.T, c *kafkatest.Cluster, topic string, total int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	want := sumEndOffsets(ctx, t, c, topic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got, bytes int64
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: got %d of %d records before timing out", topic, got, want)
		}
		fs.EachError(func(t2 string, p int32, err error) { t.Errorf("reading %s p%d: %v", t2, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got++; bytes += int64(len(r.Value)) })
	}
	if bytes < total*99/100 {
		t.Errorf("read %d bytes of %s, wrote about %d", bytes, topic, total)
	}
}

// sumEndOffsets adds up the end offsets of topic's partitions. A partition
// whose leader is moving answers a retriable error (NOT_LEADER_OR_FOLLOWER,
// OFFSET_NOT_AVAILABLE) for a moment: it is asked again, because counting it
// as 0 would let a loss check stop reading early and report records lost.
func sumEndOffsets(ctx context.Context, t *testing.T, c *kafkatest.Cluster, topic string) int64 {
	t.Helper()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		ends, err := c.Admin().ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			var sum int64
			ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
			return sum
		}
		if !kerr.IsRetriable(err) || ctx.Err() != nil {
			t.Fatalf("listing the end offsets of %s: %v", topic, err)
		}
		time.Sleep(wait)
	}
}

func countPartitions(t *testing.T, c *kafkatest.Cluster) int {
	t.Helper()
	md, err := c.Admin().Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, td := range md.Topics {
		n += len(td.Partitions)
	}
	return n
}

type assignment struct {
	perBroker, leaders map[int32]int
	racksOK            bool
	problems           []string
}

// readAssignment counts replicas and preferred leaders per broker and checks
// that no partition has two replicas in one rack.
func readAssignment(t *testing.T, c *kafkatest.Cluster) assignment {
	t.Helper()
	md, err := c.Admin().Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rack := map[int32]string{}
	for _, b := range md.Brokers {
		if b.Rack != nil {
			rack[b.NodeID] = *b.Rack
		}
	}
	a := assignment{perBroker: map[int32]int{}, leaders: map[int32]int{}, racksOK: true}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			seen := map[string]bool{}
			for i, r := range p.Replicas {
				a.perBroker[r]++
				if i == 0 {
					a.leaders[r]++
				}
				if seen[rack[r]] {
					a.racksOK = false
					a.problems = append(a.problems, fmt.Sprintf("%s p%d has two replicas in rack %s: %v", td.Topic, p.Partition, rack[r], p.Replicas))
				}
				seen[rack[r]] = true
			}
		}
	}
	return a
}

// assertLeadersSpread checks the cluster's leaders after an operation
// over n brokers: each broker is the preferred leader (first replica) of
// partitions/n partitions, within one, and every partition is led by its
// preferred leader. The operation elects them before it completes; a
// broker that answers metadata can show the elections a moment later, as
// it applies the same metadata records, so that part is polled for 5
// seconds at most (Kafka's own rebalance of leaders runs every 5 minutes,
// so it cannot pass for the operation's).
func assertLeadersSpread(t *testing.T, c *kafkatest.Cluster, brokers []int32) {
	t.Helper()
	a := readAssignment(t, c)
	partitions := 0
	for _, n := range a.leaders {
		partitions += n
	}
	n := len(brokers)
	lo, hi := partitions/n, (partitions+n-1)/n
	for _, b := range brokers {
		if l := a.leaders[b]; l < lo || l > hi {
			t.Errorf("broker %d is preferred leader of %d partitions; want %d..%d (%d partitions over %d brokers)", b, l, lo, hi, partitions, n)
		}
	}
	var astray []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		astray = notPreferredLeaders(t, c)
		if len(astray) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(astray) > 0 {
		t.Errorf("%d partitions are not led by their preferred leader: %s", len(astray), strings.Join(astray, "; "))
	}
	t.Logf("preferred leaders per broker %v", a.leaders)
}

// notPreferredLeaders lists the partitions whose leader is not their first
// replica, as "load p3 led by 2, preferred 4".
func notPreferredLeaders(t *testing.T, c *kafkatest.Cluster) []string {
	t.Helper()
	var out []string
	eachPartition(t, c, func(topic string, p kadm.PartitionDetail) {
		if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
			out = append(out, fmt.Sprintf("%s p%d led by %d, preferred %v", topic, p.Partition, p.Leader, p.Replicas))
		}
	})
	sort.Strings(out)
	return out
}

// eachPartition calls fn for every partition in the live metadata.
func eachPartition(t *testing.T, c *kafkatest.Cluster, fn func(topic string, p kadm.PartitionDetail)) {
	t.Helper()
	md, err := c.Admin().Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			fn(td.Topic, p)
		}
	}
}

// preferredLeaders counts, over every partition in the live metadata, the
// partitions each broker is the first replica (preferred leader) of and
// the replicas it holds; total counts the partitions with a replica.
func preferredLeaders(t *testing.T, c *kafkatest.Cluster) (leaders, replicas map[int32]int, total int) {
	t.Helper()
	leaders, replicas = map[int32]int{}, map[int32]int{}
	eachPartition(t, c, func(_ string, p kadm.PartitionDetail) {
		if len(p.Replicas) == 0 {
			return
		}
		total++
		leaders[p.Replicas[0]]++
		for _, b := range p.Replicas {
			replicas[b]++
		}
	})
	return leaders, replicas, total
}

// assertAssignmentIs checks that every partition of target has, in the
// live metadata, the replicas the plan gave it, in its order (the first is
// the preferred leader).
func assertAssignmentIs(t *testing.T, c *kafkatest.Cluster, target engine.Partitions) {
	t.Helper()
	live := readReplicas(t, c)
	differ := 0
	for _, p := range target {
		name := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		if got := live[name]; fmt.Sprint(got) != fmt.Sprint(p.Replicas) {
			differ++
			t.Errorf("partition %s has replicas %v, the plan's target is %v", name, got, p.Replicas)
		}
	}
	t.Logf("%d of %d partitions hold the replicas the plan targeted", len(target)-differ, len(target))
}

// readReplicas reads every partition's replicas from the live metadata,
// keyed "topic-partition".
func readReplicas(t *testing.T, c *kafkatest.Cluster) map[string][]int32 {
	t.Helper()
	md, err := c.Admin().Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	live := map[string][]int32{}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			live[fmt.Sprintf("%s-%d", td.Topic, p.Partition)] = p.Replicas
		}
	}
	return live
}

// assertScaledOut checks the real assignment after 3 → 5 with racks
// a, b, c, a, b: broker 3 (rack c alone) holds every partition; brokers of
// racks a and b share the rest within one replica; preferred leaders within
// one of the mean over all five brokers.
func assertScaledOut(t *testing.T, c *kafkatest.Cluster, partitions int) {
	t.Helper()
	a := readAssignment(t, c)
	if !a.racksOK {
		t.Errorf("rack spread broken: %s", strings.Join(a.problems, "; "))
	}
	if a.perBroker[3] != partitions {
		t.Errorf("broker 3, alone in rack c, holds %d replicas; with RF 3 and 3 racks it must hold all %d", a.perBroker[3], partitions)
	}
	for _, pair := range [][2]int32{{1, 4}, {2, 5}} {
		x, y := a.perBroker[pair[0]], a.perBroker[pair[1]]
		if x+y != partitions || x-y > 1 || y-x > 1 {
			t.Errorf("brokers %d and %d share their rack's %d replicas as %d and %d; want within one of each other", pair[0], pair[1], partitions, x, y)
		}
	}
	lo, hi := partitions/5, (partitions+4)/5
	for b := int32(1); b <= 5; b++ {
		if l := a.leaders[b]; l < lo || l > hi {
			t.Errorf("broker %d is preferred leader of %d partitions; want %d..%d (%d partitions over 5 brokers)", b, l, lo, hi, partitions)
		}
	}
	t.Logf("replicas per broker %v, preferred leaders %v", a.perBroker, a.leaders)
}

// assertNoThrottles checks that no broker and no topic keeps a replication
// throttle.
//
// The provider waits until one broker shows the throttles gone; another
// can show them a moment longer, until it applies the same metadata
// records. Throttles the provider left stay, and fail it after that moment.
func assertNoThrottles(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	left := throttlesSet(t, c)
	for deadline := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		left = throttlesSet(t, c)
	}
	for _, th := range left {
		t.Errorf("%s", th)
	}
}

// throttlesSet lists the replication throttles set on running brokers and
// on topics, as "broker 4 keeps leader.replication.throttled.rate=1048576".
func throttlesSet(t *testing.T, c *kafkatest.Cluster) []string {
	t.Helper()
	ctx := context.Background()
	var ids []int32
	for _, b := range c.Brokers() {
		if b.Running {
			ids = append(ids, b.ID)
		}
	}
	bcs, err := c.Admin().DescribeBrokerConfigs(ctx, ids...)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rc := range bcs {
		for _, cfg := range rc.Configs {
			if strings.Contains(cfg.Key, "replication.throttled") && cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig {
				out = append(out, fmt.Sprintf("broker %s keeps %s=%s", rc.Name, cfg.Key, cfg.MaybeValue()))
			}
		}
	}
	topics, err := c.Admin().ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tcs, err := c.Admin().DescribeTopicConfigs(ctx, topics.Names()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range tcs {
		for _, cfg := range rc.Configs {
			if strings.Contains(cfg.Key, "replication.throttled") && cfg.Source == kmsg.ConfigSourceDynamicTopicConfig {
				out = append(out, fmt.Sprintf("topic %s keeps %s=%q", rc.Name, cfg.Key, cfg.MaybeValue()))
			}
		}
	}
	return out
}

func assertOperationCompleted(t *testing.T, c *kafkatest.Cluster, target int) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	op, err := cl.Operations().Load(context.Background(), "cluster/"+c.ClusterID())
	if err != nil {
		t.Fatal(err)
	}
	if op == nil || op.Phase != executor.PhaseCompleted || op.TargetBrokerCount != target {
		t.Errorf("operation recorded in %s: %+v; want completed at %d brokers", kafka.OperationsTopic, op, target)
		return
	}
	t.Logf("operation %s: %d groups, %d moves, %d bytes, throttle %d B/s, %s from start to completion",
		op.ID, len(op.Plan.Groups), op.Plan.ReplicaMoves, op.Plan.TotalBytes, op.ThrottleRate, op.CompletedAt.Sub(op.StartedAt).Round(time.Millisecond))
}

// assertOnlyBrokers checks the registered brokers, that every partition
// lives on them, and that each of them holds at least one replica: a broker
// the apply added but never moved anything onto, or one it emptied by
// mistake, is not part of the cluster in any sense a user cares about.
func assertOnlyBrokers(t *testing.T, c *kafkatest.Cluster, want []int32) {
	t.Helper()
	regs, err := kafkatest.DescribeCluster(context.Background(), c.Client())
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	for _, r := range regs {
		got = append(got, r.ID)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("registered brokers %v, want %v", got, want)
	}
	a := readAssignment(t, c)
	for b, n := range a.perBroker {
		found := false
		for _, w := range want {
			found = found || w == b
		}
		if !found {
			t.Errorf("broker %d still holds %d replicas", b, n)
		}
	}
	for _, w := range want {
		if a.perBroker[w] == 0 {
			t.Errorf("broker %d holds no replica; replicas per broker: %v", w, a.perBroker)
		}
	}
}

// ledger is an idempotent acks=all producer that writes numbered records
// with checksums for the whole test and remembers what was acknowledged.
type ledger struct {
	t      *testing.T
	c      *kafkatest.Cluster
	topic  string
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  map[uint64]bool
	errs   int
	// mayFail bounds errs, checked by verify; why says what in the test
	// makes that many failed produces acceptable. Zero unless a test says
	// otherwise with allowFailures.
	mayFail int
	why     string
}

// allowFailures sets how many produces may fail in this test, and why. A
// failed produce is one the producer gave up on after retrying for its
// whole delivery timeout (2 minutes): an outage that long is what the
// bound admits, so it is zero unless the test itself causes one.
func (l *ledger) allowFailures(n int, why string) {
	l.mayFail, l.why = n, why
}

// ledgerEvery is the pause between two of the ledger's records: 50 a
// second, eight a second on each of its six partitions, so that any
// leader change or kill of a test lands between acknowledged records.
//
// ledgerLinger is how long a record may wait for others of its partition
// before the producer sends them: the brokers' cost is per produce
// request far more than per record. Measured on an otherwise idle
// 3-broker cluster here (2026-12-06, 60 s each), the ledger's records
// added 9.0 s of the brokers' CPU a minute sent one by one, 4.3 s with
// 100 ms of linger and 1.1 s with 250 ms: a tenth of a core per running
// ledger, on a 2-core machine that runs two or three tests at once. Every
// record is still acknowledged, or fails, on its own, and a partition
// still sends some four times a second.
const (
	ledgerEvery  = 20 * time.Millisecond
	ledgerLinger = 250 * time.Millisecond
)

func ledgerValue(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	sum := sha256.Sum256(b[:])
	return []byte(hex.EncodeToString(sum[:]))
}

func startLedger(t *testing.T, c *kafkatest.Cluster, topic string) *ledger {
	t.Helper()
	createTopicRF(t, c, topic, 6, 3)
	return runLedger(t, c, topic)
}

// runLedger starts the ledger's producer on topic, which already exists.
func runLedger(t *testing.T, c *kafkatest.Cluster, topic string) *ledger {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(2*time.Minute), kgo.ProducerLinger(ledgerLinger))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &ledger{t: t, c: c, topic: topic, cancel: cancel, done: make(chan struct{}), acked: map[uint64]bool{},
		why: "nothing in the test may stop a produce for 2 minutes"}
	go func() {
		defer close(l.done)
		defer cl.Close()
		var wg sync.WaitGroup
		for seq := uint64(0); ctx.Err() == nil; seq++ {
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], seq)
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Key: k[:], Value: ledgerValue(seq)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				l.mu.Lock()
				defer l.mu.Unlock()
				if err != nil {
					l.errs++
					return
				}
				l.acked[binary.BigEndian.Uint64(r.Key)] = true
			})
			time.Sleep(ledgerEvery)
		}
		wg.Wait()
	}()
	t.Cleanup(func() { cancel(); <-l.done })
	return l
}

func (l *ledger) stop() int {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Logf("ledger: %d records acknowledged, %d failed (failures are not acknowledged, so not counted as lost)", len(l.acked), l.errs)
	return len(l.acked)
}

// verify reads the ledger topic back: every acknowledged record is there
// with its checksum. With nothing acknowledged, "nothing lost" would prove
// nothing, so that fails too: every fault test gets the check at once. An
// outage is not a loss but fails too: more failed produces than the test
// allows (allowFailures; none by default) means producers were refused,
// NOT_ENOUGH_REPLICAS say, for longer than the delivery timeout.
func (l *ledger) verify(ctx context.Context) {
	t := l.t
	t.Helper()
	if len(l.acked) == 0 {
		t.Errorf("the ledger had no record acknowledged on %s: the load never ran, so no loss check is possible", l.topic)
	}
	l.mu.Lock()
	errs := l.errs
	l.mu.Unlock()
	if errs > l.mayFail {
		t.Errorf("%d acks=all produces to %s failed, over the bound of %d by %d (%s)", errs, l.topic, l.mayFail, errs-l.mayFail, l.why)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	want := sumEndOffsets(ctx, t, l.c, l.topic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(l.c.BootstrapServers()...), kgo.ConsumeTopics(l.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[uint64]bool{}
	var got int64
	bad := 0
	for got < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			got++
			if len(r.Key) != 8 {
				return // not the ledger's: a fill of the same topic, say
			}
			seq := binary.BigEndian.Uint64(r.Key)
			if string(r.Value) != string(ledgerValue(seq)) {
				bad++
			}
			seen[seq] = true
		})
	}
	lost := 0
	for seq := range l.acked {
		if !seen[seq] {
			lost++
		}
	}
	t.Logf("ledger: read %d records, %d acknowledged, %d lost, %d with a wrong checksum", got, len(l.acked), lost, bad)
	if lost > 0 || bad > 0 {
		t.Errorf("%d acknowledged records lost and %d corrupted", lost, bad)
	}
}

// reassigning lists the partitions being reassigned, as the controller
// reports them (kadm's helper sends nothing for an empty topic set, so the
// provider's adapter is used).
func reassigning(t *testing.T, c *kafkatest.Cluster) []kafka.Reassignment {
	t.Helper()
	rs, err := listReassignments(c)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func listReassignments(c *kafkatest.Cluster) ([]kafka.Reassignment, error) {
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.ListReassignments(context.Background())
}
