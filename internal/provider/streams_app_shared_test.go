package provider_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/streamstest"
)

// plainReader is a plain consumer group member on a topic: it sees new
// partitions within a second, and counts what it reads per partition.
type plainReader struct {
	mu   sync.Mutex
	read map[int32]int
}

func startPlainReader(t *testing.T, servers []string, topic, group string) *plainReader {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(servers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(500*time.Millisecond),
		kgo.MetadataMinAge(250*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r := &plainReader{read: map[int32]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cons.Close()
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			r.mu.Lock()
			fs.EachRecord(func(rec *kgo.Record) { r.read[rec.Partition]++ })
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func (r *plainReader) snapshot() map[int32]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int32]int{}
	for p, n := range r.read {
		out[p] = n
	}
	return out
}

// Two live Streams apps share the orders topic: the fixture app on the
// streams protocol, and a second topology (orders joined with its own
// refunds table, aggregated per product) on the classic protocol with a
// quiesce hook. A plain consumer group reads orders too. Under steady
// input:
//   - growing orders through the fixture app's resource alone is refused
//     at plan time, naming the second app and its topics, and nothing
//     changes;
//   - with the second app in co_expand, one apply grows both apps' topics
//     from 4 to 8 in one request, stops and starts the classic app once,
//     waits for both and calls both endpoints; the plan warns of the
//     plain group;
//   - neither app ever reaches ERROR, both count every order exactly,
//     every record stays in its home partition, new keys reach partitions
//     4-7 of both apps' outputs, the plain group keeps consuming, and the
//     next plan is empty, the second app's own resource included.
func TestAccStreamsApp_sharedSourceGrowsTogether(t *testing.T) {
	testAccPreCheck(t)
	c := streamsCluster(t)
	ctx := t.Context()
	adm := c.Admin()
	servers := c.BootstrapServers()
	const shopID, totalsID, plainGroup = "app-sharedshop", "app-sharedtotals", "accshared-plain"
	shop := streamstest.TopicsWithPrefix("accshared-")
	totals := streamstest.TotalsTopicsWithPrefix("accsharedt-")
	own := append(append(shop.Sources(), shop.Sinks()...), totals.Refunds, totals.Totals)
	createAppTopics(t, adm, streamsFrom, 3, own...)
	growing := append(append(append([]string{}, own...), streamstest.GrowingTopics(shopID)...), streamstest.TotalsInternalTopics(totalsID)...)
	rec := &warningRecorder{}

	var mu sync.Mutex
	instances := map[string]*streamstest.App{}
	launch := func(name string, o streamstest.AppOptions) (*streamstest.App, error) {
		o.Name, o.Bootstrap = name, servers
		a, err := streamstest.Launch(t, o)
		if err == nil {
			mu.Lock()
			instances[name] = a
			mu.Unlock()
		}
		return a, err
	}
	shopOpts := streamstest.AppOptions{AppID: shopID, Protocol: streamstest.ProtocolStreams, TopicPrefix: "accshared-"}
	totalsOpts := streamstest.AppOptions{AppID: totalsID, Protocol: streamstest.ProtocolClassic, TopicPrefix: "accsharedt-",
		Topology: streamstest.TopologyTotals, OrdersTopic: shop.Orders}
	shopApp, err := launch("shop", shopOpts)
	if err != nil {
		t.Fatal(err)
	}
	totalsApp, err := launch("totals", totalsOpts)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, a := range []*streamstest.App{shopApp, totalsApp} {
		if err := a.WaitState(runCtx, "RUNNING"); err != nil {
			t.Fatalf("instance %s never ran: %v\n%s", a.Name, err, a.LogTail(40))
		}
	}
	plain := startPlainReader(t, servers, shop.Orders, plainGroup)

	w := runWorkload(t, servers, shop, streamsFrom, 16)
	shopObs := observeApp(t, servers, shop.Counts, shop.Enriched, shopID+"-counts-store-changelog")
	totalsObs, err := streamstest.NewObserver(servers, totals.Totals, totalsID+"-totals-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	defer totalsObs.Close()
	for len(shopObs.Snapshot().Counts) < int(streamsFrom) || len(totalsObs.Snapshot().Counts) < int(streamsFrom) {
		if runCtx.Err() != nil {
			t.Fatalf("the apps counted nothing:\n%s\n%s", shopApp.LogTail(30), totalsApp.LogTail(30))
		}
		time.Sleep(250 * time.Millisecond)
	}

	// The classic app's quiesce commands ask the test, which owns its JVMs:
	// stop every instance, start a new one. The watcher also notes the
	// commit and produces new keys once the producer sees the new
	// partitions.
	control := t.TempDir()
	stopFile, startFile := filepath.Join(control, "stop"), filepath.Join(control, "start")
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var stopAt, totalsBackAt, committed time.Time
	// The source's partition count when the quiesce stop ran: the bundle
	// must stop the classic app before it grows what the app reads.
	sourceAtStop := int32(-1)
	var watchErr error
	var watching sync.WaitGroup
	watching.Add(1)
	go func() {
		defer watching.Done()
		stopped, started := false, false
		for watch.Err() == nil {
			if _, err := os.Stat(stopFile); err == nil && !stopped {
				stopped = true
				// Read before the app stops: until its group is empty
				// the provider waits, so a count already grown here
				// was grown before the stop.
				n := partitionCount(watch, adm, shop.Orders)
				mu.Lock()
				stopAt, sourceAtStop = time.Now(), n
				mu.Unlock()
				if err := totalsApp.Stop(watch); err != nil {
					watchErr = fmt.Errorf("quiesce stop: %w", err)
				}
			}
			if _, err := os.Stat(startFile); err == nil && !started {
				started = true
				a2, err := launch("totals2", totalsOpts)
				if err != nil {
					watchErr = fmt.Errorf("quiesce start: %w", err)
					return
				}
				go func() {
					if err := a2.WaitState(watch, "RUNNING"); err == nil {
						mu.Lock()
						totalsBackAt = time.Now()
						mu.Unlock()
					}
				}()
			}
			if committed.IsZero() && partitionCount(watch, adm, shop.Orders) == streamsTo {
				mu.Lock()
				committed = time.Now()
				mu.Unlock()
				if err := w.Grow(watch, streamsTo, 4, 2); err != nil {
					watchErr = fmt.Errorf("producing new keys: %w", err)
				}
			}
			if started && !committed.IsZero() {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	shopHook, totalsHook := newExpansionReceiver(t), newExpansionReceiver(t)
	coExpand := fmt.Sprintf(`
  on_expansion_url      = %q
  quiet_period          = "5s"
  stabilization_timeout = "4m"

  co_expand {
    application_id   = %q
    source_topics    = [%q, %q]
    sink_topics      = [%q]
    on_expansion_url = %q
    quiesce {
      stop  = ["sh", "-c", "touch %s"]
      start = ["sh", "-c", "touch %s"]
    }
  }`, shopHook.URL, totalsID, shop.Orders, totals.Refunds, totals.Totals, totalsHook.URL, stopFile, startFile)
	// The second app keeps a resource of its own, at the count it was
	// adopted at: only the bundle changes it.
	totalsOwn := fmt.Sprintf(`
resource "kafkascale_streams_app" "totals" {
  application_id      = %q
  source_topics       = [%q, %q]
  sink_topics         = [%q]
  partitions          = %d
  static_partitioning = true
  lifecycle {
    ignore_changes = [partitions]
  }
}
`, totalsID, shop.Orders, totals.Refunds, totals.Totals, streamsFrom)
	cfg := func(n int32, body string) string { return streamsAppConfig(servers, shopID, shop, n, body) + totalsOwn }
	unchanged := func() {
		for _, topic := range growing {
			if n := partitionCount(ctx, adm, topic); n != streamsFrom {
				t.Fatalf("%s has %d partitions after a refused plan, want %d", topic, n, streamsFrom)
			}
		}
	}
	addr := "kafkascale_streams_app.test"
	var applyBegan, applied time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: rec.factories(),
		Steps: []resource.TestStep{
			{
				// Adopt both apps at their count: nothing to do.
				Config: cfg(streamsFrom, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("expansion_order"), knownvalue.ListExact(nil)),
				}},
			},
			{
				// The fixture app alone: the second app reads orders too.
				Config: cfg(streamsTo, ""),
				ExpectError: wrapped(fmt.Sprintf(`(?s)Streams apps this expansion does not declare read the sources it grows.*`+
					`%s \(declared\) reads %s, %s; %s \(classic protocol, 1 member\(s\), not declared\) reads %s.*`+
					`co_expand \{ application_id = %q, source_topics = \[%q, %q\] \}`,
					shopID, shop.Customers, shop.Orders, totalsID, shop.Orders, totalsID, shop.Orders, totals.Refunds)),
			},
			{
				PreConfig: func() { unchanged(); rec.reset(); applyBegan = time.Now() },
				Config:    cfg(streamsTo, coExpand),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("kafkascale_streams_app.totals", plancheck.ResourceActionNoop),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("expansion_order"), knownvalue.ListPartial(map[int]knownvalue.Check{
						0: knownvalue.StringRegexp(regexp.MustCompile(`^1\. grow sink topics ` + shop.Counts + `, ` + shop.Enriched + `, ` + totals.Totals + ` to 8`)),
						1: knownvalue.StringExact("2. run the quiesce stop command of " + totalsID),
						2: knownvalue.StringExact("3. wait until group " + totalsID + " has no members"),
						3: knownvalue.StringRegexp(regexp.MustCompile(`^4\. grow ` + regexp.QuoteMeta(strings.Join(sortedTopics(shopID, totalsID, shop, totals), ", ")) + ` to 8 partitions in one CreatePartitions request`)),
						4: knownvalue.StringExact("5. run the quiesce start command of " + totalsID),
						5: knownvalue.StringRegexp(regexp.MustCompile(`^6\. wait until group ` + shopID + ` is stable on 8`)),
						6: knownvalue.StringRegexp(regexp.MustCompile(`^7\. wait until group ` + totalsID + ` is stable on 8`)),
						7: knownvalue.StringRegexp(regexp.MustCompile(`^8\. call the on_expansion_url of ` + shopID)),
						8: knownvalue.StringRegexp(regexp.MustCompile(`^9\. call the on_expansion_url of ` + totalsID)),
					})),
				}},
				Check: func(*terraform.State) error {
					applied = time.Now()
					if err := rec.expect(`A consumer group reads a growing topic`, fmt.Sprintf(`Consumer group "%s" reads topic "%s"`, plainGroup, shop.Orders)); err != nil {
						return err
					}
					cl := providerClient(t, servers)
					for id, p := range map[string]streams.Protocol{shopID: streams.ProtocolStreams, totalsID: streams.ProtocolClassic} {
						want := map[string]int32{shop.Orders: streamsTo}
						if id == shopID {
							want[shop.Customers], want[streamstest.RepartitionTopics(shopID)[0]], want[streamstest.FixedTopics(shopID)[0]] = streamsTo, streamsTo, streamstest.FixedPartitions
						} else {
							want[totals.Refunds], want[totalsID+"-byproduct-repartition"] = streamsTo, streamsTo
						}
						st, err := kafka.StreamsPort{Client: cl, Protocol: p}.StreamsGroup(ctx, id, want)
						if err != nil || !st.Stable {
							return fmt.Errorf("apply returned but group %s is not stable on %d partitions: %v %v", id, streamsTo, st, err)
						}
					}
					for id, hook := range map[string]*expansionReceiver{shopID: shopHook, totalsID: totalsHook} {
						events, _ := hook.got()
						if len(events) != 1 || events[0].ApplicationID != id || events[0].OldPartitions != streamsFrom || events[0].NewPartitions != streamsTo {
							return fmt.Errorf("%s's on_expansion_url got %+v, want one event %d -> %d", id, events, streamsFrom, streamsTo)
						}
					}
					for _, topic := range growing {
						if n := partitionCount(ctx, adm, topic); n != streamsTo {
							return fmt.Errorf("after the expansion, %s has %d partitions, want %d", topic, n, streamsTo)
						}
					}
					for _, topic := range streamstest.FixedTopics(shopID) {
						if n := partitionCount(ctx, adm, topic); n != streamstest.FixedPartitions {
							return fmt.Errorf("fixed topic %s has %d partitions, want %d", topic, n, streamstest.FixedPartitions)
						}
					}
					return nil
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("settled_partitions"), knownvalue.Int64Exact(int64(streamsTo))),
				},
			},
			{
				// Settled: nothing to do for either resource.
				Config: cfg(streamsTo, coExpand),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
	watching.Wait()
	if watchErr != nil {
		t.Fatal(watchErr)
	}
	switch {
	case stopAt.IsZero():
		t.Errorf("the quiesce stop of %s never ran", totalsID)
	case sourceAtStop != streamsFrom:
		t.Errorf("when the quiesce stop of %s ran, %s already had %d partitions, want %d: the sources grew before the stop", totalsID, shop.Orders, sourceAtStop, streamsFrom)
	case committed.IsZero() || !committed.After(stopAt):
		t.Errorf("%s was seen at %d partitions at %s, the quiesce stop ran at %s: the sources grew before the stop",
			shop.Orders, streamsTo, committed.Format("15:04:05.000"), stopAt.Format("15:04:05.000"))
	}
	// The plain group keeps consuming, the new partitions included.
	before := plain.snapshot()
	keepCtx, cancelKeep := context.WithTimeout(ctx, time.Minute)
	defer cancelKeep()
	for {
		now := plain.snapshot()
		ok := true
		for p := range streamsTo {
			ok = ok && now[p] > before[p]
		}
		if ok {
			break
		}
		if keepCtx.Err() != nil {
			t.Fatalf("the plain group stopped consuming some partition of %s: read %v, then %v", shop.Orders, before, now)
		}
		time.Sleep(250 * time.Millisecond)
	}

	stats := stopWorkloadAndCount(t, w, 2*time.Minute, map[string]*streamstest.Observer{shopID: shopObs, totalsID: totalsObs})
	outputs := map[string]*streamstest.Observer{shop.Counts: shopObs, shop.Enriched: shopObs, totals.Totals: totalsObs, totalsID + "-totals-store-changelog": totalsObs}
	for _, topic := range slices.Sorted(maps.Keys(outputs)) {
		seen := outputs[topic].Snapshot()
		for p := streamsFrom; p < streamsTo; p++ {
			if seen.Records[topic][p] == 0 {
				t.Errorf("no record of a new key in %s partition %d", topic, p)
			}
		}
	}
	for name, obs := range map[string]*streamstest.Observer{shopID: shopObs, totalsID: totalsObs} {
		if m := obs.Snapshot().Misplaced; len(m) > 0 {
			t.Errorf("%s: %d records outside their key's home partition, e.g. %v", name, len(m), m[:min(5, len(m))])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for n, a := range instances {
		h, err := a.Health(ctx)
		if err != nil && !a.Exited() {
			t.Errorf("instance %s: %v", n, err)
			continue
		}
		if h.EverError {
			t.Errorf("instance %s entered ERROR or PENDING_ERROR: %v\n%s", n, h.Uncaught, a.LogTail(40))
		}
	}
	for _, n := range []string{"shop", "totals2"} {
		if h, err := instances[n].Health(ctx); err != nil || h.State != "RUNNING" {
			t.Errorf("instance %s is %q (%v), want RUNNING", n, h.State, err)
		}
	}
	var outage time.Duration
	if !stopAt.IsZero() && !totalsBackAt.IsZero() {
		outage = totalsBackAt.Sub(stopAt)
	}
	t.Logf("FIGURES shared source 4 -> 8: %d orders (%d products) counted exactly by both apps; apply to stable and notified %v "+
		"(apply began %s, sources committed %v after); classic app %s out of service %v (quiesce stop to RUNNING again)",
		stats.Sent, len(stats.Acked), applied.Sub(applyBegan).Round(time.Millisecond), applyBegan.Format("15:04:05.000"),
		committed.Sub(applyBegan).Round(time.Millisecond), totalsID, outage.Round(time.Millisecond))
}

// sortedTopics are the topics the bundle's one request grows, sorted.
func sortedTopics(shopID, totalsID string, shop streamstest.Topics, totals streamstest.TotalsTopics) []string {
	out := append(append([]string{shop.Orders, shop.Customers, totals.Refunds}, streamstest.GrowingTopics(shopID)...), streamstest.TotalsInternalTopics(totalsID)...)
	slices.Sort(out)
	return out
}

// A classic app that shares the source but is stopped is still seen (by
// its committed offsets and its internal topics): growing the source
// without it is refused, naming it as stopped. Declared in co_expand, it
// grows with the live app, with nothing to wait for; started again, it
// runs on the new count and counts every order exactly.
func TestAccStreamsApp_sharedSourceWithAStoppedApp(t *testing.T) {
	testAccPreCheck(t)
	c := streamsCluster(t)
	ctx := t.Context()
	adm := c.Admin()
	servers := c.BootstrapServers()
	const shopID, totalsID = "app-stopshop", "app-stoptotals"
	shop := streamstest.TopicsWithPrefix("accstop-")
	totals := streamstest.TotalsTopicsWithPrefix("accstopt-")
	own := append(append(shop.Sources(), shop.Sinks()...), totals.Refunds, totals.Totals)
	createAppTopics(t, adm, streamsFrom, 3, own...)
	growing := append(append(append([]string{}, own...), streamstest.GrowingTopics(shopID)...), streamstest.TotalsInternalTopics(totalsID)...)

	shopApp := streamstest.StartApp(t, streamstest.AppOptions{Bootstrap: servers, AppID: shopID, Protocol: streamstest.ProtocolStreams, TopicPrefix: "accstop-", Name: "shop"})
	totalsOpts := streamstest.AppOptions{Bootstrap: servers, AppID: totalsID, Protocol: streamstest.ProtocolClassic, TopicPrefix: "accstopt-",
		Topology: streamstest.TopologyTotals, OrdersTopic: shop.Orders, Name: "totals"}
	totalsApp := streamstest.StartApp(t, totalsOpts)
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, a := range []*streamstest.App{shopApp, totalsApp} {
		if err := a.WaitState(runCtx, "RUNNING"); err != nil {
			t.Fatalf("instance %s never ran: %v\n%s", a.Name, err, a.LogTail(40))
		}
	}
	w, err := streamstest.NewWorkload(ctx, streamstest.WorkloadOptions{Bootstrap: servers, Topics: shop, Homes: streamsFrom, Seed: 17})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Run()
	totalsObs, err := streamstest.NewObserver(servers, totals.Totals, totalsID+"-totals-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	defer totalsObs.Close()
	for len(totalsObs.Snapshot().Counts) < int(streamsFrom) {
		if runCtx.Err() != nil {
			t.Fatalf("the second app counted nothing:\n%s", totalsApp.LogTail(30))
		}
		time.Sleep(250 * time.Millisecond)
	}
	// Stopped: it leaves the group, which is empty from now on.
	if err := totalsApp.Stop(runCtx); err != nil {
		t.Fatal(err)
	}
	awaitGroupEmpty(runCtx, t, adm, totalsID)

	coExpand := fmt.Sprintf(`
  quiet_period = "5s"

  co_expand {
    application_id = %q
    source_topics  = [%q, %q]
    sink_topics    = [%q]
  }`, totalsID, shop.Orders, totals.Refunds, totals.Totals)
	addr := "kafkascale_streams_app.test"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: streamsAppConfig(servers, shopID, shop, streamsTo, ""),
				ExpectError: wrapped(fmt.Sprintf(`(?s)%s \(classic protocol, stopped, not declared\) reads %s.*co_expand \{ application_id = %q`,
					totalsID, shop.Orders, totalsID)),
			},
			{
				PreConfig: func() {
					for _, topic := range growing {
						if n := partitionCount(ctx, adm, topic); n != streamsFrom {
							t.Fatalf("%s has %d partitions after a refused plan, want %d", topic, n, streamsFrom)
						}
					}
				},
				Config: streamsAppConfig(servers, shopID, shop, streamsTo, coExpand),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					// The stopped app has nothing to stop, wait for or call.
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("expansion_order"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringRegexp(regexp.MustCompile(`^1\. grow sink topics `)),
						knownvalue.StringRegexp(regexp.MustCompile(`^2\. grow .*` + regexp.QuoteMeta(totalsID+"-totals-store-changelog") + `.* in one CreatePartitions request`)),
						knownvalue.StringExact(fmt.Sprintf("3. wait until group %s is stable on 8 partitions for the quiet period", shopID)),
					})),
				}},
				Check: func(*terraform.State) error {
					for _, topic := range growing {
						if n := partitionCount(ctx, adm, topic); n != streamsTo {
							return fmt.Errorf("after the expansion, %s has %d partitions, want %d", topic, n, streamsTo)
						}
					}
					return nil
				},
			},
			{
				Config: streamsAppConfig(servers, shopID, shop, streamsTo, coExpand),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})

	// Started again on the grown topics, it runs and counts every order,
	// new keys on the new partitions included.
	if err := w.Grow(ctx, streamsTo, 4, 2); err != nil {
		t.Fatal(err)
	}
	totalsOpts.Name = "totals2"
	again := streamstest.StartApp(t, totalsOpts)
	startCtx, cancelStart := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelStart()
	if err := again.WaitState(startCtx, "RUNNING"); err != nil {
		t.Fatalf("the stopped app did not run again: %v\n%s", err, again.LogTail(40))
	}
	time.Sleep(5 * time.Second)
	stopCtx, cancelStop := context.WithTimeout(ctx, 30*time.Second)
	defer cancelStop()
	if err := w.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	stats := w.Stats()
	countCtx, cancelCount := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelCount()
	if diff, err := totalsObs.WaitCounts(countCtx, stats.Acked); err != nil {
		t.Errorf("the restarted app's counts differ from the %d orders produced: %v\n%s", stats.Sent, err, strings.Join(diff, "\n"))
	}
	seen := totalsObs.Snapshot()
	for p := streamsFrom; p < streamsTo; p++ {
		if seen.Records[totals.Totals][p] == 0 {
			t.Errorf("no record of a new key in %s partition %d", totals.Totals, p)
		}
	}
	if len(seen.Misplaced) > 0 {
		t.Errorf("%d records outside their key's home partition, e.g. %v", len(seen.Misplaced), seen.Misplaced[:min(5, len(seen.Misplaced))])
	}
	for _, a := range []*streamstest.App{shopApp, again} {
		if h, err := a.Health(ctx); err != nil || h.EverError || h.State != "RUNNING" {
			t.Errorf("instance %s: state %q, everError %v (%v)\n%s", a.Name, h.State, h.EverError, err, a.LogTail(30))
		}
	}
	t.Logf("FIGURES stopped app: %d orders (%d products) counted exactly by %s after it started on %d partitions", stats.Sent, len(stats.Acked), totalsID, streamsTo)
}
