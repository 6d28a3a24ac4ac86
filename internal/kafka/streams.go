package kafka

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// StreamsAppTopics is what the user declares of a Streams app, each list
// sorted. Which internal topics are fixed is the engine's decision
// (streams.FixedInternalTopics), not the description's.
type StreamsAppTopics struct {
	Sources []string `json:"sources,omitempty"`
	Sinks   []string `json:"sinks,omitempty"`
}

// Equal reports whether both declare the same topics.
func (t StreamsAppTopics) Equal(o StreamsAppTopics) bool {
	return slices.Equal(t.Sources, o.Sources) && slices.Equal(t.Sinks, o.Sinks)
}

// DeclaredStreamsApp is one app a configuration declares: its id and its
// topics.
type DeclaredStreamsApp struct {
	ID     string
	Topics StreamsAppTopics
}

// StreamsApps is one read of the cluster for a Streams expansion.
type StreamsApps struct {
	// Declared are the declared apps, in their order: their declared
	// topics with their counts, their internal topics (found by Streams'
	// naming rules among the cluster's topics), and their group (protocol,
	// members, the topics it consumes other than its internal ones, and
	// for a streams-protocol group its topology).
	Declared []streams.App
	// Others are the other Kafka Streams apps on the cluster, live or
	// stopped (a classic group with no member is known by its committed
	// offsets and its internal topics), with the topics they consume as
	// sources and their internal topics.
	Others []streams.App
	// Groups are the plain consumer groups.
	Groups []streams.ConsumerGroup
}

// DescribeStreamsApp reads one declared app and the other Streams apps:
// DescribeStreamsApps for one app.
func (c *Client) DescribeStreamsApp(ctx context.Context, appID string, declared StreamsAppTopics) (streams.App, []streams.App, error) {
	r, err := c.DescribeStreamsApps(ctx, []DeclaredStreamsApp{{ID: appID, Topics: declared}})
	if err != nil {
		return streams.App{ID: appID}, nil, err
	}
	return r.Declared[0], r.Others, nil
}

// DescribeStreamsApps reads the declared Streams apps as the engine plans
// from them, every other Streams app on the cluster and the plain consumer
// groups, in one read of the cluster's groups: one ListGroups, one
// Metadata, one DescribeGroups for every classic group, one
// StreamsGroupDescribe per streams group and one OffsetFetch per
// coordinator for the groups with no member, whatever the number of
// topics.
func (c *Client) DescribeStreamsApps(ctx context.Context, declared []DeclaredStreamsApp) (StreamsApps, error) {
	what := "describing Streams application"
	for _, d := range declared {
		what += " " + d.ID
	}
	g, err := c.readGroups(ctx, what, true)
	if err != nil {
		return StreamsApps{}, err
	}
	return g.streamsApps(declared), nil
}

// streamsApps splits one read of the groups into the declared apps, the
// other Streams apps and the plain groups.
func (g clusterGroups) streamsApps(declared []DeclaredStreamsApp) StreamsApps {
	var out StreamsApps
	ids := g.ids()
	mine := map[string]bool{}
	for _, d := range declared {
		mine[d.ID] = true
		app := streams.App{ID: d.ID}
		if _, listed := g.listed[d.ID]; listed {
			app, _ = g.group(d.ID, ids)
		}
		for _, s := range d.Topics.Sources {
			app.Topics = append(app.Topics, streams.Topic{Name: s, Role: streams.RoleSource, Partitions: g.counts[s]})
		}
		for _, s := range d.Topics.Sinks {
			app.Topics = append(app.Topics, streams.Topic{Name: s, Role: streams.RoleSink, Partitions: g.counts[s]})
		}
		for _, name := range slices.Sorted(maps.Keys(g.counts)) {
			if role, ok := streams.InternalTopicRole(d.ID, name, ids); ok {
				app.Topics = append(app.Topics, streams.Topic{Name: name, Role: role, Partitions: g.counts[name]})
			}
		}
		// The app's group consumes its internal topics too; only the
		// others must be declared.
		var consumed []string
		for _, t := range app.Consumed {
			if _, internal := streams.InternalTopicRole(d.ID, t, ids); !internal {
				consumed = append(consumed, t)
			}
		}
		app.Consumed = consumed
		out.Declared = append(out.Declared, app)
	}
	all := g.consumers()
	for _, a := range all.Apps {
		if !mine[a.ID] {
			out.Others = append(out.Others, a)
		}
	}
	for _, cg := range all.Groups {
		if !mine[cg.ID] {
			out.Groups = append(out.Groups, cg)
		}
	}
	return out
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
func streamsTopology(g StreamsGroup, counts map[string]int32) ([]streams.Subtopology, []string) {
	if g.Topology == nil {
		return nil, nil
	}
	set := map[string]bool{}
	var subs []streams.Subtopology
	for _, st := range g.Topology.Subtopologies {
		s := streams.Subtopology{
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
