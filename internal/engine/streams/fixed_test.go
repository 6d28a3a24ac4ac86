package streams_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// shardApp is the fixture's app with its fixed-count branch: orders and
// customers (subtopology 0) write "byproduct" (derived) and "by-shard"
// (Repartitioned.withNumberOfPartitions(3)); subtopology 1 counts
// byproduct, subtopology 2 counts by-shard into per-shard.
func shardApp(n int32, protocol streams.Protocol) streams.App {
	a := streams.App{
		ID: "shop", GroupExists: true, Protocol: protocol, Members: 1,
		Topics: []streams.Topic{
			{Name: "orders", Role: streams.RoleSource, Partitions: n},
			{Name: "customers", Role: streams.RoleSource, Partitions: n},
			{Name: "enriched", Role: streams.RoleSink, Partitions: n},
			{Name: "counts", Role: streams.RoleSink, Partitions: n},
			{Name: "shop-byproduct-repartition", Role: streams.RoleRepartition, Partitions: n},
			{Name: "shop-by-shard-repartition", Role: streams.RoleRepartition, Partitions: 3},
			{Name: "shop-counts-store-changelog", Role: streams.RoleChangelog, Partitions: n},
			{Name: "shop-customers-store-changelog", Role: streams.RoleChangelog, Partitions: n},
			{Name: "shop-per-shard-changelog", Role: streams.RoleChangelog, Partitions: 3},
		},
	}
	if protocol == streams.ProtocolStreams {
		// As StreamsGroupDescribe reports it on Kafka 4.4: every
		// repartition source at the count the coordinator requires.
		a.Subtopologies = []streams.Subtopology{
			{ID: "0", Sources: []string{"customers", "orders"}, SourcePartitions: map[string]int32{"customers": n, "orders": n},
				RepartitionSinks: []string{"shop-by-shard-repartition", "shop-byproduct-repartition"},
				Changelogs:       []string{"shop-customers-store-changelog"}},
			{ID: "1", Sources: []string{"shop-byproduct-repartition"}, SourcePartitions: map[string]int32{"shop-byproduct-repartition": n},
				Changelogs: []string{"shop-counts-store-changelog"}},
			{ID: "2", Sources: []string{"shop-by-shard-repartition"}, SourcePartitions: map[string]int32{"shop-by-shard-repartition": 3},
				Changelogs: []string{"shop-per-shard-changelog"}},
		}
		a.Consumed = []string{"customers", "orders"}
	}
	return a
}

var names = streams.FixedTopicNames

var shardTopics = []string{"shop-by-shard-repartition", "shop-per-shard-changelog"}

func TestFixedInternalTopicsFromTheTopology(t *testing.T) {
	a := shardApp(4, streams.ProtocolStreams)
	before := slices.Clone(a.Topics)
	got := streams.FixedInternalTopics(a, nil, 0, 4)
	if !slices.Equal(names(got), shardTopics) {
		t.Fatalf("fixed %v, want %v", got, shardTopics)
	}
	for _, f := range got {
		if f.By != streams.FixedByTopology || f.Partitions != 3 || f.Why == "" {
			t.Errorf("%+v: want fixed by the topology at 3, with a reason", f)
		}
	}
	if !slices.Equal(a.Topics, before) {
		t.Errorf("FixedInternalTopics changed its input")
	}
	// After an unfinished expansion the topology still tells: the derived
	// topics follow the sources at 8 whatever their own counts.
	grown := shardApp(8, streams.ProtocolStreams)
	for i := range grown.Topics {
		if grown.Topics[i].Name == "shop-counts-store-changelog" {
			grown.Topics[i].Partitions = 4
		}
	}
	if got := names(streams.FixedInternalTopics(grown, nil, 4, 8)); !slices.Equal(got, shardTopics) {
		t.Errorf("after a partial expansion: fixed %v, want %v", got, shardTopics)
	}
}

// Between the two counts of an unfinished expansion the topology does not
// fix what the expansion grew (make soak, seed 27): a growth 6 -> 7 cut by
// its timeout after the sources and internal topics grew, applied again,
// read the app while its tasks still ran on 6 source partitions and the
// coordinator reported the byproduct repartition topic at 7. The derived
// count, 6, differed, so the plan took the topic and its downstream
// changelog as fixed, and the plan after the successful apply, with the
// app settled at 7, dropped them again. The by-shard branch, fixed at 3,
// stays fixed throughout.
func TestFixedInternalTopicsBetweenTheCountsOfAnExpansion(t *testing.T) {
	a := shardApp(7, streams.ProtocolStreams)
	a.Subtopologies[0].SourcePartitions = map[string]int32{"customers": 6, "orders": 6}
	if got := names(streams.FixedInternalTopics(a, nil, 6, 7)); !slices.Equal(got, shardTopics) {
		t.Errorf("between 6 and 7: fixed %v, want %v", got, shardTopics)
	}
	settled := shardApp(7, streams.ProtocolStreams)
	if got := names(streams.FixedInternalTopics(settled, nil, 7, 7)); !slices.Equal(got, shardTopics) {
		t.Errorf("settled at 7: fixed %v, want %v", got, shardTopics)
	}
	// With no expansion recorded, a count the topology reports against
	// its writers' is still the topology's own.
	if got := names(streams.FixedInternalTopics(a, nil, 0, 7)); !slices.Contains(got, "shop-byproduct-repartition") {
		t.Errorf("no expansion recorded: fixed %v, want shop-byproduct-repartition among them", got)
	}
}

// A subtopology that reads only what a fixed subtopology writes is fixed
// too, whatever count it happens to have.
func TestFixedInternalTopicsFollowTheFixedBranchDownstream(t *testing.T) {
	a := shardApp(4, streams.ProtocolStreams)
	a.Subtopologies[2].RepartitionSinks = []string{"shop-shard-top-repartition"}
	a.Subtopologies = append(a.Subtopologies, streams.Subtopology{
		ID: "3", Sources: []string{"shop-shard-top-repartition"}, SourcePartitions: map[string]int32{"shop-shard-top-repartition": 3},
		Changelogs: []string{"shop-top-changelog"},
	})
	a.Topics = append(a.Topics,
		streams.Topic{Name: "shop-shard-top-repartition", Role: streams.RoleRepartition, Partitions: 3},
		streams.Topic{Name: "shop-top-changelog", Role: streams.RoleChangelog, Partitions: 3})
	want := []string{"shop-by-shard-repartition", "shop-per-shard-changelog", "shop-shard-top-repartition", "shop-top-changelog"}
	if got := names(streams.FixedInternalTopics(a, nil, 0, 4)); !slices.Equal(got, want) {
		t.Errorf("fixed %v, want %v", got, want)
	}
}

func TestFixedInternalTopicsByCountUnderTheClassicProtocol(t *testing.T) {
	a := shardApp(4, streams.ProtocolClassic)
	got := streams.FixedInternalTopics(a, nil, 0, 4)
	if !slices.Equal(names(got), shardTopics) {
		t.Fatalf("fixed %v, want %v", got, shardTopics)
	}
	for _, f := range got {
		if f.By != streams.FixedByCount || !strings.Contains(f.Why, "differ from the sources' 4") || !strings.Contains(f.Why, "classic") {
			t.Errorf("%+v: want fixed by its count, saying why", f)
		}
	}

	// An expansion kafkascale recorded as unfinished (settled 4, heading
	// for 8) explains a topic left at 4 while the sources reached 8: it is
	// not fixed, and the plan grows it. The fixed branch stays fixed.
	partial := shardApp(8, streams.ProtocolClassic)
	partial.Members = 0
	for i := range partial.Topics {
		if partial.Topics[i].Name == "shop-counts-store-changelog" {
			partial.Topics[i].Partitions = 4
		}
	}
	if got := names(streams.FixedInternalTopics(partial, nil, 4, 8)); !slices.Equal(got, shardTopics) {
		t.Errorf("unfinished expansion: fixed %v, want %v", got, shardTopics)
	}
	x, err := streams.PlanExpansion(streams.ExpansionRequest{App: partial, Target: 8, StaticPartitioning: true, Settled: 4}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Steps) != 1 || x.Steps[0].Kind != streams.StepGrowTogether || !slices.Equal(x.Steps[0].Topics, []string{"shop-counts-store-changelog"}) {
		t.Errorf("finishing the expansion: steps %v, want only shop-counts-store-changelog grown", x.Lines())
	}
	// Without that record the same count is a fixed one.
	if got := names(streams.FixedInternalTopics(partial, nil, 0, 8)); !slices.Contains(got, "shop-counts-store-changelog") {
		t.Errorf("no record: fixed %v, want shop-counts-store-changelog among them", got)
	}
}

// Declaring an app at its current count changes nothing, under either
// protocol, and says what it leaves alone.
func TestPlanStreamsExpansionAdoptsAnAppWithAFixedBranchUnchanged(t *testing.T) {
	for _, p := range []streams.Protocol{streams.ProtocolStreams, streams.ProtocolClassic} {
		x, err := streams.PlanExpansion(streams.ExpansionRequest{App: shardApp(4, p), Target: 4}, true)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(x.Steps) != 0 {
			t.Errorf("%s: adoption plans %v, want nothing", p, x.Lines())
		}
		if !slices.Equal(x.FixedNames(), shardTopics) {
			t.Errorf("%s: fixed %v, want %v", p, x.FixedNames(), shardTopics)
		}
	}
}

func TestPlanStreamsExpansionLeavesTheFixedBranchAlone(t *testing.T) {
	x, err := streams.PlanExpansion(streams.ExpansionRequest{App: shardApp(4, streams.ProtocolStreams), Target: 8, StaticPartitioning: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	var together streams.Step
	for _, s := range x.Steps {
		if s.Kind == streams.StepGrowTogether {
			together = s
		}
	}
	want := []string{"customers", "orders", "shop-byproduct-repartition", "shop-counts-store-changelog", "shop-customers-store-changelog"}
	if !slices.Equal(together.Topics, want) {
		t.Fatalf("grows %v, want %v", together.Topics, want)
	}
	if line := together.String(); !strings.Contains(line, "fixed internal topics keep their counts: shop-by-shard-repartition at 3, shop-per-shard-changelog at 3") {
		t.Errorf("the plan line %q does not name the fixed topics", line)
	}
	// What the wait for stability must see: the fixed subtopology keeps its
	// 3 tasks, the others reach 8.
	wantConsumed := map[string]int32{"customers": 8, "orders": 8, "shop-byproduct-repartition": 8, "shop-by-shard-repartition": 3}
	if !maps.Equal(x.Consumed, wantConsumed) {
		t.Errorf("consumed after the expansion %v, want %v", x.Consumed, wantConsumed)
	}
}

func TestPlanStreamsExpansionTakesTheUsersFixedTopicsToo(t *testing.T) {
	a := shardApp(4, streams.ProtocolStreams)
	x, err := streams.PlanExpansion(streams.ExpansionRequest{App: a, Target: 4, Fixed: []string{"shop-counts-store-changelog"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"shop-by-shard-repartition", "shop-counts-store-changelog", "shop-per-shard-changelog"}
	if !slices.Equal(x.FixedNames(), want) {
		t.Errorf("fixed %v, want %v", x.FixedNames(), want)
	}
	_, err = streams.PlanExpansion(streams.ExpansionRequest{App: a, Target: 4, Fixed: []string{"orders"}}, false)
	var p *streams.Problem
	if !errors.As(err, &p) || p.Kind != streams.ProblemNotInternal || p.Field != streams.FieldFixed || p.Topic != "orders" || p.Subject != "shop" ||
		!slices.Equal(p.Topics, a.InternalTopics()) {
		t.Errorf("a source listed as fixed: err %v, want a problem on the fixed topics naming orders and shop's internal topics", err)
	}
}
