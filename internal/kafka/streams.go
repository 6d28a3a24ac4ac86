package kafka

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// StreamsAppTopics is what the user declares of a Streams app, each list
// sorted. Which internal topics are fixed is the engine's decision
// (engine.FixedInternalTopics), not the description's.
type StreamsAppTopics struct {
	Sources []string `json:"sources,omitempty"`
	Sinks   []string `json:"sinks,omitempty"`
}

// Equal reports whether both declare the same topics.
func (t StreamsAppTopics) Equal(o StreamsAppTopics) bool {
	return slices.Equal(t.Sources, o.Sources) && slices.Equal(t.Sinks, o.Sinks)
}

// DescribeStreamsApp reads a Streams app as the engine plans from it: its
// declared topics with their counts, its internal topics (found by
// Streams' naming rules among the cluster's topics), and its group
// (protocol, members, what the members consume, and for a streams-protocol
// group its topology). It also returns the other Streams apps on the
// cluster with the topics they consume, for the ordering across apps.
//
// It costs one ListGroups, one Metadata, one DescribeGroups for every
// classic group and one StreamsGroupDescribe per streams group's
// coordinator, whatever the number of topics.
func (c *Client) DescribeStreamsApp(ctx context.Context, appID string, declared StreamsAppTopics) (engine.StreamsApp, []engine.StreamsApp, error) {
	app := engine.StreamsApp{ID: appID}
	g, err := c.readGroups(ctx, "describing Streams application "+appID, false)
	if err != nil {
		return app, nil, err
	}
	listed, counts, classic, streams := g.listed, g.counts, g.classic, g.streams

	ids := g.ids()
	for _, s := range declared.Sources {
		app.Topics = append(app.Topics, engine.StreamsTopic{Name: s, Role: engine.RoleSource, Partitions: counts[s]})
	}
	for _, s := range declared.Sinks {
		app.Topics = append(app.Topics, engine.StreamsTopic{Name: s, Role: engine.RoleSink, Partitions: counts[s]})
	}
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		if role, ok := engine.InternalTopicRole(appID, name, ids); ok {
			app.Topics = append(app.Topics, engine.StreamsTopic{Name: name, Role: role, Partitions: counts[name]})
		}
	}

	var others []engine.StreamsApp
	for _, id := range ids {
		lg := listed[id]
		a := engine.StreamsApp{ID: id, GroupExists: true}
		isStreams := false
		if g, ok := streams[id]; ok {
			isStreams = true
			a.Protocol = engine.ProtocolStreams
			a.Members = len(g.Members)
			a.Subtopologies, a.Consumed = streamsTopology(g, counts)
		} else if g, ok := classic[id]; ok && g.Err == nil {
			a.Protocol = engine.ProtocolClassic
			a.Members = len(g.Members)
			a.Consumed = classicSubscriptions(g)
			isStreams = g.Protocol == "stream"
		} else if id == appID {
			a.Protocol = engine.ProtocolClassic
			if lg.GroupType == "streams" {
				a.Protocol = engine.ProtocolStreams
			}
		}
		if id == appID {
			app.GroupExists, app.Protocol, app.Members, app.Consumed, app.Subtopologies = true, a.Protocol, a.Members, a.Consumed, a.Subtopologies
			continue
		}
		if !isStreams {
			continue
		}
		for _, t := range a.Consumed {
			if _, internal := engine.InternalTopicRole(id, t, ids); !internal {
				a.Topics = append(a.Topics, engine.StreamsTopic{Name: t, Role: engine.RoleSource, Partitions: counts[t]})
			}
		}
		others = append(others, a)
	}
	// The app's group consumes its internal topics too; only the others
	// must be declared.
	var consumed []string
	for _, t := range app.Consumed {
		if _, internal := engine.InternalTopicRole(appID, t, ids); !internal {
			consumed = append(consumed, t)
		}
	}
	app.Consumed = consumed
	return app, others, nil
}

// classicSubscriptions is the union of the topics a classic group's
// members subscribed to (Streams subscribes its sources and repartition
// topics).
func classicSubscriptions(g kadm.DescribedGroup) []string {
	set := map[string]bool{}
	for _, m := range g.Members {
		if meta, ok := m.Join.AsConsumer(); ok {
			for _, t := range meta.Topics {
				set[t] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// streamsTopology turns a streams group's topology into subtopologies and
// the topics its tasks read.
//
// A repartition source's NumPartitions is the count the coordinator
// requires once it resolved the topology against the cluster, not what the
// app declared: on Kafka 4.4 the fixture's derived "byproduct" reads 4 with
// its sources at 4, and its "by-shard" (withNumberOfPartitions(3)) reads 3
// (pinned by streamstest.TestStreamsGroupDescribeReportsResolvedCounts).
// counts gives the other sources' counts (nil: unknown).
func streamsTopology(g StreamsGroup, counts map[string]int32) ([]engine.StreamsSubtopology, []string) {
	if g.Topology == nil {
		return nil, nil
	}
	set := map[string]bool{}
	var subs []engine.StreamsSubtopology
	for _, st := range g.Topology.Subtopologies {
		s := engine.StreamsSubtopology{
			ID: st.ID, Sources: slices.Clone(st.Sources), RepartitionSinks: slices.Clone(st.RepartitionSinks),
			SourcePartitions: map[string]int32{},
		}
		for _, t := range st.Sources {
			s.SourcePartitions[t] = counts[t]
		}
		for _, r := range st.RepartitionSources {
			s.Sources = append(s.Sources, r.Topic)
			s.SourcePartitions[r.Topic] = r.Partitions
		}
		for _, cl := range st.Changelogs {
			s.Changelogs = append(s.Changelogs, cl.Topic)
		}
		for _, t := range s.Sources {
			set[t] = true
		}
		subs = append(subs, s)
	}
	return subs, slices.Sorted(maps.Keys(set))
}
