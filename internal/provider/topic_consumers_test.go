package provider_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/streamstest"
)

// The steps, on the streams protocol: the app's four topics are
// kafkascale_topic resources at 4 partitions, the app runs, and growing
// only its orders topic to 8 is refused on partitions, naming the app and
// customers, which is co-partitioned with orders. Nothing changes, and the
// app keeps running and counting exactly.
func TestAccTopicResource_refusesGrowingAStreamsSourceStreamsProtocol(t *testing.T) {
	testAccPreCheck(t)
	runTopicStreamsGuard(t, "accguards", streamstest.ProtocolStreams)
}

// The same on the classic protocol, whose group is a Streams app by its
// "stream" assignor while it runs, and by its committed offsets and
// internal topics once stopped.
func TestAccTopicResource_refusesGrowingAStreamsSourceClassicProtocol(t *testing.T) {
	testAccPreCheck(t)
	runTopicStreamsGuard(t, "accguardc", streamstest.ProtocolClassic)
}

// appTopicsConfig declares the fixture app's four topics with
// kafkascale_topic, as the demo does before it adopts the app; orders has
// its own count and replication factor.
func appTopicsConfig(servers []string, topics streamstest.Topics, orders, ordersRF int) string {
	cfg := testAccProviderConfig(servers, "")
	for _, tp := range []struct {
		addr, name string
		n, rf      int
	}{{"orders", topics.Orders, orders, ordersRF}, {"customers", topics.Customers, 4, 3}, {"enriched", topics.Enriched, 4, 3}, {"counts", topics.Counts, 4, 3}} {
		cfg += fmt.Sprintf(`
resource "kafkascale_topic" %q {
  name               = %q
  partitions         = %d
  replication_factor = %d
  config             = { "min.insync.replicas" = "2" }
}
`, tp.addr, tp.name, tp.n, tp.rf)
	}
	return cfg
}

// beforeApply runs fn between the plan and the apply of a step.
type beforeApply func() error

func (f beforeApply) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = f()
}

func runTopicStreamsGuard(t *testing.T, name, protocol string) {
	c := streamsCluster(t)
	ctx := t.Context()
	adm := c.Admin()
	servers := c.BootstrapServers()
	appID := "app-" + name
	topics := streamstest.TopicsWithPrefix(name + "-")
	all := append(append(topics.Sources(), topics.Sinks()...), streamstest.GrowingTopics(appID)...)

	var app *streamstest.App
	var w *streamstest.Workload
	var obs *streamstest.Observer
	defer func() {
		if w != nil {
			w.Close()
		}
		if obs != nil {
			obs.Close()
		}
	}()
	// The app starts after the plan was made and before its apply: the
	// apply must check again.
	startApp := beforeApply(func() error {
		a, err := streamstest.Launch(t, streamstest.AppOptions{Bootstrap: servers, AppID: appID, Protocol: protocol, TopicPrefix: name + "-"})
		if err != nil {
			return err
		}
		app = a
		runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := a.WaitState(runCtx, "RUNNING"); err != nil {
			return fmt.Errorf("the app never ran: %v\n%s", err, a.LogTail(40))
		}
		return nil
	})
	unchanged := func(ordersRF int) {
		t.Helper()
		td, err := adm.ListTopics(ctx, all...)
		if err != nil {
			t.Fatal(err)
		}
		for _, topic := range all {
			if n := len(td[topic].Partitions); n != int(streamsFrom) || td[topic].Err != nil {
				t.Fatalf("%s has %d partitions after a refused growth (%v), want %d", topic, n, td[topic].Err, streamsFrom)
			}
		}
		for _, topic := range streamstest.FixedTopics(appID) {
			if n := partitionCount(ctx, adm, topic); n != streamstest.FixedPartitions {
				t.Fatalf("fixed topic %s has %d partitions after a refused growth, want the topology's %d", topic, n, streamstest.FixedPartitions)
			}
		}
		for _, p := range td[topics.Orders].Partitions {
			if len(p.Replicas) != ordersRF {
				t.Fatalf("%s partition %d has replicas %v, want %d", topics.Orders, p.Partition, p.Replicas, ordersRF)
			}
		}
	}
	healthy := func() {
		t.Helper()
		h, err := app.Health(ctx)
		if err != nil || h.State != "RUNNING" || h.EverError {
			t.Fatalf("the app is %q, ever in ERROR: %v (%v); want RUNNING and never ERROR: %v\n%s", h.State, h.EverError, err, h.Uncaught, app.LogTail(40))
		}
	}
	refused := func(state string) string {
		return `(?s)Error: Topic read by a Kafka Streams app.*with kafkascale_topic\.orders.*partitions = 8.*` +
			fmt.Sprintf(`Kafka Streams app "%s" \(%s protocol, %s\) reads topic "%s" (co-partitioned|together) with %s,`,
				appID, protocol, state, topics.Orders, topics.Customers) +
			`.*Nothing was changed on the cluster.*Grow it through kafkascale_streams_app.*ignore_changes = \[partitions\]`
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: appTopicsConfig(servers, topics, 4, 3)},
			{
				// Planned while no app reads orders; the app starts before
				// the apply, which refuses.
				Config:           appTopicsConfig(servers, topics, 8, 3),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{startApp}},
				ExpectError:      wrapped(`(?s)Topic read by a Kafka Streams app.*` + appID),
			},
			{
				PreConfig: func() {
					unchanged(3)
					healthy()
					var err error
					if w, err = streamstest.NewWorkload(ctx, streamstest.WorkloadOptions{Bootstrap: servers, Topics: topics, Homes: streamsFrom, Seed: 3}); err != nil {
						t.Fatal(err)
					}
					w.Run()
					if obs, err = streamstest.NewObserver(servers, topics.Counts); err != nil {
						t.Fatal(err)
					}
				},
				Config:      appTopicsConfig(servers, topics, 8, 3),
				ExpectError: wrapped(refused(`1 member\(s\)`)),
			},
			{
				// A replication factor change adds no partition: its plan is
				// not refused (the reassignment itself is the topic tests'
				// business).
				PreConfig:          func() { unchanged(3); healthy() },
				Config:             appTopicsConfig(servers, topics, 4, 2),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Every order so far is counted exactly, then the app stops:
				// a stopped app is still refused, known by its committed
				// offsets (and, classic, its internal topics).
				PreConfig: func() {
					healthy()
					stopCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
					defer cancel()
					if err := w.Stop(stopCtx); err != nil {
						t.Fatal(err)
					}
					stats := w.Stats()
					if len(stats.Acked) == 0 {
						t.Fatal("no order was acknowledged, so the counts prove nothing")
					}
					if diff, err := obs.WaitCounts(stopCtx, stats.Acked); err != nil {
						t.Fatalf("counts differ from the %d orders produced: %v\n%s", stats.Sent, err, strings.Join(diff, "\n"))
					}
					t.Logf("%d orders sent through the refused plans, %d products counted exactly", stats.Sent, len(stats.Acked))
					healthy()
					if err := app.Stop(stopCtx); err != nil {
						t.Fatal(err)
					}
					awaitGroupEmpty(stopCtx, t, adm, appID)
				},
				Config:      appTopicsConfig(servers, topics, 8, 3),
				ExpectError: wrapped(refused("stopped")),
			},
			{
				// Nothing changed: every topic is as it was, and the
				// configuration at 4 plans nothing.
				PreConfig: func() { unchanged(3) },
				Config:    appTopicsConfig(servers, topics, 4, 3),
				PlanOnly:  true,
			},
		},
	})
}

// awaitGroupEmpty waits until the group has no member.
func awaitGroupEmpty(ctx context.Context, t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	for {
		listed, err := adm.ListGroups(ctx)
		if err == nil && listed[group].State == "Empty" {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("group %s never emptied: %+v %v", group, listed[group], err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// A topic that only a plain consumer group reads grows, with a warning
// naming the group, and the group goes on consuming: its committed offsets
// advance on the old partitions and appear on the new ones.
func TestAccTopicResource_growsUnderAPlainConsumerGroupWithAWarning(t *testing.T) {
	testAccPreCheck(t)
	c := streamsCluster(t)
	ctx := t.Context()
	adm := c.Admin()
	servers := c.BootstrapServers()
	const topic, group = "accplain-events", "accplain-readers"
	rec := &warningRecorder{}

	// Unkeyed records, round robin over every partition the producer's
	// metadata shows; metadata is refreshed every second on both clients.
	var wg sync.WaitGroup
	run, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	var mu sync.Mutex
	consumed := map[int32]int{}
	var acked int
	startClients := func() error {
		pr, err := kgo.NewClient(kgo.SeedBrokers(servers...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.MetadataMinAge(250*time.Millisecond), kgo.MetadataMaxAge(time.Second))
		if err != nil {
			return err
		}
		cons, err := kgo.NewClient(kgo.SeedBrokers(servers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(500*time.Millisecond),
			kgo.MetadataMinAge(250*time.Millisecond), kgo.MetadataMaxAge(time.Second))
		if err != nil {
			pr.Close()
			return err
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer pr.Close()
			for run.Err() == nil {
				if err := pr.ProduceSync(run, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err == nil {
					mu.Lock()
					acked++
					mu.Unlock()
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		go func() {
			defer wg.Done()
			defer cons.Close()
			for run.Err() == nil {
				fs := cons.PollFetches(run)
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) { consumed[r.Partition]++ })
				mu.Unlock()
			}
		}()
		return nil
	}
	committed := func() map[int32]int64 {
		out := map[int32]int64{}
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return out
		}
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil {
				out[o.Partition] = o.At
			}
		})
		return out
	}
	// awaitCommitted waits until the group has committed beyond past on
	// every partition below n.
	awaitCommitted := func(n int32, past map[int32]int64) (map[int32]int64, error) {
		wait, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		for {
			got := committed()
			ok := true
			for p := range n {
				ok = ok && got[p] > past[p]
			}
			if ok {
				return got, nil
			}
			if wait.Err() != nil {
				return got, fmt.Errorf("the group's committed offsets %v never passed %v on all %d partitions", got, past, n)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	var before map[int32]int64
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: rec.factories(),
		Steps: []resource.TestStep{
			{
				Config: topicConfig(servers, topic, 4, 3, ""),
				Check: func(*terraform.State) error {
					if err := startClients(); err != nil {
						return err
					}
					var err error
					before, err = awaitCommitted(4, nil)
					return err
				},
			},
			{
				PreConfig: rec.reset,
				Config:    topicConfig(servers, topic, 6, 3, ""),
				Check: func(*terraform.State) error {
					if n := partitionCount(ctx, adm, topic); n != 6 {
						return fmt.Errorf("%s has %d partitions, want 6", topic, n)
					}
					if err := rec.expect(`^A consumer group reads the growing topic: Consumer group "`+group+`" reads topic "`+topic+`" and has 1 member`,
						`partitions 4–5`); err != nil {
						return err
					}
					if err := rec.expectNone(`Kafka Streams`); err != nil {
						return err
					}
					after, err := awaitCommitted(6, before)
					if err != nil {
						return err
					}
					mu.Lock()
					defer mu.Unlock()
					t.Logf("committed before the growth %v, after %v; %d records acknowledged, consumed per partition %v", before, after, acked, consumed)
					for p := int32(4); p < 6; p++ {
						if consumed[p] == 0 {
							return fmt.Errorf("the group consumed nothing from new partition %d", p)
						}
					}
					return nil
				},
			},
		},
	})
}
