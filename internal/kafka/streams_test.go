package kafka

import (
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
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
	want := []engine.StreamsSubtopology{
		{ID: "0", Sources: []string{"customers", "orders"}, SourcePartitions: map[string]int32{"customers": 4, "orders": 4},
			RepartitionSinks: []string{"app-by-shard-repartition", "app-byproduct-repartition"}, Changelogs: []string{"app-customers-store-changelog"}},
		{ID: "1", Sources: []string{"app-byproduct-repartition"}, SourcePartitions: map[string]int32{"app-byproduct-repartition": 4},
			Changelogs: []string{"app-counts-store-changelog"}},
		{ID: "2", Sources: []string{"app-by-shard-repartition"}, SourcePartitions: map[string]int32{"app-by-shard-repartition": 3},
			Changelogs: []string{"app-per-shard-changelog"}},
	}
	if !slices.EqualFunc(subs, want, func(a, b engine.StreamsSubtopology) bool {
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
