package streamstest_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/streamstest"
)

func TestMain(m *testing.M) { kafkatest.Main(m, nil) }

// cluster is the one cluster the tests of this package share; each test
// uses its own topics and application.id.
func cluster(t *testing.T) *kafkatest.Cluster {
	return kafkatest.Shared(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}})
}

const (
	fromPartitions int32 = 4
	toPartitions   int32 = 8
)

// scenario is one run of the expansion experiment.
type scenario struct {
	protocol       string
	metadataMaxAge time.Duration
	partitioner    string
	onError        string
	// secondJoins starts a second instance (b) at the moment the expansion
	// is committed and stops it, leaving the group, 20 s later.
	secondJoins bool
	// joinBeforeCommit releases b before the sources and internal topics
	// grow, and commits them the moment the group starts rebalancing for
	// it: the leader then assigns right after the commit, inside even a
	// short stale-metadata window.
	joinBeforeCommit bool
	// quiesce stops the app and waits for its group to be Empty before the
	// expansion, and starts it again (as a2) after, as a user's quiesce
	// hook would.
	quiesce bool
	// config adds Streams or client properties to every instance.
	config map[string]string
}

// outcome is what one run observed.
type outcome struct {
	appID     string
	topics    streamstest.Topics
	expansion streamstest.Expansion
	// health is each instance's last health, by name (a, a2, b).
	health map[string]streamstest.Health
	// healthA is the health of the instance that lived through the
	// expansion: a, or a2 when the app was quiesced.
	healthA streamstest.Health
	// groupType is the group's type as ListGroups reports it.
	groupType string
	// firstStable is how long after the commit the group was first seen
	// stable on the new count (zero if never).
	firstStable time.Duration
	// finalStable is the group once input stopped, and why it was not
	// stable; unset when the app died.
	finalStable    streamstest.GroupStatus
	finalStableErr error
	events         []streamstest.GroupEvent
	countDiff      []string
	countErr       error
	observed       streamstest.Observed
	stats          streamstest.WorkloadStats
	partitions     map[string]int32
	excerpts       map[string][]string
}

// excerptRE picks the lines of an instance's log worth reading.
var excerptRE = regexp.MustCompile(`KSAPP (STATE|UNCAUGHT|PARTITIONER|START|CLOSING|CLOSED)|invalid partitions|Request joining group due to|Exception|transitioned from|participating in this rebalance`)

// runExpansion runs the experiment on the real app: instance a under
// continuous input; the topics grown from 4 to 8 partitions (the sinks
// first, then the sources and the internal topics in one request);
// optionally a second instance b joining at the commit and leaving 20 s
// later; then the input stops and the output is read back. It fails the
// test only when the experiment itself cannot run; the caller asserts the
// outcome.
func runExpansion(t *testing.T, name string, sc scenario) outcome {
	t.Helper()
	c := cluster(t)
	ctx := t.Context()
	adm := c.Admin()
	bootstrap := c.BootstrapServers()
	// A streams group is described the way the provider describes it.
	kc, err := kafka.NewClient(kafka.Config{BootstrapServers: bootstrap})
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	o := outcome{
		appID: "app-" + name, topics: streamstest.TopicsWithPrefix(name + "-"),
		health: map[string]streamstest.Health{}, excerpts: map[string][]string{},
	}
	internal := streamstest.GrowingTopics(o.appID)
	fixed := streamstest.FixedTopics(o.appID)
	own := append(o.topics.Sources(), o.topics.Sinks()...)
	created, err := adm.CreateTopics(ctx, fromPartitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, own...)
	if err == nil {
		err = created.Error()
	}
	if err != nil {
		t.Fatalf("creating %v: %v", own, err)
	}

	appOpts := streamstest.AppOptions{
		Bootstrap: bootstrap, AppID: o.appID, Protocol: sc.protocol, MetadataMaxAge: sc.metadataMaxAge,
		TopicPrefix: name + "-", Partitioner: sc.partitioner, OnError: sc.onError, Config: sc.config,
	}
	instances := map[string]*streamstest.App{}
	start := func(name string, waitForStart bool) *streamstest.App {
		opts := appOpts
		opts.Name, opts.WaitForStart = name, waitForStart
		app := streamstest.StartApp(t, opts)
		instances[name] = app
		return app
	}
	a := start("a", false)
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := a.WaitState(runCtx, "RUNNING"); err != nil {
		t.Fatalf("instance a never ran before the expansion: %v\n%s", err, a.LogTail(40))
	}
	var b *streamstest.App
	if sc.secondJoins {
		// Started now, so that its JVM is warm and it joins within a
		// second of its release.
		b = start("b", true)
	}

	w, err := streamstest.NewWorkload(ctx, streamstest.WorkloadOptions{Bootstrap: bootstrap, Topics: o.topics, Homes: fromPartitions, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Run()
	obs, err := streamstest.NewObserver(bootstrap, o.topics.Counts, o.topics.Enriched, o.appID+"-counts-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()

	// The app counts before anything changes.
	warmCtx, cancelWarm := context.WithTimeout(ctx, 90*time.Second)
	defer cancelWarm()
	for len(obs.Snapshot().Counts) < int(fromPartitions) {
		if warmCtx.Err() != nil {
			t.Fatalf("the app produced no counts within 90s before the expansion:\n%s", a.LogTail(40))
		}
		time.Sleep(250 * time.Millisecond)
	}
	// The app creates its internal topics as its tasks start: poll until
	// every one is there at the topology's count, for at most 30s.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		got, gotFixed := partitionCounts(t, adm, internal...), partitionCounts(t, adm, fixed...)
		if allEqual(got, internal, fromPartitions) && allEqual(gotFixed, fixed, streamstest.FixedPartitions) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("before the expansion, the internal topics have %v partitions (want %d each) and the fixed ones %v (want the topology's %d each)",
				got, fromPartitions, gotFixed, streamstest.FixedPartitions)
		}
	}

	// Stable after the expansion: every task of the sources' subtopologies
	// at the new count, the fixed subtopology's at its own.
	want := map[string]int32{fixed[0]: streamstest.FixedPartitions}
	for _, topic := range append(o.topics.Sources(), streamstest.RepartitionTopics(o.appID)...) {
		want[topic] = toPartitions
	}
	status := func(ctx context.Context) (streamstest.GroupStatus, error) {
		if sc.protocol == streamstest.ProtocolStreams {
			return streamstest.StreamsGroupStatus(ctx, kc, o.appID, want)
		}
		return streamstest.ClassicGroupStatus(ctx, adm, o.appID, want)
	}
	watcher := streamstest.WatchGroup(250*time.Millisecond, status)
	if listed, err := adm.ListGroups(ctx); err == nil {
		o.groupType = listed[o.appID].GroupType
	}

	if sc.quiesce {
		o.health["a"] = lastHealth(t, a)
		stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := a.Stop(stopCtx); err != nil {
			t.Fatalf("quiesce: stopping instance a: %v", err)
		}
		cancel()
		// The hook's contract: the group is Empty before anything grows.
		emptyCtx, cancel := context.WithTimeout(ctx, time.Minute)
		state, err := waitGroupState(emptyCtx, c, kc, o.appID, sc.protocol, "Empty")
		cancel()
		if err != nil {
			t.Fatalf("quiesce: instance a stopped, but the group is %s: %v", state, err)
		}
		t.Logf("quiesce: instance a stopped and the group is Empty")
	}

	together := append(o.topics.Sources(), internal...)
	if sc.joinBeforeCommit {
		if err := streamstest.CreatePartitions(ctx, c.Client(), o.topics.Sinks(), toPartitions); err != nil {
			t.Fatalf("expanding the sinks: %v", err)
		}
		o.expansion.SinksCommitted = time.Now()
		released := time.Now()
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		rebalancing, cancel := context.WithTimeout(ctx, 30*time.Second)
		state, err := waitGroupState(rebalancing, c, kc, o.appID, sc.protocol, "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")
		cancel()
		if err != nil {
			t.Fatalf("instance b was released, but the group never started rebalancing (last state %s): %v", state, err)
		}
		if err := streamstest.CreatePartitions(ctx, c.Client(), together, toPartitions); err != nil {
			t.Fatalf("expanding the sources and internal topics: %v", err)
		}
		o.expansion.Committed = time.Now()
		t.Logf("instance b released %v before the commit; the group was %s when the commit began",
			o.expansion.Committed.Sub(released).Round(time.Millisecond), state)
	} else {
		if o.expansion, err = streamstest.Expand(ctx, c.Client(), o.topics.Sinks(), together, toPartitions); err != nil {
			t.Fatalf("expanding: %v", err)
		}
	}
	commit := o.expansion.Committed
	since := func() time.Duration { return time.Since(commit).Round(time.Millisecond) }
	t.Logf("expansion committed: sinks at %s, sources and internal topics at %s",
		o.expansion.SinksCommitted.Format("15:04:05.000"), commit.Format("15:04:05.000"))

	if sc.quiesce {
		a = start("a2", false)
		t.Logf("quiesce: instance a2 started %v after the commit", since())
	}
	if b != nil && !sc.joinBeforeCommit {
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("instance b released %v after the commit", since())
	}
	growCtx, cancelGrow := context.WithTimeout(ctx, time.Minute)
	defer cancelGrow()
	if err := w.Grow(growCtx, toPartitions, 4, 2); err != nil {
		t.Fatal(err)
	}
	t.Logf("new keys produced from %v after the commit", since())

	// b leaves 20 s after the commit, inside the 30 s the scenario allows;
	// without b, the same 20 s show whether a dies. A b that has not run
	// by then (its join rebalance is slow on a loaded machine, and after a
	// quiesce it joins with a2 about 13 s in) is waited for up to 40 s
	// more: a b that leaves before it ran tests nothing, and the check
	// after would fail on the machine's speed, not on the expansion.
	aDied := diedBy(ctx, a, commit.Add(20*time.Second))
	if b != nil {
		sleepUntil(ctx, commit.Add(20*time.Second))
		if !ranOnce(lastHealth(t, b)) {
			runCtx, cancel := context.WithTimeout(ctx, 40*time.Second)
			if err := b.WaitState(runCtx, "RUNNING"); err != nil {
				t.Logf("instance b: %v", err)
			}
			cancel()
			t.Logf("instance b waited for until %v after the commit to run before it leaves", since())
		}
		o.health["b"] = lastHealth(t, b)
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := b.Stop(stopCtx); err != nil {
			// A close that cannot finish is part of what a run shows
			// (a group stuck behind a dead leader), not a test failure.
			t.Logf("instance b: %v", err)
		}
		cancel()
		t.Logf("instance b stopped %v after the commit", since())
		aDied = aDied || diedBy(ctx, a, time.Now())
	}
	if !aDied {
		sleepUntil(ctx, commit.Add(40*time.Second))
		stableCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
		o.finalStable, o.finalStableErr = streamstest.WaitStable(stableCtx, 3*time.Second, status)
		cancel()
	}
	stopCtx, cancelStop := context.WithTimeout(ctx, 30*time.Second)
	defer cancelStop()
	if err := w.Stop(stopCtx); err != nil {
		t.Errorf("flushing the workload: %v", err)
	}
	o.stats = w.Stats()
	if !aDied {
		countCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
		o.countDiff, o.countErr = obs.WaitCounts(countCtx, o.stats.Acked)
		cancel()
	}
	o.observed = obs.Snapshot()
	o.events = watcher.Stop()
	for _, e := range o.events {
		if e.Err == nil && e.Status.Stable && e.At.After(commit) {
			o.firstStable = e.At.Sub(commit)
			break
		}
	}
	o.healthA = lastHealth(t, a)
	o.health[a.Name] = o.healthA
	o.partitions = partitionCounts(t, adm, append(append(own, internal...), fixed...)...)
	for n, app := range instances {
		lines, err := app.LogLines(excerptRE, 2)
		if err != nil {
			t.Errorf("reading instance %s's log: %v", n, err)
		}
		o.excerpts[n] = lines
	}
	o.report(t, aDied)
	return o
}

// diedBy polls app's health until it reports an ERROR or until.
func diedBy(ctx context.Context, app *streamstest.App, until time.Time) bool {
	for {
		if h, err := app.Health(ctx); err == nil && h.EverError {
			return true
		}
		if time.Now().After(until) || ctx.Err() != nil {
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func lastHealth(t *testing.T, app *streamstest.App) streamstest.Health {
	t.Helper()
	h, err := app.Health(t.Context())
	if err != nil {
		t.Errorf("reading instance %s's health: %v", app.Name, err)
	}
	return h
}

func (o outcome) report(t *testing.T, aDied bool) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "app %s (group type %q): %d orders produced (%d failed), %d products\n",
		o.appID, o.groupType, o.stats.Sent, o.stats.Failed, len(o.stats.Acked))
	for _, n := range slices.Sorted(maps.Keys(o.health)) {
		h := o.health[n]
		fmt.Fprintf(&b, "instance %s: state %s, everError %v, %d uncaught\n", n, h.State, h.EverError, len(h.Uncaught))
	}
	if o.firstStable == 0 {
		fmt.Fprintf(&b, "never stable on %d partitions after the commit\n", toPartitions)
	} else {
		fmt.Fprintf(&b, "first stable on %d partitions %v after the commit\n", toPartitions, o.firstStable)
	}
	if aDied {
		b.WriteString("instance a died: no final stability or count check\n")
	} else {
		fmt.Fprintf(&b, "final group: %s (err %v)\n", o.finalStable, o.finalStableErr)
		fmt.Fprintf(&b, "counts: %d of %d products differ (%v)\n", len(o.countDiff), len(o.stats.Acked), o.countErr)
		for i, d := range o.countDiff {
			if i == 10 {
				b.WriteString("  ...\n")
				break
			}
			fmt.Fprintf(&b, "  %s\n", d)
		}
	}
	fmt.Fprintf(&b, "misplaced records %d, unreadable records %d, enriched %d (join misses %d)\n",
		len(o.observed.Misplaced), len(o.observed.Bad), o.observed.Enriched, o.observed.JoinMisses)
	fmt.Fprintf(&b, "records per partition: %v\n", o.observed.Records)
	fmt.Fprintf(&b, "partition counts: %v\n", o.partitions)
	b.WriteString("group timeline (from the commit):\n")
	for _, e := range o.events {
		rel := e.At.Sub(o.expansion.Committed).Round(10 * time.Millisecond)
		if e.Err != nil {
			fmt.Fprintf(&b, "  %8v  error: %v\n", rel, e.Err)
			continue
		}
		fmt.Fprintf(&b, "  %8v  %s\n", rel, e.Status)
	}
	for _, n := range slices.Sorted(maps.Keys(o.excerpts)) {
		lines := o.excerpts[n]
		fmt.Fprintf(&b, "instance %s log excerpts:\n", n)
		for i, l := range lines {
			if i == 60 {
				fmt.Fprintf(&b, "  ... %d more\n", len(lines)-60)
				break
			}
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	t.Log(b.String())
}

func partitionCounts(t *testing.T, adm *kadm.Client, topics ...string) map[string]int32 {
	t.Helper()
	md, err := adm.ListTopics(t.Context(), topics...)
	if err != nil {
		t.Fatalf("listing %v: %v", topics, err)
	}
	out := map[string]int32{}
	for _, d := range md {
		if d.Err == nil {
			out[d.Topic] = int32(len(d.Partitions))
		}
	}
	return out
}

func allEqual(got map[string]int32, topics []string, n int32) bool {
	for _, tp := range topics {
		if got[tp] != n {
			return false
		}
	}
	return true
}

func sleepUntil(ctx context.Context, at time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(at)):
	}
}

// groupState reads a group's state with its protocol's describe request.
func groupState(ctx context.Context, c *kafkatest.Cluster, kc *kafka.Client, group, protocol string) (string, error) {
	if protocol == streamstest.ProtocolStreams {
		g, err := kc.DescribeStreamsGroup(ctx, group)
		return g.State, err
	}
	described, err := c.Admin().DescribeGroups(ctx, group)
	if err != nil {
		return "", err
	}
	return described[group].State, described[group].Err
}

// waitGroupState polls the group until its state is one of states and
// returns the state seen last.
func waitGroupState(ctx context.Context, c *kafkatest.Cluster, kc *kafka.Client, group, protocol string, states ...string) (string, error) {
	var state string
	for {
		if s, err := groupState(ctx, c, kc, group, protocol); err == nil {
			state = s
			if slices.Contains(states, s) {
				return s, nil
			}
		}
		select {
		case <-ctx.Done():
			return state, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
