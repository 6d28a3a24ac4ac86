package kafka

import (
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// The fixture's topology as StreamsGroupDescribe reports it on Kafka 4.4
// (see streamstest.TestStreamsGroupDescribeReportsResolvedCounts): every
// repartition source at the count the coordinator requires.
func fixtureStreamsGroup() kmsg.StreamsGroupDescribeResponseGroup {
	info := func(topic string, n int32) kmsg.TopicInfo {
		ti := kmsg.NewTopicInfo()
		ti.Topic, ti.NumPartitions = topic, n
		return ti
	}
	g := kmsg.NewStreamsGroupDescribeResponseGroup()
	topo := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
	topo.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"customers", "orders"},
			RepartitionSinkTopics: []string{"app-by-shard-repartition", "app-byproduct-repartition"},
			StateChangelogTopics:  []kmsg.TopicInfo{info("app-customers-store-changelog", 4)}},
		{SubtopologyID: "1", RepartitionSourceTopics: []kmsg.TopicInfo{info("app-byproduct-repartition", 4)},
			StateChangelogTopics: []kmsg.TopicInfo{info("app-counts-store-changelog", 4)}},
		{SubtopologyID: "2", RepartitionSourceTopics: []kmsg.TopicInfo{info("app-by-shard-repartition", 3)},
			StateChangelogTopics: []kmsg.TopicInfo{info("app-per-shard-changelog", 3)}},
	}
	g.Topology = &topo
	return g
}

func TestStreamsTopologyKeepsWhatTheEngineDerivesFixedTopicsFrom(t *testing.T) {
	subs, consumed := streamsTopology(streamsGroupFrom(fixtureStreamsGroup()), map[string]int32{"orders": 4, "customers": 4})
	want := []streams.Subtopology{
		{ID: "0", Sources: []string{"customers", "orders"}, SourcePartitions: map[string]int32{"customers": 4, "orders": 4},
			RepartitionSinks: []string{"app-by-shard-repartition", "app-byproduct-repartition"}, Changelogs: []string{"app-customers-store-changelog"}},
		{ID: "1", Sources: []string{"app-byproduct-repartition"}, SourcePartitions: map[string]int32{"app-byproduct-repartition": 4},
			Changelogs: []string{"app-counts-store-changelog"}},
		{ID: "2", Sources: []string{"app-by-shard-repartition"}, SourcePartitions: map[string]int32{"app-by-shard-repartition": 3},
			Changelogs: []string{"app-per-shard-changelog"}},
	}
	if !slices.EqualFunc(subs, want, func(a, b streams.Subtopology) bool {
		return a.ID == b.ID && slices.Equal(a.Sources, b.Sources) && slices.Equal(a.Changelogs, b.Changelogs) &&
			slices.Equal(a.RepartitionSinks, b.RepartitionSinks) && maps.Equal(a.SourcePartitions, b.SourcePartitions)
	}) {
		t.Errorf("subtopologies\n%+v\nwant\n%+v", subs, want)
	}
	if w := []string{"app-by-shard-repartition", "app-byproduct-repartition", "customers", "orders"}; !slices.Equal(consumed, w) {
		t.Errorf("consumed %v, want %v", consumed, w)
	}
}

// A member is at its target only when its active, standby and warm-up
// tasks all match the target's; its active tasks are kept per subtopology.
func TestStreamsGroupFromMembers(t *testing.T) {
	tasks := func(sub string, parts ...int32) []kmsg.TaskIDs {
		ti := kmsg.NewTaskIDs()
		ti.SubtopologyID, ti.Partitions = sub, parts
		return []kmsg.TaskIDs{ti}
	}
	g := fixtureStreamsGroup()
	settled := kmsg.NewStreamsGroupDescribeResponseGroupMember()
	settled.MemberID = "a"
	settled.Assignment.ActiveTasks, settled.TargetAssignment.ActiveTasks = tasks("0", 0, 1), tasks("0", 0, 1)
	moving := kmsg.NewStreamsGroupDescribeResponseGroupMember()
	moving.MemberID = "b"
	moving.Assignment.ActiveTasks, moving.TargetAssignment.ActiveTasks = tasks("0", 2, 3), tasks("0", 2, 3)
	moving.TargetAssignment.StandbyTasks = tasks("1", 0)
	g.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{settled, moving}

	got := streamsGroupFrom(g)
	if len(got.Members) != 2 || !got.Members[0].AtTarget || got.Members[1].AtTarget {
		t.Fatalf("members %+v; want a at its target, b not (its target adds a standby task)", got.Members)
	}
	if a := got.Members[0].Active["0"]; !slices.Equal(a, []int32{0, 1}) {
		t.Fatalf("member a's active tasks of subtopology 0: %v; want [0 1]", a)
	}
	if got.Topology == nil || len(got.Topology.Subtopologies) != 3 || got.Topology.Subtopologies[2].RepartitionSources[0] != (TopicCount{Topic: "app-by-shard-repartition", Partitions: 3}) {
		t.Fatalf("topology %+v; want subtopology 2 reading app-by-shard-repartition at 3", got.Topology)
	}
}

// stoppedAppGroups is a cluster where "fraud", a classic Streams app, is
// stopped (its group empty, known by its committed offsets and its
// internal topics), "billing" is declared, and "audit" is a plain group.
func stoppedAppGroups() clusterGroups {
	return clusterGroups{
		listed: kadm.ListedGroups{
			"fraud": {Group: "fraud", GroupType: "classic", ProtocolType: "consumer", State: "Empty"},
			"audit": {Group: "audit", GroupType: "classic", ProtocolType: "consumer", State: "Empty"},
		},
		counts: map[string]int32{"orders": 4, "payments": 4, "alerts": 4, "fraud-score-store-changelog": 4, "fraud-bycard-repartition": 4},
		classic: kadm.DescribedGroups{
			"fraud": {Group: "fraud", State: "Empty", ProtocolType: "consumer"},
			"audit": {Group: "audit", State: "Empty", ProtocolType: "consumer"},
		},
		streams:   map[string]StreamsGroup{},
		committed: map[string][]string{"fraud": {"fraud-bycard-repartition", "orders", "payments"}, "audit": {"orders"}},
	}
}

// A classic app with no member is still a Streams app: its committed
// offsets say what it reads, its internal topics are found by name, and
// an expansion of another app sees it among the others.
func TestStoppedClassicAppIsSeenFromItsOffsetsAndInternalTopics(t *testing.T) {
	c := stoppedAppGroups().consumers()
	if len(c.Apps) != 1 || c.Apps[0].ID != "fraud" {
		t.Fatalf("apps %+v, want fraud alone", c.Apps)
	}
	fraud := c.Apps[0]
	if fraud.Members != 0 || fraud.Protocol != streams.ProtocolClassic {
		t.Errorf("fraud: %d members, protocol %q; want a stopped classic app", fraud.Members, fraud.Protocol)
	}
	if got := fraud.TopicsWith(streams.RoleSource); !slices.Equal(got, []string{"orders", "payments"}) {
		t.Errorf("fraud's sources %v, want orders, payments", got)
	}
	if got := fraud.InternalTopics(); !slices.Equal(got, []string{"fraud-bycard-repartition", "fraud-score-store-changelog"}) {
		t.Errorf("fraud's internal topics %v", got)
	}
	if len(c.Groups) != 1 || c.Groups[0].ID != "audit" || !slices.Equal(c.Groups[0].Topics, []string{"orders"}) {
		t.Errorf("plain groups %+v, want audit reading orders", c.Groups)
	}
}

// An app declared for an expansion sees the stopped app that shares its
// source among the others, and the plain group among the groups.
func TestStreamsAppsSeeAStoppedAppSharingASource(t *testing.T) {
	r := stoppedAppGroups().streamsApps([]DeclaredStreamsApp{{ID: "billing", Topics: StreamsAppTopics{Sources: []string{"orders"}, Sinks: []string{"alerts"}}}})
	if len(r.Declared) != 1 || r.Declared[0].GroupExists || r.Declared[0].Partitions() != 4 {
		t.Fatalf("declared %+v, want billing without a group at 4", r.Declared)
	}
	if len(r.Others) != 1 || r.Others[0].ID != "fraud" || !slices.Contains(r.Others[0].TopicsWith(streams.RoleSource), "orders") {
		t.Fatalf("others %+v, want the stopped fraud reading orders", r.Others)
	}
	if len(r.Groups) != 1 || r.Groups[0].ID != "audit" {
		t.Fatalf("groups %+v, want audit", r.Groups)
	}
	// Declared, the stopped app's own view has its committed sources as
	// what it consumes, its internal topics left out.
	r = stoppedAppGroups().streamsApps([]DeclaredStreamsApp{{ID: "fraud", Topics: StreamsAppTopics{Sources: []string{"orders"}}}})
	f := r.Declared[0]
	if !f.GroupExists || f.Members != 0 || !slices.Equal(f.Consumed, []string{"orders", "payments"}) {
		t.Fatalf("declared fraud %+v, want a stopped group consuming orders, payments", f)
	}
	if len(r.Others) != 0 {
		t.Fatalf("others %+v, want none", r.Others)
	}
}

// A classic group whose protocol type is empty (offsets committed, no
// member ever joined since) is not described, and is still a stopped app
// when it has committed offsets and internal topics.
func TestStoppedAppWithoutProtocolType(t *testing.T) {
	g := stoppedAppGroups()
	g.listed["fraud"] = kadm.ListedGroup{Group: "fraud", GroupType: "classic", State: "Empty"}
	delete(g.classic, "fraud")
	c := g.consumers()
	if len(c.Apps) != 1 || c.Apps[0].ID != "fraud" || c.Apps[0].Protocol != streams.ProtocolClassic {
		t.Fatalf("apps %+v, want the stopped classic fraud", c.Apps)
	}
}
