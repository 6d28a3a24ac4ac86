package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// countingClient is a client on the shared cluster whose requests are
// counted, warmed up so that connection set-up does not count.
func countingClient(t *testing.T) (*kafka.Client, *kafkatest.RequestCount) {
	t.Helper()
	c, _ := sharedCluster(t)
	rc := &kafkatest.RequestCount{}
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers(), OnRequest: rc.Add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if _, err := cl.ClusterID(context.Background()); err != nil {
		t.Fatal(err)
	}
	rc.Reset()
	return cl, rc
}

func createTopics(t *testing.T, cl *kafka.Client, prefix string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%03d", prefix, i)
		if err := cl.CreateTopic(ctx, name, map[int32][]int32{0: {int32(i%3 + 1)}}, map[string]string{"retention.ms": fmt.Sprint(60000 + i)}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	for _, name := range names {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		err := cl.AwaitTopicReady(actx, name, 1, 1)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// DescribeTopics reads any number of topics in one Metadata and one
// DescribeConfigs request, and keeps only the topics' own configs apart.
func TestDescribeTopicsIsBatched(t *testing.T) {
	_, setup := sharedCluster(t)
	names := createTopics(t, setup, "batched", 40)
	cl, rc := countingClient(t)

	got, err := cl.DescribeTopics(context.Background(), append(names, "batched-missing"))
	if err != nil {
		t.Fatal(err)
	}
	if m, dc := rc.Of("Metadata"), rc.Of("DescribeConfigs"); m != 1 || dc != 1 {
		t.Errorf("describing 41 topics took %d Metadata and %d DescribeConfigs requests (%s); want one each", m, dc, rc)
	}
	if len(got) != 40 {
		t.Fatalf("described %d topics, want the 40 that exist", len(got))
	}
	for i, name := range names {
		d := got[name]
		if len(d.Partitions) != 1 || d.Partitions[0].Replicas[0] != int32(i%3+1) {
			t.Errorf("%s: partitions %+v", name, d.Partitions)
		}
		if v := d.Configs["retention.ms"]; v != fmt.Sprint(60000+i) || len(d.Configs) != 1 {
			t.Errorf("%s: own configs %v, want only retention.ms=%d", name, d.Configs, 60000+i)
		}
		if d.Effective["cleanup.policy"] != "delete" || d.Configs["cleanup.policy"] != "" {
			t.Errorf("%s: the broker default cleanup.policy must be effective (%q) but not the topic's own", name, d.Effective["cleanup.policy"])
		}
	}
}

// A refresh of many topics, ten at a time as Terraform reads them, costs a
// handful of requests; a topic this client changed is read afresh.
func TestTopicReaderServesARefreshFromOneBatch(t *testing.T) {
	_, setup := sharedCluster(t)
	names := createTopics(t, setup, "refresh", 60)
	cl, rc := countingClient(t)
	r := kafka.NewTopicReader(cl)
	ctx := context.Background()

	work := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				d, ok, err := r.Describe(ctx, name)
				mu.Lock()
				if err != nil || !ok || d.Name != name || len(d.Configs) != 1 {
					failures = append(failures, fmt.Sprintf("%s: ok %v err %v %+v", name, ok, err, d))
				}
				mu.Unlock()
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d reads failed: %v", len(failures), failures[0])
	}
	if total := rc.Of("Metadata") + rc.Of("DescribeConfigs"); total > 5 {
		t.Errorf("a refresh of 60 topics took %d Metadata+DescribeConfigs requests (%s); want at most 5, not 2 per topic", total, rc)
	}
	t.Logf("refresh of 60 topics: %s", rc)

	// Changed through this client: forgotten, and read afresh.
	if err := cl.AlterTopicConfigs(ctx, names[0], map[string]string{"retention.ms": "123456"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cl.AwaitTopicConfigs(ctx, names[0], map[string]string{"retention.ms": "123456"}, nil); err != nil {
		t.Fatal(err)
	}
	r.Invalidate(names[0])
	d, _, err := r.Describe(ctx, names[0])
	if err != nil || d.Configs["retention.ms"] != "123456" {
		t.Errorf("after Invalidate, %s reads retention.ms=%q (err %v); want the new 123456", names[0], d.Configs["retention.ms"], err)
	}
	if _, ok, err := r.Describe(ctx, "refresh-never-created"); ok || err != nil {
		t.Errorf("a missing topic reads as ok=%v err=%v; want not found", ok, err)
	}
}

// The config, partition and delete waits return only once every broker
// agrees, and the partition growth is explicit.
func TestTopicChangesAreAwaitedOnEveryBroker(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.CreateTopic(ctx, "grow", map[int32][]int32{0: {1, 2}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cl.AwaitTopicReady(ctx, "grow", 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := cl.ValidateCreatePartitions(ctx, kafka.NewPartitions{Topic: "grow", Count: 3}); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if got, _ := cl.DescribeTopics(ctx, []string{"grow"}); len(got["grow"].Partitions) != 1 {
		t.Fatalf("the dry run grew the topic to %d partitions", len(got["grow"].Partitions))
	}
	if err := cl.CreatePartitions(ctx, kafka.NewPartitions{Topic: "grow", Count: 3, Assignment: [][]int32{{3, 1}, {2, 3}}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.AwaitTopicReady(ctx, "grow", 3, 2); err != nil {
		t.Fatal(err)
	}
	md, err := c.Admin().Metadata(ctx, "grow")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32][]int32{1: {3, 1}, 2: {2, 3}} {
		pd := md.Topics["grow"].Partitions[p]
		if fmt.Sprint(pd.Replicas) != fmt.Sprint(want) || pd.Leader != want[0] {
			t.Errorf("grow p%d: replicas %v leader %d; want %v led by %d", p, pd.Replicas, pd.Leader, want, want[0])
		}
	}
	err = cl.CreatePartitions(ctx, kafka.NewPartitions{Topic: "grow", Count: 2})
	if te, ok := kafka.TopicErrorOf(err); !ok || te.Kind() != kafka.TopicErrorInvalidPartitions {
		t.Errorf("shrinking must fail as an invalid partition count, got %v", err)
	}

	if err := cl.ValidateAlterTopicConfigs(ctx, "grow", map[string]string{"retention.ms": "soon"}, nil); err == nil {
		t.Error("an invalid retention.ms passed the dry run")
	} else if te, ok := kafka.TopicErrorOf(err); !ok || te.Kind() != kafka.TopicErrorInvalidConfig {
		t.Errorf("invalid value: %v, want an invalid-config topic error", err)
	}
	if err := cl.AlterTopicConfigs(ctx, "grow", map[string]string{"retention.ms": "7200000", "segment.ms": "600000"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cl.AwaitTopicConfigs(ctx, "grow", map[string]string{"retention.ms": "7200000", "segment.ms": "600000"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cl.AlterTopicConfigs(ctx, "grow", nil, []string{"segment.ms"}); err != nil {
		t.Fatal(err)
	}
	if err := cl.AwaitTopicConfigs(ctx, "grow", nil, []string{"segment.ms"}); err != nil {
		t.Fatal(err)
	}
	got, _ := cl.DescribeTopics(ctx, []string{"grow"})
	if cs := got["grow"].Configs; len(cs) != 1 || cs["retention.ms"] != "7200000" {
		t.Errorf("own configs %v, want only retention.ms=7200000", cs)
	}

	if err := cl.DeleteTopic(ctx, "grow"); err != nil {
		t.Fatal(err)
	}
	if err := cl.AwaitTopicGone(ctx, "grow"); err != nil {
		t.Fatal(err)
	}
	for _, b := range []int32{1, 2, 3} {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("grow")
		req.Topics = append(req.Topics, rt)
		kr, err := req.RequestWith(ctx, c.Client().Broker(int(b)))
		if err != nil {
			t.Fatal(err)
		}
		if tp := kr.Topics[0]; tp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("broker %d still lists topic grow after AwaitTopicGone (error code %d)", b, tp.ErrorCode)
		}
	}
	if err := cl.DeleteTopic(ctx, "grow"); err != nil {
		t.Errorf("deleting a deleted topic: %v", err)
	}
}

func TestSampleKeysTellsKeyedFromUnkeyed(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, name := range []string{"keyed", "unkeyed", "empty"} {
		if err := cl.CreateTopic(ctx, name, map[int32][]int32{0: {1}, 1: {2}, 2: {3}}, nil); err != nil {
			t.Fatal(err)
		}
		if err := cl.AwaitTopicReady(ctx, name, 3, 1); err != nil {
			t.Fatal(err)
		}
	}
	pr, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	var recs []*kgo.Record
	for i := range 30 {
		// Keyed records only in p1, and unkeyed ones after them in p0: the
		// sample must find the keys wherever they are.
		recs = append(recs, &kgo.Record{Topic: "keyed", Partition: 1, Key: []byte(fmt.Sprint("k", i)), Value: []byte("v")})
		recs = append(recs, &kgo.Record{Topic: "keyed", Partition: 0, Value: []byte("v")})
		recs = append(recs, &kgo.Record{Topic: "unkeyed", Partition: int32(i % 3), Value: []byte("v")})
	}
	if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	ev, err := cl.SampleKeys(ctx, "keyed", false)
	if err != nil || !ev.Keyed() || fmt.Sprint(ev.KeyedPartitions) != "[1]" {
		t.Errorf("keyed topic: %+v, %v; want keyed partitions [1]", ev, err)
	}
	ev, err = cl.SampleKeys(ctx, "unkeyed", false)
	if err != nil || ev.Keyed() || ev.SampledPartitions != 3 {
		t.Errorf("unkeyed topic: %+v, %v; want 3 partitions sampled, none keyed", ev, err)
	}
	ev, err = cl.SampleKeys(ctx, "empty", false)
	if err != nil || ev.Keyed() || ev.SampledPartitions != 0 {
		t.Errorf("empty topic: %+v, %v; want nothing sampled", ev, err)
	}
	if ev, _ := cl.SampleKeys(ctx, "empty", true); !ev.Keyed() {
		t.Error("a compacted topic must count as keyed")
	}
}

// A topic read while its partitions move, start moving and finish moving
// keeps its replication factor. Metadata lists a moving partition's old and
// new replicas together and only the reassignments tell which are new;
// those two answers come from two requests, and a move that ends or starts
// between them must not read as a partition with one replica more or less
// (the soak saw a plan change replication_factor to 0 that way, while
// another operation's moves finished).
func TestTopicReadWhileMovesStartAndEnd(t *testing.T) {
	_, cl := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic, parts = "moves-under-read", 30
	assignment := map[int32][]int32{}
	for p := int32(0); p < parts; p++ {
		assignment[p] = []int32{p%3 + 1, (p+1)%3 + 1}
	}
	if err := cl.CreateTopic(ctx, topic, assignment, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.DeleteTopic(context.Background(), topic) })
	if err := cl.AwaitTopicReady(ctx, topic, parts, 2); err != nil {
		t.Fatal(err)
	}

	// Each round moves every partition's second replica to the broker it
	// lacks; empty partitions finish in a moment, so moves start and end
	// all through the reads.
	stop := make(chan struct{})
	moved := make(chan int)
	go func() {
		rounds := 0
		defer func() { moved <- rounds }()
		for ; ; rounds++ {
			select {
			case <-stop:
				return
			default:
			}
			var as []kafka.Assignment
			for p, rs := range assignment {
				third := int32(6) - rs[0] - rs[1]
				assignment[p] = []int32{rs[0], third}
				as = append(as, kafka.Assignment{Topic: topic, Partition: p, Replicas: assignment[p]})
			}
			if err := cl.AlterAssignments(ctx, as); err != nil {
				t.Errorf("round %d: %v", rounds, err)
				return
			}
			time.Sleep(150 * time.Millisecond)
		}
	}()
	reads, mixed, moving := 0, 0, 0
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); reads++ {
		got, err := cl.DescribeTopics(ctx, []string{topic})
		if err != nil {
			t.Fatal(err)
		}
		d := got[topic]
		if d.Reassigning() {
			moving++
		}
		if rfs := d.ReplicationFactors(); !slices.Equal(rfs, []int{2}) {
			mixed++
			if mixed <= 3 {
				t.Errorf("read %d: replication factors %v, want [2]; partitions %+v", reads, rfs, d.Partitions)
			}
		}
	}
	close(stop)
	rounds := <-moved
	t.Logf("%d reads (%d saw moves in flight) over %d rounds of moves; %d read a replication factor other than 2", reads, moving, rounds, mixed)
	if moving == 0 {
		t.Errorf("no read saw a move in flight; the test proves nothing")
	}
}
