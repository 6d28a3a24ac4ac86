package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// A Streams app's sources and internal topics grow in ONE CreatePartitions
// request, placed rack-aware and spread across the brokers, and the call
// returns with every new partition led and in sync.
func TestGrowTogetherInOneRequest(t *testing.T) {
	_, setup := sharedCluster(t)
	ctx := context.Background()
	var topics []string
	for i := range 3 {
		name := fmt.Sprintf("growtogether-%d", i)
		if err := setup.CreateTopic(ctx, name, map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}}, nil); err != nil {
			t.Fatal(err)
		}
		topics = append(topics, name)
	}
	for _, name := range topics {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := setup.AwaitTopicReady(actx, name, 2, 3); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	cl, rc := countingClient(t)
	ex := executor.New(executor.Deps{Kafka: cl.Port(), Placer: cl.Port()}, executor.Settings{})
	w := executor.Work{ID: "streams-test", What: "grow together"}
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := ex.GrowTogether(actx, w, topics, 6); err != nil {
		t.Fatal(err)
	}
	if n := rc.Of("CreatePartitions"); n != 1 {
		t.Errorf("growing %d topics took %d CreatePartitions requests (%s), want 1", len(topics), n, rc)
	}
	got, err := cl.DescribeTopics(ctx, topics)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for _, name := range topics {
		d := got[name]
		if len(d.Partitions) != 6 {
			t.Fatalf("%s has %d partitions, want 6", name, len(d.Partitions))
		}
		for _, p := range d.Partitions[2:] {
			if len(p.Replicas) != 3 || len(p.ISR) != 3 {
				t.Errorf("%s p%d: replicas %v ISR %v, want 3 in sync", name, p.Partition, p.Replicas, p.ISR)
			}
			leaders[p.Replicas[0]]++
		}
	}
	// The engine places leaders by the load of the whole (shared) cluster,
	// so the split is not even; but every broker leads some.
	for b := int32(1); b <= 3; b++ {
		if leaders[b] < 2 {
			t.Errorf("preferred leaders of the 12 new partitions by broker: %v, want every broker to lead at least 2", leaders)
			break
		}
	}
	// Growing again to the same count sends nothing.
	rc.Reset()
	if err := ex.GrowTogether(actx, w, topics, 6); err != nil || rc.Of("CreatePartitions") != 0 {
		t.Errorf("a second growth to the same count: err %v, %d CreatePartitions requests; want none", err, rc.Of("CreatePartitions"))
	}
}

// A classic app that ran and stopped leaves an empty group. Its committed
// offsets (OffsetFetch) and its internal topics (by name) still make it a
// Streams app that an expansion of another app sees, with its sources;
// a group that commits offsets on the same topic but has no internal
// topics is a plain group.
func TestDescribeStreamsAppsSeesAStoppedClassicApp(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx := t.Context()
	adm := c.Admin()
	for _, topic := range []string{"stopped-orders", "stopped-payments", "stopped-fraud-score-store-changelog"} {
		if _, err := adm.CreateTopic(ctx, 4, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	produce, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer produce.Close()
	for _, topic := range []string{"stopped-orders", "stopped-payments"} {
		for p := range int32(4) {
			if err := produce.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Each group joins, reads every record, commits and leaves.
	consume := func(group string, topics ...string) {
		g, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topics...),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for got < 4*len(topics) {
			fs := g.PollFetches(pctx)
			if pctx.Err() != nil {
				t.Fatalf("group %s read %d records, want %d", group, got, 4*len(topics))
			}
			got += fs.NumRecords()
		}
		if err := g.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		g.Close() // leaves the group
	}
	consume("stopped-fraud", "stopped-orders", "stopped-payments")
	consume("stopped-audit", "stopped-orders")

	r, err := cl.DescribeStreamsApps(ctx, []kafka.DeclaredStreamsApp{{ID: "stopped-billing", Topics: kafka.StreamsAppTopics{Sources: []string{"stopped-orders"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var fraud *streams.App
	for i, o := range r.Others {
		if o.ID == "stopped-fraud" {
			fraud = &r.Others[i]
		}
	}
	if fraud == nil {
		t.Fatalf("others %+v: the stopped app stopped-fraud is missing", r.Others)
	}
	if fraud.Members != 0 || fraud.Protocol != streams.ProtocolClassic ||
		!slices.Equal(fraud.TopicsWith(streams.RoleSource), []string{"stopped-orders", "stopped-payments"}) ||
		!slices.Equal(fraud.InternalTopics(), []string{"stopped-fraud-score-store-changelog"}) {
		t.Errorf("stopped-fraud %+v: want a stopped classic app reading stopped-orders and stopped-payments, with its changelog", *fraud)
	}
	if !slices.ContainsFunc(r.Groups, func(g streams.ConsumerGroup) bool { return g.ID == "stopped-audit" }) {
		t.Errorf("groups %+v: the plain group stopped-audit is missing", r.Groups)
	}
	// The engine refuses to grow the shared source without the stopped app.
	_, err = streams.PlanExpansion(streams.ExpansionRequest{App: r.Declared[0], Target: 8, StaticPartitioning: true, Others: r.Others}, false)
	if err == nil || !strings.Contains(err.Error(), `stopped-fraud (classic protocol, stopped, not declared) reads stopped-orders`) {
		t.Errorf("plan: err %v, want the stopped app named", err)
	}
}
