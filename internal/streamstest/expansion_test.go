package streamstest_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/streamstest"
)

// A freshly formatted 4.4 cluster must offer the streams rebalance protocol
// (KIP-1071) without any setting: the expansion's safe path relies on it.
func TestStreamsProtocolEnabledOnNewCluster(t *testing.T) {
	c := cluster(t)
	features, err := kafkatest.FinalizedFeatures(t.Context(), c.Client())
	if err != nil {
		t.Fatal(err)
	}
	if features["streams.version"] < 1 {
		t.Errorf("finalized streams.version = %d, want >= 1 (features %v)", features["streams.version"], features)
	}
	configs, err := c.Admin().DescribeBrokerConfigs(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := configs.On("1", nil)
	if err != nil {
		t.Fatalf("broker 1's configs: %v", err)
	}
	var protocols string
	for _, cfg := range rc.Configs {
		if cfg.Key == "group.coordinator.rebalance.protocols" && cfg.Value != nil {
			protocols = *cfg.Value
		}
	}
	if !slices.Contains(strings.Split(protocols, ","), "streams") {
		t.Errorf("group.coordinator.rebalance.protocols = %q, want it to include streams", protocols)
	}
	t.Logf("streams.version %d, metadata.version %d, group.coordinator.rebalance.protocols %q",
		features["streams.version"], features["metadata.version"], protocols)
}

// Under the streams protocol the group coordinator sees the sources and
// the internal topics grow in one metadata image, so a live app survives
// the expansion even when a second instance joins at the commit and leaves
// within 30 s.
func TestExpandStreamsProtocol(t *testing.T) {
	o := runExpansion(t, "streams", scenario{protocol: streamstest.ProtocolStreams, secondJoins: true})
	assertSurvived(t, o, true)
	assertGroupType(t, o, "streams")
}

// The worst window: the rebalance for the second instance is already under
// way when the sources and internal topics grow.
func TestExpandStreamsProtocolRebalanceAtCommit(t *testing.T) {
	o := runExpansion(t, "streamswin", scenario{protocol: streamstest.ProtocolStreams, secondJoins: true, joinBeforeCommit: true})
	assertSurvived(t, o, true)
}

// Under the classic protocol the group leader sizes the internal topics
// from its cached metadata (metadata.max.age.ms, 5 minutes by default) but
// checks them against fresh admin data. A rebalance in between kills it,
// even though the sources and internal topics grew in one request. This
// pins the failure the quiesce hook exists for.
func TestExpandClassicProtocolKillsLeaderInStaleWindow(t *testing.T) {
	o := runExpansion(t, "classic", scenario{protocol: streamstest.ProtocolClassic, secondJoins: true})
	if !o.healthA.EverError {
		t.Fatalf("instance a (the classic group leader) survived a rebalance right after the expansion; "+
			"the stale-metadata window this test pins is gone: %+v", o.healthA.Transitions)
	}
	want := regexp.MustCompile(`Existing internal topic app-classic-\S+ has invalid partitions: expected: 4; actual: 8`)
	if !uncaughtMatches(o.healthA, want) {
		t.Errorf("instance a died, but not of %q; uncaught: %v", want, o.healthA.Uncaught)
	}
	assertPartitions(t, o)
	assertGroupType(t, o, "classic")
}

// A low metadata.max.age.ms narrows the classic leader's stale window to
// about that age, but does not close it: a rebalance already under way at
// the commit still kills the leader. heartbeat.interval.ms=100 makes the
// leader rejoin within 100 ms of the rebalance's start, so that its
// assignment lands soon after the commit. Whether its metadata refreshed
// in between is a race: the leader dies when its last refresh came before
// the commit, so the odds are about 1 - (assignment's delay / age). At
// 1 s, five of five runs died on a machine where the assignment came 0.1-
// 0.7 s after the commit, but all three attempts survived on one where it
// came 0.75-1 s after. At 3 s, still 100 times below the default, a 1 s
// delay leaves each attempt two chances in three: five attempts fail to
// see a death about once in 240 runs on the slowest machine seen, and the
// later attempts run only when the earlier ones saw none.
func TestExpandClassicProtocolLowMetadataAgeStillDies(t *testing.T) {
	sc := scenario{
		protocol: streamstest.ProtocolClassic, metadataMaxAge: 3 * time.Second,
		secondJoins: true, joinBeforeCommit: true,
		config: map[string]string{"heartbeat.interval.ms": "100"},
	}
	const attempts = 5
	for attempt := 1; attempt <= attempts; attempt++ {
		name := fmt.Sprintf("lowage%d", attempt)
		o := runExpansion(t, name, sc)
		if o.healthA.EverError {
			want := regexp.MustCompile(`Existing internal topic app-` + name + `-\S+ has invalid partitions: expected: 4; actual: 8`)
			if !uncaughtMatches(o.healthA, want) {
				t.Errorf("instance a died, but not of %q; uncaught: %v", want, o.healthA.Uncaught)
			}
			return
		}
		t.Logf("attempt %d: the leader survived; its metadata refreshed before it assigned", attempt)
	}
	t.Errorf("the classic leader with metadata.max.age.ms=3000 survived a rebalance at the commit %d times; "+
		"a low metadata age may close the window after all", attempts)
}

// The safe path for the classic protocol: the user's quiesce hook stops
// every instance, the expansion waits for the group to be Empty, grows the
// topics, and the hook starts the app again.
func TestExpandClassicProtocolWithQuiesceHook(t *testing.T) {
	o := runExpansion(t, "quiesce", scenario{protocol: streamstest.ProtocolClassic, secondJoins: true, quiesce: true})
	assertSurvived(t, o, true)
}

// A static partitioner must not trust the partition count Streams hands it:
// that is the producer's cached metadata, which lags an expansion under
// either protocol. Throwing on "home >= numPartitions" kills the app as soon
// as an old task routes a key to a new partition.
func TestStrictPartitionerDiesOnStaleProducerMetadata(t *testing.T) {
	o := runExpansion(t, "strict", scenario{protocol: streamstest.ProtocolStreams, partitioner: streamstest.PartitionerStrict})
	if !o.healthA.EverError {
		t.Fatalf("the strict partitioner survived new keys right after the expansion; its producer saw the new partitions at once: %+v", o.healthA.Transitions)
	}
	want := regexp.MustCompile(`has home partition [4-7] but topic app-strict-byproduct-repartition has only 4 partitions in this client's metadata`)
	if !uncaughtMatches(o.healthA, want) {
		t.Errorf("instance a died, but not of %q; uncaught: %v", want, o.healthA.Uncaught)
	}
}

func uncaughtMatches(h streamstest.Health, re *regexp.Regexp) bool {
	for _, u := range h.Uncaught {
		if re.MatchString(u.Trace) {
			return true
		}
	}
	return false
}

// assertSurvived checks everything the expansion promises a live app.
func assertSurvived(t *testing.T, o outcome, secondJoined bool) {
	t.Helper()
	for name, h := range o.health {
		if h.EverError {
			t.Errorf("instance %s entered ERROR or PENDING_ERROR: %v", name, h.Uncaught)
		}
	}
	if secondJoined && !ranOnce(o.health["b"]) {
		t.Errorf("instance b never reached RUNNING, so its join and leave tested nothing: %+v", o.health["b"].Transitions)
	}
	if o.stats.Failed > 0 {
		t.Errorf("%d of %d orders failed to produce: %v", o.stats.Failed, o.stats.Sent, o.stats.FirstErr)
	}
	if o.countErr != nil {
		t.Errorf("final counts differ from the orders produced: %v\n%s", o.countErr, strings.Join(o.countDiff, "\n"))
	}
	if len(o.observed.Misplaced) > 0 {
		t.Errorf("%d records outside their key's home partition, e.g. %v", len(o.observed.Misplaced), o.observed.Misplaced[:min(5, len(o.observed.Misplaced))])
	}
	if len(o.observed.Bad) > 0 {
		t.Errorf("%d unreadable records, e.g. %v", len(o.observed.Bad), o.observed.Bad[:min(5, len(o.observed.Bad))])
	}
	// No record is misplaced, so a record in partition 4..7 has a key with
	// home 4..7: a new key, on a new partition, through every step.
	for _, topic := range []string{o.topics.Counts, o.topics.Enriched, o.appID + "-counts-store-changelog"} {
		for p := fromPartitions; p < toPartitions; p++ {
			if o.observed.Records[topic][p] == 0 {
				t.Errorf("no record of a new key in %s partition %d", topic, p)
			}
		}
	}
	assertPartitions(t, o)
	if o.finalStableErr != nil {
		t.Errorf("the group was not stable on %d partitions after the expansion: %v", toPartitions, o.finalStableErr)
	}
	if o.firstStable == 0 {
		t.Errorf("the group was never seen stable on %d partitions after the commit", toPartitions)
	}
}

func ranOnce(h streamstest.Health) bool {
	for _, tr := range h.Transitions {
		if tr.To == "RUNNING" {
			return true
		}
	}
	return false
}

// assertPartitions checks that every topic of the app, internal ones
// included, has the new count, except the fixed ones, which keep the
// topology's count.
func assertPartitions(t *testing.T, o outcome) {
	t.Helper()
	topics := append(append(o.topics.Sources(), o.topics.Sinks()...), streamstest.GrowingTopics(o.appID)...)
	for _, topic := range topics {
		if got := o.partitions[topic]; got != toPartitions {
			t.Errorf("topic %s has %d partitions after the expansion, want %d", topic, got, toPartitions)
		}
	}
	for _, topic := range streamstest.FixedTopics(o.appID) {
		if got := o.partitions[topic]; got != streamstest.FixedPartitions {
			t.Errorf("fixed topic %s has %d partitions after the expansion, want the topology's %d", topic, got, streamstest.FixedPartitions)
		}
	}
}

// assertGroupType checks the group type ListGroups reports: how a caller
// can tell which protocol an existing app uses before it expands.
func assertGroupType(t *testing.T, o outcome, want string) {
	t.Helper()
	if o.groupType != want {
		t.Errorf("ListGroups reports group %s as type %q, want %q", o.appID, o.groupType, want)
	}
}

// The app's default partitioner hands a key's home to the producer instead
// of trusting the cached count. When the home partition really does not
// exist, the send still fails loudly (after max.block.ms, then
// task.timeout.ms) and the key lands nowhere else.
func TestProducerPartitionerRefusesMissingPartition(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	topics := streamstest.TopicsWithPrefix("missing-")
	own := append(topics.Sources(), topics.Sinks()...)
	created, err := c.Admin().CreateTopics(ctx, fromPartitions, 3, nil, own...)
	if err == nil {
		err = created.Error()
	}
	if err != nil {
		t.Fatalf("creating %v: %v", own, err)
	}
	a := streamstest.StartApp(t, streamstest.AppOptions{
		Bootstrap: c.BootstrapServers(), AppID: "app-missing", TopicPrefix: "missing-",
		Config: map[string]string{"max.block.ms": "3000", "task.timeout.ms": "3000"},
	})
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := a.WaitState(runCtx, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	w, err := streamstest.NewWorkload(ctx, streamstest.WorkloadOptions{Bootstrap: c.BootstrapServers(), Topics: topics, Homes: fromPartitions})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	obs, err := streamstest.NewObserver(c.BootstrapServers(), topics.Counts, topics.Enriched)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	// h6 is beyond the 4 partitions the topics really have.
	if err := w.ProduceOrder(ctx, "h1-c0", "h6-p0"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	errCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	err = a.WaitState(errCtx, "never")
	if !errors.Is(err, streamstest.ErrAppError) {
		t.Fatalf("an order for a product whose home partition does not exist did not stop the app within 90s: %v", err)
	}
	t.Logf("the app entered ERROR %v after the order", time.Since(began).Round(100*time.Millisecond))
	h, err := a.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`TimeoutException: Partition 6 of topic app-missing-byproduct-repartition with partition count 4 is not present in metadata`)
	if !uncaughtMatches(h, want) {
		t.Errorf("the app died, but not of a timeout waiting for partition 6: %v", h.Uncaught)
	}
	// Give anything that was written a moment to be read.
	time.Sleep(2 * time.Second)
	seen := obs.Snapshot()
	if n, ok := seen.Counts["h6-p0"]; ok {
		t.Errorf("product h6-p0 was counted (%d) although its home partition does not exist", n)
	}
	if len(seen.Misplaced) > 0 {
		t.Errorf("records outside their home partition: %v", seen.Misplaced)
	}
}
