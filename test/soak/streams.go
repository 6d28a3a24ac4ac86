//go:build linux

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/streamstest"
)

// The Streams fixture app the soak keeps running: the shop topology (orders
// joined with customers, counted per product) on the streams rebalance
// protocol, under exactly-once, so that its counts must equal the orders
// acknowledged whatever the steps do to the cluster. B declares it as a
// kafkascale_streams_app, and some of B's steps grow it.
const (
	streamsAppID       = "soak-app"
	streamsPrefix      = "s-"
	streamsPartitions  = 6
	streamsMaxPartions = 12
	streamsOrderRate   = 20 // orders per second: enough to count, little CPU
)

// streamsFixture is the running app, its input and the reader of its counts.
type streamsFixture struct {
	topics streamstest.Topics
	app    *streamstest.App
	w      *streamstest.Workload
	obs    *streamstest.Observer
	homes  int32 // the partitions the workload's keys use
}

// startStreams creates the app's own topics, starts one instance of the
// app with its state under root, waits until it runs, and starts the
// orders and the observer. The caller stops it with stop.
func startStreams(ctx context.Context, root string, servers []string, adm *kadm.Client, seed uint64, logf func(string, ...any)) (*streamsFixture, error) {
	f := &streamsFixture{topics: streamstest.TopicsWithPrefix(streamsPrefix), homes: streamsPartitions}
	own := append(f.topics.Sources(), f.topics.Sinks()...)
	created, err := adm.CreateTopics(ctx, streamsPartitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, own...)
	if err == nil {
		err = created.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("creating the Streams app's topics %v: %w", own, err)
	}
	f.app, err = streamstest.LaunchIn(ctx, filepath.Join(root, "streams-app"), streamstest.AppOptions{
		Bootstrap: servers, AppID: streamsAppID, Protocol: streamstest.ProtocolStreams, TopicPrefix: streamsPrefix,
		HeapMB: 192, LogDir: root,
		// As a production app sets it: left at its default, the internal
		// topics were made with one replica (soak seed 21, step 30: offline
		// after a broker kill; seed 23, step 32: an expansion waited for a
		// stable group that could not be, with its changelogs offline).
		Config: map[string]string{"replication.factor": "3"},
		// As a production app sets it too: a broker killed under the
		// transaction coordinator can fail a commit for good
		// (InvalidTxnStateException; soak seed 28, step 27, a fault of the
		// harness, not an expansion), and the default response shuts the
		// whole app down. A replaced thread starts a new transaction; the
		// ledger still counts every order exactly once.
		OnError: "replace_thread",
	})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*streamsFixture, error) {
		f.stop()
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := f.app.WaitState(rctx, "RUNNING"); err != nil {
		return fail(fmt.Errorf("the Streams app never ran: %w\n%s", err, f.app.LogTail(30)))
	}
	if err := internalTopicsReplicated(ctx, adm, 3); err != nil {
		return fail(err)
	}
	f.w, err = streamstest.NewWorkload(ctx, streamstest.WorkloadOptions{
		Bootstrap: servers, Topics: f.topics, Homes: streamsPartitions, Rate: streamsOrderRate, Seed: seed,
	})
	if err != nil {
		return fail(err)
	}
	f.w.Run()
	f.obs, err = streamstest.NewObserver(servers, f.topics.Counts)
	if err != nil {
		return fail(err)
	}
	logf("the Streams app %s runs on %d partitions, its log in %s", streamsAppID, streamsPartitions, f.app.LogPath)
	return f, nil
}

// internalTopicsReplicated checks that the app's internal topics have rf
// replicas: with one, a broker kill takes them offline, which no step of
// kafkascale's would explain.
func internalTopicsReplicated(ctx context.Context, adm *kadm.Client, rf int) error {
	td, err := adm.ListTopics(ctx)
	if err != nil {
		return err
	}
	var short []string
	for _, t := range td.Sorted() {
		if strings.HasPrefix(t.Topic, streamsAppID+"-") {
			if got := t.Partitions.NumReplicas(); got != rf {
				short = append(short, fmt.Sprintf("%s (%d)", t.Topic, got))
			}
		}
	}
	if len(short) > 0 {
		return fmt.Errorf("the Streams app's internal topics %v do not have %d replicas", short, rf)
	}
	return nil
}

// stop ends the orders, the observer and the app, whichever started.
func (f *streamsFixture) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if f.w != nil {
		_ = f.w.Stop(ctx)
		f.w.Close()
	}
	if f.obs != nil {
		f.obs.Close()
	}
	if f.app != nil {
		_ = f.app.Stop(ctx)
	}
}

// check is the step's invariant for the app: it is RUNNING (within a
// minute: a step may have moved its partitions' leaders or killed a
// broker, and the app rebalances), and it never met an error it did not
// handle. Once both sources have more partitions than the orders use (an
// expansion went through), the workload makes keys for the new ones.
func (f *streamsFixture) check(ctx context.Context, adm *kadm.Client) (string, []string) {
	if f.app.Exited() {
		return "FAIL", []string{"the Streams app exited:\n" + f.app.LogTail(30)}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := f.app.WaitState(wctx, "RUNNING"); err != nil {
		return "FAIL", []string{fmt.Sprintf("the Streams app is not RUNNING a minute after the step: %v", err)}
	}
	h, err := f.app.Health(ctx)
	if err != nil {
		return "?", []string{"reading the Streams app's health: " + err.Error()}
	}
	if h.EverError || len(h.Uncaught) > 0 {
		var traces []string
		for _, u := range h.Uncaught {
			traces = append(traces, u.Thread+": "+firstLines(u.Trace, 3))
		}
		return "FAIL", []string{"the Streams app met an uncaught error: " + strings.Join(traces, "; ")}
	}
	grown := f.sourcePartitions(ctx, adm)
	if grown > f.homes {
		if err := f.w.Grow(wctx, grown, 4, 2); err != nil {
			return "FAIL", []string{fmt.Sprintf("making keys for partitions %d..%d: %v", f.homes, grown-1, err)}
		}
		f.homes = grown
	}
	return fmt.Sprintf("ok %d", f.homes), nil
}

// sourcePartitions is the partition count both sources have (the smaller
// one), 0 when it cannot tell.
func (f *streamsFixture) sourcePartitions(ctx context.Context, adm *kadm.Client) int32 {
	td, err := adm.ListTopics(ctx, f.topics.Sources()...)
	if err != nil {
		return 0
	}
	n := int32(-1)
	for _, topic := range f.topics.Sources() {
		if p := int32(len(td[topic].Partitions)); n < 0 || p < n {
			n = p
		}
	}
	return max(n, 0)
}

// finalCounts stops the orders and waits until the app's counts match the
// orders acknowledged, exactly. An order whose produce failed may still
// have been written (its acknowledgement lost), so a product may be
// counted more often than acknowledged, by at most the failed produces in
// all; a product counted less lost an acknowledged order.
func (f *streamsFixture) finalCounts(ctx context.Context) (string, []string) {
	if err := f.w.Stop(ctx); err != nil {
		return "FAIL", []string{"stopping the orders: " + err.Error()}
	}
	stats := f.w.Stats()
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	diff, _ := f.obs.WaitCounts(wctx, stats.Acked)
	summary := fmt.Sprintf("%d orders acknowledged, %d failed", sum(stats.Acked), stats.Failed)
	if len(diff) == 0 {
		return summary + ", counted exactly", nil
	}
	got := f.obs.Snapshot().Counts
	var surplus int64
	var short []string
	for product, want := range stats.Acked {
		switch g := got[product]; {
		case g < want:
			short = append(short, fmt.Sprintf("%s: counted %d, acknowledged %d", product, g, want))
		case g > want:
			surplus += g - want
		}
	}
	for product, g := range got {
		if _, ok := stats.Acked[product]; !ok {
			surplus += g
		}
	}
	if len(short) == 0 && surplus <= stats.Failed {
		return fmt.Sprintf("%s, %d failed orders counted (written, acknowledgement lost)", summary, surplus), nil
	}
	problems := short
	if surplus > stats.Failed {
		problems = append(problems, fmt.Sprintf("%d orders counted beyond those acknowledged, more than the %d that failed", surplus, stats.Failed))
	}
	return summary, problems
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " | ")
}

// streamsHCL renders B's kafkascale_streams_app.
func streamsHCL(partitions int32, timeout string) string {
	t := streamstest.TopicsWithPrefix(streamsPrefix)
	return fmt.Sprintf(`
resource "kafkascale_streams_app" "soak" {
  application_id      = %q
  source_topics       = [%q, %q]
  sink_topics         = [%q, %q]
  partitions          = %d
  static_partitioning = true
  quiet_period        = "5s"
  timeouts {
    create = %q
    update = %q
  }
}
`, streamsAppID, t.Orders, t.Customers, t.Enriched, t.Counts, partitions, timeout, timeout)
}
