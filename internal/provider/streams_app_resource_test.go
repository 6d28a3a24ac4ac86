package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
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
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/streamstest"
)

const (
	streamsFrom int32 = 4
	streamsTo   int32 = 8
)

// streamsCluster is the cluster the Streams acceptance tests share; each
// uses its own topics and application id.
func streamsCluster(t *testing.T) *kafkatest.Cluster {
	return kafkatest.Shared(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}})
}

// streamsAppConfig renders the fixture app's kafkascale_streams_app.
func streamsAppConfig(servers []string, appID string, topics streamstest.Topics, partitions int32, body string) string {
	return testAccProviderConfig(servers, "") + fmt.Sprintf(`
resource "kafkascale_streams_app" "test" {
  application_id      = %q
  source_topics       = [%q, %q]
  sink_topics         = [%q, %q]
  partitions          = %d
  static_partitioning = true
  %s
}
`, appID, topics.Orders, topics.Customers, topics.Enriched, topics.Counts, partitions, body)
}

// expansionReceiver is the user's on_expansion_url: it records every event
// and when it came.
type expansionReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	events []platform.ExpansionEvent
	at     []time.Time
}

func newExpansionReceiver(t *testing.T) *expansionReceiver {
	r := &expansionReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var ev platform.ExpansionEvent
		if err := json.NewDecoder(req.Body).Decode(&ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.at = append(r.at, time.Now())
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *expansionReceiver) got() ([]platform.ExpansionEvent, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]platform.ExpansionEvent(nil), r.events...), append([]time.Time(nil), r.at...)
}

// The heart of the Streams promise, on the streams rebalance protocol
// (KIP-1071): `terraform apply` grows a live app from 4 to 8 partitions
// under continuous input, while a second instance joins right after the
// commit and leaves 20 s later; the app never fails, every count is exact,
// new keys land on new partitions, and apply returns only once the group is
// stable on 8.
func TestAccStreamsApp_expandStreamsProtocol(t *testing.T) {
	testAccPreCheck(t)
	runStreamsAppExpansion(t, "accstreams", streamstest.ProtocolStreams)
}

// The same on the classic protocol, which kills its group leader when a
// rebalance comes before the leader's metadata refresh: the provider
// refuses a live classic app without a quiesce block (and changes
// nothing), then expands it with one.
func TestAccStreamsApp_expandClassicProtocolWithQuiesce(t *testing.T) {
	testAccPreCheck(t)
	runStreamsAppExpansion(t, "accclassic", streamstest.ProtocolClassic)
}

// lateMemberChange says which member changed after the apply returned at
// applied: b, if it began to stop less than 30 s ago, or a live instance
// that was not RUNNING before applied. Empty if none did.
func lateMemberChange(ctx context.Context, mu *sync.Mutex, instances map[string]*streamstest.App, bStopping *time.Time, applied time.Time) string {
	mu.Lock()
	defer mu.Unlock()
	if !bStopping.IsZero() && time.Since(*bStopping) < 30*time.Second {
		return fmt.Sprintf("b began to stop %v before the apply returned", applied.Sub(*bStopping).Round(time.Millisecond))
	}
	for _, name := range slices.Sorted(maps.Keys(instances)) {
		h, err := instances[name].Health(ctx)
		if err != nil {
			continue // stopped
		}
		ran := false
		for _, tr := range h.Transitions {
			ran = ran || tr.To == "RUNNING" && tr.At.Before(applied)
		}
		if !ran {
			return fmt.Sprintf("instance %s was not yet RUNNING when the apply returned", name)
		}
	}
	return ""
}

func runStreamsAppExpansion(t *testing.T, name, protocol string) {
	c := streamsCluster(t)
	ctx := t.Context()
	adm := c.Admin()
	servers := c.BootstrapServers()
	appID := "app-" + name
	topics := streamstest.TopicsWithPrefix(name + "-")
	internal := streamstest.GrowingTopics(appID)
	fixed := streamstest.FixedTopics(appID)
	own := append(topics.Sources(), topics.Sinks()...)
	createAppTopics(t, adm, streamsFrom, 3, own...)
	// The fixed branch keeps the topology's count through the adoption and
	// the expansion; growing it would stop the app.
	fixedUnchanged := func(when string) error {
		for _, topic := range fixed {
			if n := partitionCount(ctx, adm, topic); n != streamstest.FixedPartitions {
				return fmt.Errorf("%s, fixed topic %s has %d partitions, want the topology's %d", when, topic, n, streamstest.FixedPartitions)
			}
		}
		return nil
	}
	// What a stable group covers: the sources' subtopologies at the new
	// count, the fixed one at its own.
	stableOn := map[string]int32{topics.Orders: streamsTo, topics.Customers: streamsTo, streamstest.RepartitionTopics(appID)[0]: streamsTo, fixed[0]: streamstest.FixedPartitions}

	var mu sync.Mutex
	instances := map[string]*streamstest.App{}
	appOpts := streamstest.AppOptions{Bootstrap: servers, AppID: appID, Protocol: protocol, TopicPrefix: name + "-"}
	launch := func(instance string, held bool) (*streamstest.App, error) {
		o := appOpts
		o.Name, o.WaitForStart = instance, held
		app, err := streamstest.Launch(t, o)
		if err == nil {
			mu.Lock()
			instances[instance] = app
			mu.Unlock()
		}
		return app, err
	}
	a, err := launch("a", false)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := a.WaitState(runCtx, "RUNNING"); err != nil {
		t.Fatalf("instance a never ran: %v\n%s", err, a.LogTail(40))
	}
	// b's JVM starts now, held back, so that it joins within a second of
	// its release right after the commit: the worst window.
	b, err := launch("b", true)
	if err != nil {
		t.Fatal(err)
	}

	w := runWorkload(t, servers, topics, streamsFrom, 7)
	obs := observeApp(t, servers, topics.Counts, topics.Enriched, appID+"-counts-store-changelog")
	warm, cancelWarm := context.WithTimeout(ctx, 90*time.Second)
	defer cancelWarm()
	for len(obs.Snapshot().Counts) < int(streamsFrom) {
		if warm.Err() != nil {
			t.Fatalf("the app counted nothing within 90 s:\n%s", a.LogTail(40))
		}
		time.Sleep(250 * time.Millisecond)
	}

	// The quiesce commands, as a user's would be: stop every instance, and
	// start the app again. Here they ask the test, which owns the JVMs.
	control := t.TempDir()
	stopFile, startFile := filepath.Join(control, "stop"), filepath.Join(control, "start")
	quiesce := fmt.Sprintf(`
  quiesce {
    stop  = ["sh", "-c", "touch %s"]
    start = ["sh", "-c", "touch %s"]
  }`, stopFile, startFile)

	// The operator plays the commands' other side, and the commit watcher
	// releases b the moment the sources grow, then stops it 20 s later.
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var committed, bStopping time.Time
	var watchErr error
	var bRan bool
	var watching sync.WaitGroup
	watching.Add(1)
	go func() {
		defer watching.Done()
		stopped, started := false, false
		for watch.Err() == nil {
			if _, err := os.Stat(stopFile); err == nil && !stopped {
				stopped = true
				if err := a.Stop(watch); err != nil {
					watchErr = fmt.Errorf("quiesce stop: %w", err)
				}
			}
			if _, err := os.Stat(startFile); err == nil && !started {
				started = true
				if _, err := launch("a2", false); err != nil {
					watchErr = fmt.Errorf("quiesce start: %w", err)
				}
			}
			if committed.IsZero() {
				if n := partitionCount(watch, adm, topics.Orders); n == streamsTo {
					mu.Lock()
					committed = time.Now()
					mu.Unlock()
					if err := b.Start(watch); err != nil {
						watchErr = fmt.Errorf("releasing b: %w", err)
					}
					if err := w.Grow(watch, streamsTo, 4, 2); err != nil {
						watchErr = fmt.Errorf("producing new keys: %w", err)
					}
					t.Logf("commit seen; b released and new keys produced %v later", time.Since(committed).Round(time.Millisecond))
				}
			} else if time.Since(committed) > 20*time.Second {
				if h, err := b.Health(watch); err == nil {
					for _, tr := range h.Transitions {
						bRan = bRan || tr.To == "RUNNING"
					}
				}
				mu.Lock()
				bStopping = time.Now()
				mu.Unlock()
				if err := b.Stop(watch); err != nil {
					t.Logf("stopping b: %v", err)
				}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	hook := newExpansionReceiver(t)
	// The Streams protocol's run calls the endpoint through its
	// write-only form, which must reach neither the plan nor the state;
	// the classic run, through on_expansion_url.
	hookAttr := "on_expansion_url"
	if protocol != streamstest.ProtocolClassic && writeOnlySupported() {
		hookAttr = "on_expansion_url_wo"
	}
	grown := fmt.Sprintf(`%s = %q
  quiet_period = "5s"
  stabilization_timeout = "3m"`, hookAttr, hook.URL)
	if protocol == streamstest.ProtocolClassic {
		grown += quiesce
	}
	var applied, adoptBegan time.Time
	addr := "kafkascale_streams_app.test"
	var internalChecks []knownvalue.Check
	for _, topic := range streamstest.InternalTopics(appID) {
		internalChecks = append(internalChecks, knownvalue.StringExact(topic))
	}
	fixedChecks := []knownvalue.Check{knownvalue.StringExact(fixed[0]), knownvalue.StringExact(fixed[1])}
	steps := []resource.TestStep{{
		// Adopt the live app at its count, without naming its fixed
		// topics: the plan finds them and changes nothing, and the apply
		// returns at once.
		PreConfig: func() { adoptBegan = time.Now() },
		Config:    streamsAppConfig(servers, appID, topics, streamsFrom, ""),
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("expansion_order"), knownvalue.ListExact(nil)),
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("fixed_internal_topics"), knownvalue.SetExact(fixedChecks)),
		}},
		Check: func(*terraform.State) error {
			took := time.Since(adoptBegan)
			t.Logf("adoption planned and applied in %v", took.Round(time.Millisecond))
			if took > 30*time.Second {
				return fmt.Errorf("adopting the app took %v; an adoption changes nothing and must return at once", took.Round(time.Second))
			}
			if err := fixedUnchanged("after the adoption"); err != nil {
				return err
			}
			for _, topic := range append(append([]string{}, own...), internal...) {
				if n := partitionCount(ctx, adm, topic); n != streamsFrom {
					return fmt.Errorf("after the adoption, %s has %d partitions, want %d", topic, n, streamsFrom)
				}
			}
			// Streams notices a wrong internal topic at its next rebalance
			// or metadata refresh: the app must stay RUNNING for a while.
			for until := time.Now().Add(5 * time.Second); time.Now().Before(until); time.Sleep(250 * time.Millisecond) {
				if h, err := a.Health(ctx); err != nil || h.State != "RUNNING" || h.EverError {
					return fmt.Errorf("after the adoption the app is %q (ever in ERROR: %v, %v), want RUNNING", h.State, h.EverError, err)
				}
			}
			return nil
		},
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("protocol"), knownvalue.StringExact(protocol)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("internal_topics"), knownvalue.ListExact(internalChecks)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("fixed_internal_topics"), knownvalue.SetExact(fixedChecks)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("settled_partitions"), knownvalue.Int64Exact(int64(streamsFrom))),
		},
	}}
	// A co-partitioning conflict: the group consumes customers, which the
	// configuration leaves out, so it would stay at 4 while orders grows.
	steps = append(steps, resource.TestStep{
		Config:      strings.Replace(streamsAppConfig(servers, appID, topics, streamsTo, grown), fmt.Sprintf(", %q]", topics.Customers), "]", 1),
		ExpectError: wrapped(fmt.Sprintf(`co-partitioning: group %q consumes topic %q, which is not in source_topics`, appID, topics.Customers)),
	})
	if protocol == streamstest.ProtocolClassic {
		steps = append(steps, resource.TestStep{
			Config:      streamsAppConfig(servers, appID, topics, streamsTo, ""),
			ExpectError: wrapped(`classic rebalance protocol and has 1 members`),
		})
	}
	// On the streams protocol the first expansion is interrupted: its wait
	// for stability gives up after 1 s (the quiet period alone is 5 s), so
	// the topics have grown but the app was never seen stable nor the
	// endpoint called. The next apply must do only those.
	interrupted := protocol == streamstest.ProtocolStreams
	if interrupted {
		steps = append(steps, resource.TestStep{
			Config:      streamsAppConfig(servers, appID, topics, streamsTo, strings.Replace(grown, `stabilization_timeout = "3m"`, `stabilization_timeout = "1s"`, 1)),
			ExpectError: wrapped(`(?s)Streams expansion stopped.*gave up waiting for the group to be stable on 8 partitions`),
		})
	}
	order := map[int]knownvalue.Check{
		0: knownvalue.StringRegexp(regexp.MustCompile(`^1\. grow sink topics ` + topics.Counts + `, ` + topics.Enriched + ` to 8 partitions`)),
	}
	if interrupted {
		order[0] = knownvalue.StringRegexp(regexp.MustCompile(`^1\. wait until the group is stable on 8 partitions`))
	} else {
		// Sinks, stop, wait for the group to empty, then the one request,
		// which names the fixed topics it leaves alone.
		order[3] = knownvalue.StringRegexp(regexp.MustCompile(`^4\. grow .* to 8 partitions in one CreatePartitions request \(fixed internal topics keep their counts: ` +
			regexp.QuoteMeta(fixed[0]) + ` at 3, ` + regexp.QuoteMeta(fixed[1]) + ` at 3\)$`))
	}
	steps = append(steps, resource.TestStep{
		PreConfig: func() {
			want := streamsFrom // a refused plan changed nothing
			if interrupted {
				want = streamsTo // the interrupted apply grew everything
				if events, _ := hook.got(); len(events) != 0 {
					t.Fatalf("the interrupted apply called on_expansion_url: %+v", events)
				}
			}
			for _, topic := range append(append([]string{}, own...), internal...) {
				if n := partitionCount(ctx, adm, topic); n != want {
					t.Fatalf("before the expansion step, %s has %d partitions, want %d", topic, n, want)
				}
			}
			if err := fixedUnchanged("before the expansion step"); err != nil {
				t.Fatal(err)
			}
		},
		Config: streamsAppConfig(servers, appID, topics, streamsTo, grown),
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("expansion_order"), knownvalue.ListPartial(order)),
		}},
		Check: func(*terraform.State) error {
			applied = time.Now()
			// Apply returned: the group must be stable on 8 right now, and
			// the endpoint called once, before the return.
			port := kafka.StreamsPort{Client: providerClient(t, servers), Protocol: streams.Protocol(protocol)}
			st, err := port.StreamsGroup(ctx, appID, stableOn)
			// On a slow machine a member can change right after the apply
			// saw the group stable for the quiet period: b's JVM shutting
			// down 20 s after the commit, or an instance the quiesce start
			// launched whose JVM joins only now. Such a rebalance is one
			// the apply could not have seen; wait for it to settle rather
			// than blame the apply. Any other instability fails.
			if why := lateMemberChange(ctx, &mu, instances, &bStopping, applied); err == nil && !st.Stable && why != "" {
				t.Logf("apply returned, then the group rebalanced (%v) because %s; waiting for it to settle", st, why)
				deadline := time.Now().Add(2 * time.Minute)
				for err == nil && !st.Stable && time.Now().Before(deadline) {
					time.Sleep(time.Second)
					st, err = port.StreamsGroup(ctx, appID, stableOn)
				}
			}
			if err != nil || !st.Stable {
				return fmt.Errorf("apply returned but the group is not stable on %d partitions (%d for the fixed branch): %v %v", streamsTo, streamstest.FixedPartitions, st, err)
			}
			if err := fixedUnchanged("after the expansion"); err != nil {
				return err
			}
			events, _ := hook.got()
			if len(events) != 1 || events[0].OldPartitions != streamsFrom || events[0].NewPartitions != streamsTo || events[0].ApplicationID != appID {
				return fmt.Errorf("on_expansion_url got %+v, want one event %s %d -> %d", events, appID, streamsFrom, streamsTo)
			}
			return nil
		},
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("partitions"), knownvalue.Int64Exact(int64(streamsTo))),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("settled_partitions"), knownvalue.Int64Exact(int64(streamsTo))),
			// After an interrupted expansion this apply reads the app
			// between the two counts: an internal topic at the new count
			// whose writers still give the old one is the expansion's
			// doing, not a count the topology fixes.
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("fixed_internal_topics"), knownvalue.SetExact(fixedChecks)),
			stateCheckFunc(func(req statecheck.CheckStateRequest) error {
				b, err := json.Marshal(req.State)
				if err != nil {
					return err
				}
				if in := strings.Contains(string(b), hook.URL); in != (hookAttr == "on_expansion_url") {
					return fmt.Errorf("with %s, the state holds the endpoint: %v", hookAttr, in)
				}
				return nil
			}),
		},
	}, resource.TestStep{
		// Settled: the next plan is empty.
		Config: streamsAppConfig(servers, appID, topics, streamsTo, grown),
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectEmptyPlan(),
		}},
	})
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: steps})

	watching.Wait()
	if watchErr != nil {
		t.Fatal(watchErr)
	}
	mu.Lock()
	commit := committed
	live := instances["a"]
	if protocol == streamstest.ProtocolClassic {
		live = instances["a2"]
	}
	mu.Unlock()
	if commit.IsZero() {
		t.Fatal("the sources never grew to 8 partitions")
	}
	t.Logf("apply returned %v after the commit", applied.Sub(commit).Round(time.Millisecond))
	if _, at := hook.got(); len(at) == 1 && at[0].After(applied) {
		t.Errorf("on_expansion_url was called %v after apply returned", at[0].Sub(applied))
	}

	// b has left; the app settles again, then the input stops and every
	// count must be exact.
	stableCtx, cancelStable := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelStable()
	port := kafka.StreamsPort{Client: providerClient(t, servers), Protocol: streams.Protocol(protocol)}
	for {
		st, err := port.StreamsGroup(stableCtx, appID, stableOn)
		if err == nil && st.Stable && st.Members == 1 {
			break
		}
		if stableCtx.Err() != nil {
			t.Fatalf("after b left, the group never settled on one member: %v %v", st, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	stats := stopWorkloadAndCount(t, w, 90*time.Second, map[string]*streamstest.Observer{appID: obs})

	mu.Lock()
	defer mu.Unlock()
	for n, app := range instances {
		h, err := app.Health(ctx)
		if err != nil && !app.Exited() {
			t.Errorf("instance %s: %v", n, err)
			continue
		}
		if h.EverError {
			t.Errorf("instance %s entered ERROR or PENDING_ERROR: %v\n%s", n, h.Uncaught, app.LogTail(40))
		}
	}
	if h, err := live.Health(ctx); err != nil || h.State != "RUNNING" {
		t.Errorf("the live instance %s is %q (%v), want RUNNING", live.Name, h.State, err)
	}
	if !bRan {
		t.Errorf("instance b never reached RUNNING before it left, so its join and leave tested nothing")
	}
	seen := obs.Snapshot()
	if len(seen.Misplaced) > 0 {
		t.Errorf("%d records outside their key's home partition, e.g. %v", len(seen.Misplaced), seen.Misplaced[:min(5, len(seen.Misplaced))])
	}
	for _, topic := range []string{topics.Counts, topics.Enriched, appID + "-counts-store-changelog"} {
		for p := streamsFrom; p < streamsTo; p++ {
			if seen.Records[topic][p] == 0 {
				t.Errorf("no record of a new key in %s partition %d", topic, p)
			}
		}
	}
	for _, topic := range append(append([]string{}, own...), internal...) {
		if n := partitionCount(ctx, adm, topic); n != streamsTo {
			t.Errorf("after the expansion, %s has %d partitions, want %d", topic, n, streamsTo)
		}
	}
	if err := fixedUnchanged("at the end"); err != nil {
		t.Error(err)
	}
	var newKeyRecords int64
	for p := streamsFrom; p < streamsTo; p++ {
		newKeyRecords += seen.Records[topics.Counts][p]
	}
	t.Logf("%d orders, %d products counted exactly; %d count updates on the new partitions", stats.Sent, len(stats.Acked), newKeyRecords)
}

// runWorkload starts the orders of topics' app over homes partitions,
// drawn from seed; it is closed when the test ends.
func runWorkload(t *testing.T, servers []string, topics streamstest.Topics, homes int32, seed uint64) *streamstest.Workload {
	t.Helper()
	w, err := streamstest.NewWorkload(t.Context(), streamstest.WorkloadOptions{Bootstrap: servers, Topics: topics, Homes: homes, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	w.Run()
	return w
}

// observeApp reads an app's output topics from now on; it is closed when
// the test ends.
func observeApp(t *testing.T, servers []string, counts string, others ...string) *streamstest.Observer {
	t.Helper()
	obs, err := streamstest.NewObserver(servers, counts, others...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(obs.Close)
	return obs
}

// stopWorkloadAndCount stops the input and flushes it, checks that no
// order failed to produce, and waits up to wait for each app's counts
// (observers by application id) to match the acknowledged orders.
func stopWorkloadAndCount(t *testing.T, w *streamstest.Workload, wait time.Duration, observers map[string]*streamstest.Observer) streamstest.WorkloadStats {
	t.Helper()
	stopCtx, cancelStop := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelStop()
	if err := w.Stop(stopCtx); err != nil {
		t.Fatalf("flushing the workload: %v", err)
	}
	stats := w.Stats()
	if stats.Failed > 0 {
		t.Errorf("%d of %d orders failed to produce: %v", stats.Failed, stats.Sent, stats.FirstErr)
	}
	countCtx, cancelCount := context.WithTimeout(t.Context(), wait)
	defer cancelCount()
	for _, app := range slices.Sorted(maps.Keys(observers)) {
		if diff, err := observers[app].WaitCounts(countCtx, stats.Acked); err != nil {
			t.Errorf("%s: final counts differ from the %d orders produced: %v\n%s", app, stats.Sent, err, strings.Join(diff, "\n"))
		}
	}
	return stats
}

// createAppTopics creates a Streams app's topics (min.insync.replicas 2
// when they have 3 replicas).
func createAppTopics(t *testing.T, adm *kadm.Client, partitions int32, rf int16, topics ...string) {
	t.Helper()
	var configs map[string]*string
	if rf >= 3 {
		configs = map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}
	}
	created, err := adm.CreateTopics(t.Context(), partitions, rf, configs, topics...)
	if err == nil {
		err = created.Error()
	}
	if err != nil {
		t.Fatalf("creating %v: %v", topics, err)
	}
}

// partitionCount is a topic's partition count as the cluster shows it now
// (0 when it cannot tell).
func partitionCount(ctx context.Context, adm *kadm.Client, topic string) int32 {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0
	}
	return int32(len(td[topic].Partitions))
}

// providerClient is a client of the provider's own adapter for checks.
func providerClient(t *testing.T, servers []string) *kafka.Client {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: servers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Bad input is refused at plan time, on the attribute at fault, and
// nothing changes on the cluster. The app here is known by its internal
// topic only (it is not running), which is how an app that is stopped
// looks.
func TestAccStreamsApp_refusesBadInput(t *testing.T) {
	testAccPreCheck(t)
	c := streamsCluster(t)
	ctx := t.Context()
	adm := c.Admin()
	servers := c.BootstrapServers()
	topics := streamstest.TopicsWithPrefix("accbad-")
	appID := "app-accbad"
	all := append(append(topics.Sources(), topics.Sinks()...), appID+"-byproduct-repartition")
	createAppTopics(t, adm, 6, 1, all...)
	unchanged := func() {
		for _, topic := range all {
			if n := partitionCount(ctx, adm, topic); n != 6 {
				t.Fatalf("%s has %d partitions after a refused plan, want 6", topic, n)
			}
		}
	}
	cfg := func(app string, sources []string, partitions int, extra string) string {
		return testAccProviderConfig(servers, "") + fmt.Sprintf(`
resource "kafkascale_streams_app" "test" {
  application_id      = %q
  source_topics       = ["%s"]
  sink_topics         = [%q, %q]
  partitions          = %d
  %s
}
`, app, strings.Join(sources, `", "`), topics.Enriched, topics.Counts, partitions, extra)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      cfg("app-accnobody", topics.Sources(), 8, "static_partitioning = true"),
				ExpectError: wrapped(`unknown application id "app-accnobody": the cluster has no group of that name and no internal topics`),
			},
			{
				PreConfig:   unchanged,
				Config:      cfg(appID, append(topics.Sources(), "accbad-missing"), 8, "static_partitioning = true"),
				ExpectError: wrapped(`source topic "accbad-missing" does not exist`),
			},
			{
				PreConfig:   unchanged,
				Config:      cfg(appID, topics.Sources(), 4, "static_partitioning = true"),
				ExpectError: wrapped(`partitions = 4 is below the 6 partitions of .* topic .*Kafka can add partitions to a topic but never remove them`),
			},
			{
				PreConfig:   unchanged,
				Config:      cfg(appID, topics.Sources(), 8, ""),
				ExpectError: wrapped(`static_partitioning is false, so the expansion of "app-accbad" to 8 partitions is refused`),
			},
			{
				PreConfig:   unchanged,
				Config:      cfg(appID, topics.Sources(), 8, `static_partitioning = true`) + "\n# " + topics.Enriched,
				ExpectError: nil,
				PlanOnly:    true, ExpectNonEmptyPlan: true,
			},
			{
				PreConfig:   unchanged,
				Config:      cfg(appID, append(topics.Sources(), topics.Enriched), 8, "static_partitioning = true"),
				ExpectError: wrapped(`Topic "accbad-enriched" is in source_topics and sink_topics`),
			},
		},
	})
	unchanged()
}

// Across apps, the downstream app goes first. "down" reads up's enriched
// sink as its orders. Growing up alone would grow that sink ahead of down's
// internal topics: the plan warns, the apply refuses, and nothing changes.
// With depends_on, Terraform applies down first, which grows the shared
// topic together with down's internal topics; up then finds its sink grown.
// Both apps run throughout, and both count every order exactly.
func TestAccStreamsApp_downstreamFirst(t *testing.T) {
	testAccPreCheck(t)
	c := streamsCluster(t)
	ctx := t.Context()
	adm := c.Admin()
	servers := c.BootstrapServers()
	up, down := streamstest.TopicsWithPrefix("accup-"), streamstest.TopicsWithPrefix("accdown-")
	upID, downID := "app-accup", "app-accdown"
	own := append(append(up.Sources(), up.Sinks()...), down.Customers, down.Enriched, down.Counts)
	createAppTopics(t, adm, streamsFrom, 3, own...)
	apps := map[string]*streamstest.App{}
	for _, o := range []streamstest.AppOptions{
		{Name: "up", AppID: upID, TopicPrefix: "accup-"},
		{Name: "down", AppID: downID, TopicPrefix: "accdown-", OrdersTopic: up.Enriched},
	} {
		o.Bootstrap, o.Protocol = servers, streamstest.ProtocolStreams
		apps[o.Name] = streamstest.StartApp(t, o)
	}
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for n, a := range apps {
		if err := a.WaitState(runCtx, "RUNNING"); err != nil {
			t.Fatalf("app %s never ran: %v\n%s", n, err, a.LogTail(40))
		}
	}
	w, err := streamstest.NewWorkload(ctx, streamstest.WorkloadOptions{Bootstrap: servers, Topics: up, Homes: streamsFrom, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Run()
	upCounts, err := streamstest.NewObserver(servers, up.Counts, up.Enriched)
	if err != nil {
		t.Fatal(err)
	}
	defer upCounts.Close()
	downCounts, err := streamstest.NewObserver(servers, down.Counts, down.Enriched)
	if err != nil {
		t.Fatal(err)
	}
	defer downCounts.Close()
	for len(downCounts.Snapshot().Counts) < int(streamsFrom) {
		if runCtx.Err() != nil {
			t.Fatalf("the downstream app counted nothing:\n%s", apps["down"].LogTail(40))
		}
		time.Sleep(250 * time.Millisecond)
	}
	// The moment each topic reaches 8 partitions, to check the order.
	watched := append(append([]string{}, own...), streamstest.GrowingTopics(downID)...)
	watched = append(watched, streamstest.GrowingTopics(upID)...)
	fixed := append(streamstest.FixedTopics(downID), streamstest.FixedTopics(upID)...)
	var mu sync.Mutex
	grownAt := map[string]time.Time{}
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watch.Err() == nil {
			if td, err := adm.ListTopics(watch, watched...); err == nil {
				mu.Lock()
				for _, topic := range watched {
					if _, seen := grownAt[topic]; !seen && len(td[topic].Partitions) == int(streamsTo) {
						grownAt[topic] = time.Now()
					}
				}
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	cfg := func(upN, downN int32, dependsOn string) string {
		return testAccProviderConfig(servers, "") + fmt.Sprintf(`
resource "kafkascale_streams_app" "down" {
  application_id      = %q
  source_topics       = [%q, %q]
  sink_topics         = [%q, %q]
  partitions          = %d
  static_partitioning = true
  quiet_period        = "3s"
}

resource "kafkascale_streams_app" "up" {
  application_id      = %q
  source_topics       = [%q, %q]
  sink_topics         = [%q, %q]
  partitions          = %d
  static_partitioning = true
  quiet_period        = "3s"
  %s
}
`, downID, up.Enriched, down.Customers, down.Enriched, down.Counts, downN,
			upID, up.Orders, up.Customers, up.Enriched, up.Counts, upN, dependsOn)
	}
	unchanged := func() {
		for _, topic := range watched {
			if n := partitionCount(ctx, adm, topic); n != streamsFrom {
				t.Fatalf("%s has %d partitions after a refused apply, want %d", topic, n, streamsFrom)
			}
		}
	}
	// Neither app's fixed branch ever grows.
	fixedUnchanged := func(when string) {
		for _, topic := range fixed {
			if n := partitionCount(ctx, adm, topic); n != streamstest.FixedPartitions {
				t.Errorf("%s, fixed topic %s has %d partitions, want the topology's %d", when, topic, n, streamstest.FixedPartitions)
			}
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg(streamsFrom, streamsFrom, "")},
			{
				// up alone: its sink is down's source.
				Config:      cfg(streamsTo, streamsFrom, ""),
				ExpectError: wrapped(fmt.Sprintf(`sink topic %q is a source of Streams app %q \(streams protocol, 1 member\(s\)\), which is downstream and must be expanded first \(order: %s, then %s\)`, up.Enriched, downID, downID, upID)),
			},
			{
				PreConfig: unchanged,
				Config:    cfg(streamsTo, streamsTo, "depends_on = [kafkascale_streams_app.down]"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_streams_app.up", tfjsonpath.New("settled_partitions"), knownvalue.Int64Exact(int64(streamsTo))),
					statecheck.ExpectKnownValue("kafkascale_streams_app.down", tfjsonpath.New("settled_partitions"), knownvalue.Int64Exact(int64(streamsTo))),
					statecheck.ExpectKnownValue("kafkascale_streams_app.down", tfjsonpath.New("fixed_internal_topics"), knownvalue.SetExact([]knownvalue.Check{
						knownvalue.StringExact(streamstest.FixedTopics(downID)[0]), knownvalue.StringExact(streamstest.FixedTopics(downID)[1]),
					})),
				},
			},
			{
				// An import reads the sources from the group and finds the
				// fixed topics as a plan does. What only the configuration
				// holds is not imported.
				ResourceName:                         "kafkascale_streams_app.down",
				Config:                               cfg(streamsTo, streamsTo, "depends_on = [kafkascale_streams_app.down]"),
				ImportState:                          true,
				ImportStateId:                        downID,
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "id",
				ImportStateVerifyIgnore:              []string{"sink_topics", "static_partitioning", "quiet_period", "expansion_order"},
			},
		},
	})
	stopWatch()
	fixedUnchanged("after both expansions")

	mu.Lock()
	at := maps.Clone(grownAt)
	mu.Unlock()
	for _, topic := range watched {
		if at[topic].IsZero() {
			t.Errorf("topic %s never reached %d partitions", topic, streamsTo)
		}
	}
	// down's expansion grew the shared topic with down's internal topics,
	// before up grew its own sources.
	shared := at[up.Enriched]
	for _, topic := range streamstest.GrowingTopics(downID) {
		if d := at[topic].Sub(shared); d < -time.Second || d > time.Second {
			t.Errorf("%s grew %v apart from %s; they must grow in one request", topic, d, up.Enriched)
		}
	}
	if !shared.Before(at[up.Orders]) {
		t.Errorf("%s (down's source) grew at %s, not before up's source %s at %s", up.Enriched, shared.Format("15:04:05.000"), up.Orders, at[up.Orders].Format("15:04:05.000"))
	}
	t.Logf("down's source %s grew %v before up's source %s", up.Enriched, at[up.Orders].Sub(shared).Round(time.Millisecond), up.Orders)

	if err := w.Grow(ctx, streamsTo, 4, 2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	stopCtx, cancelStop := context.WithTimeout(ctx, 30*time.Second)
	defer cancelStop()
	if err := w.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	stats := w.Stats()
	countCtx, cancelCount := context.WithTimeout(ctx, 90*time.Second)
	defer cancelCount()
	for name, obs := range map[string]*streamstest.Observer{"up": upCounts, "down": downCounts} {
		if diff, err := obs.WaitCounts(countCtx, stats.Acked); err != nil {
			t.Errorf("app %s: counts differ from the %d orders produced: %v\n%s", name, stats.Sent, err, strings.Join(diff, "\n"))
		}
		if m := obs.Snapshot().Misplaced; len(m) > 0 {
			t.Errorf("app %s: %d records outside their key's home partition, e.g. %v", name, len(m), m[:min(5, len(m))])
		}
	}
	for n, a := range apps {
		if h, err := a.Health(ctx); err != nil || h.EverError || h.State != "RUNNING" {
			t.Errorf("app %s: state %q, everError %v (%v)\n%s", n, h.State, h.EverError, err, a.LogTail(30))
		}
	}
}
