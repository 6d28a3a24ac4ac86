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

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/streamstest"
)

// What the group coordinator reports of the fixture's topology under the
// streams protocol, and what kafkascale makes of it. The coordinator
// reports every repartition topic at the count it requires once it
// resolved the topology against the cluster: the derived "byproduct" at
// the sources' 4, the fixed "by-shard" at 3. The report alone does not say
// which count the app fixed; the derivation does (streams.FixedInternalTopics),
// and it must find exactly the fixed branch.
func TestStreamsGroupDescribeReportsResolvedCounts(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	topics := streamstest.TopicsWithPrefix("topo-")
	appID := "app-topo"
	own := append(topics.Sources(), topics.Sinks()...)
	created, err := c.Admin().CreateTopics(ctx, fromPartitions, 3, nil, own...)
	if err == nil {
		err = created.Error()
	}
	if err != nil {
		t.Fatalf("creating %v: %v", own, err)
	}
	a := streamstest.StartApp(t, streamstest.AppOptions{Bootstrap: c.BootstrapServers(), AppID: appID, Protocol: streamstest.ProtocolStreams, TopicPrefix: "topo-"})
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := a.WaitState(runCtx, "RUNNING"); err != nil {
		t.Fatalf("the app never ran: %v\n%s", err, a.LogTail(40))
	}
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	g, err := cl.DescribeStreamsGroup(ctx, appID)
	if err != nil {
		t.Fatal(err)
	}
	if g.Topology == nil {
		t.Fatal("StreamsGroupDescribe returned no topology for a running app")
	}
	repartition := map[string]int32{}
	var lines []string
	for _, st := range g.Topology.Subtopologies {
		var rs, cls []string
		for _, r := range st.RepartitionSources {
			repartition[r.Topic] = r.Partitions
			rs = append(rs, fmt.Sprintf("%s(partitions %d)", r.Topic, r.Partitions))
		}
		for _, ch := range st.Changelogs {
			cls = append(cls, fmt.Sprintf("%s(partitions %d)", ch.Topic, ch.Partitions))
		}
		lines = append(lines, fmt.Sprintf("subtopology %s: sources %v, repartition sources [%s], repartition sinks %v, changelogs [%s]",
			st.ID, st.Sources, strings.Join(rs, " "), st.RepartitionSinks, strings.Join(cls, " ")))
	}
	t.Logf("topology epoch %d:\n%s", g.Topology.Epoch, strings.Join(lines, "\n"))
	fixed, derived, shardLog := appID+"-by-shard-repartition", appID+"-byproduct-repartition", appID+"-per-shard-changelog"
	if got := repartition[fixed]; got != 3 {
		t.Errorf("repartition source %s reported with %d partitions, want 3: the topology fixes it", fixed, got)
	}
	if got := repartition[derived]; got != fromPartitions {
		t.Errorf("repartition source %s reported with %d partitions, want the sources' %d", derived, got, fromPartitions)
	}
	counts := partitionCounts(t, c.Admin(), fixed, shardLog, derived)
	if counts[fixed] != 3 || counts[shardLog] != 3 || counts[derived] != fromPartitions {
		t.Errorf("internal topic counts %v, want the fixed branch at 3 and %s at %d", counts, derived, fromPartitions)
	}

	app, _, err := cl.DescribeStreamsApp(ctx, appID, kafka.StreamsAppTopics{Sources: topics.Sources(), Sinks: topics.Sinks()})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range streams.FixedInternalTopics(app, nil, 0, fromPartitions) {
		found = append(found, f.Name)
		if f.By != streams.FixedByTopology || f.Partitions != 3 {
			t.Errorf("%s found fixed %s at %d partitions (%s), want by the topology at 3", f.Name, f.By, f.Partitions, f.Why)
		}
		t.Logf("fixed: %s (%s)", f.Name, f.Why)
	}
	if want := []string{fixed, shardLog}; !slices.Equal(found, want) {
		t.Errorf("fixed internal topics %v, want %v", found, want)
	}
}

// Why kafkascale must never grow a fixed topic: growing the fixture's
// fixed branch to the sources' count, as an adoption that did not know it
// would, stops a live app on the streams protocol (issue 23).
func TestGrowingAFixedTopicStopsTheApp(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	topics := streamstest.TopicsWithPrefix("fixgrow-")
	appID := "app-fixgrow"
	own := append(topics.Sources(), topics.Sinks()...)
	created, err := c.Admin().CreateTopics(ctx, fromPartitions, 3, nil, own...)
	if err == nil {
		err = created.Error()
	}
	if err != nil {
		t.Fatalf("creating %v: %v", own, err)
	}
	a := streamstest.StartApp(t, streamstest.AppOptions{Bootstrap: c.BootstrapServers(), AppID: appID, Protocol: streamstest.ProtocolStreams, TopicPrefix: "fixgrow-"})
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := a.WaitState(runCtx, "RUNNING"); err != nil {
		t.Fatalf("the app never ran: %v\n%s", err, a.LogTail(40))
	}
	if err := streamstest.CreatePartitions(ctx, c.Client(), streamstest.FixedTopics(appID), fromPartitions); err != nil {
		t.Fatal(err)
	}
	grown := time.Now()
	errCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := a.WaitState(errCtx, "never"); !errors.Is(err, streamstest.ErrAppError) {
		h, _ := a.Health(ctx)
		t.Fatalf("the app survived its fixed topics growing from %d to %d for 2 minutes (state %s): %v", streamstest.FixedPartitions, fromPartitions, h.State, err)
	}
	h, err := a.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`Existing topic ` + appID + `-by-shard-repartition has different number of partitions: expected 3, found 4`)
	if !uncaughtMatches(h, want) {
		t.Errorf("the app stopped, but not of %q; uncaught: %v", want, h.Uncaught)
	}
	var first string
	if len(h.Uncaught) > 0 {
		first, _, _ = strings.Cut(h.Uncaught[0].Trace, "\n")
	}
	var states []string
	for _, tr := range h.Transitions {
		states = append(states, tr.To)
	}
	t.Logf("the app left RUNNING %v after its fixed topics grew; states %v; first uncaught: %s", time.Since(grown).Round(100*time.Millisecond), states, first)
}
