package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
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

// StreamsPort implements executor.StreamsKafka for one app.
type StreamsPort struct {
	Client   *Client
	Protocol engine.StreamsProtocol
}

var _ executor.StreamsKafka = StreamsPort{}

// GrowTopics places the new partitions of every topic with the engine
// (rack-aware, least-loaded, each topic seeing the ones placed before it),
// sends them in ONE CreatePartitions request, and waits until every new
// partition has a leader and a full ISR.
func (p StreamsPort) GrowTopics(ctx context.Context, topics []string, partitions int32) error {
	pl, err := p.Client.BeginPlacement(ctx)
	if err != nil {
		return err
	}
	grow := map[string][]engine.Partition{}
	var problems []error
	// Each topic is placed seeing the ones placed before it; the placement's
	// own view stays as the cluster is, since GrowTopics reads the current
	// partitions from it.
	view := pl.Cluster
	view.Partitions = slices.Clone(pl.Cluster.Partitions)
	for _, t := range topics {
		have := 0
		for _, ps := range view.Partitions {
			if ps.Topic == t {
				have++
			}
		}
		if have >= int(partitions) {
			continue
		}
		added, err := engine.PlacePartitions(view, t, int(partitions), 0, engine.DefaultOptions())
		if err != nil {
			problems = append(problems, fmt.Errorf("placing the new partitions of %s: %w", t, err))
			continue
		}
		grow[t] = added
		view.Partitions = append(view.Partitions, added...)
	}
	if len(problems) > 0 {
		pl.Release()
		return errors.Join(problems...)
	}
	if len(grow) == 0 {
		pl.Release()
		return nil
	}
	err = pl.GrowTopics(ctx, grow)
	pl.Release()
	if err != nil {
		return err
	}
	for _, t := range slices.Sorted(maps.Keys(grow)) {
		if err := p.Client.AwaitTopicReady(ctx, t, int(partitions), 0); err != nil {
			return fmt.Errorf("topic %s grew to %d partitions, but: %w", t, partitions, err)
		}
	}
	return nil
}

// StreamsGroup describes the app's group with the request its protocol
// answers: DescribeGroups for a classic group, StreamsGroupDescribe for a
// streams group.
func (p StreamsPort) StreamsGroup(ctx context.Context, app string, want map[string]int32) (executor.StreamsGroupStatus, error) {
	var st executor.StreamsGroupStatus
	err := p.Client.withTimeout(ctx, "describing group "+app, func(ctx context.Context) error {
		var err error
		if p.Protocol == engine.ProtocolStreams {
			st, err = p.streamsStatus(ctx, app, want)
		} else {
			st, err = p.classicStatus(ctx, app, want)
		}
		return err
	})
	return st, err
}

func (p StreamsPort) classicStatus(ctx context.Context, app string, want map[string]int32) (executor.StreamsGroupStatus, error) {
	var st executor.StreamsGroupStatus
	described, err := p.Client.admin.DescribeGroups(ctx, app)
	if err != nil {
		return st, err
	}
	g, ok := described[app]
	if !ok {
		return st, fmt.Errorf("group %s is missing from the DescribeGroups answer", app)
	}
	if g.Err != nil {
		return st, g.Err
	}
	st.State, st.Members = g.State, len(g.Members)
	owners := map[string]map[int32]int{}
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range a.Topics {
			if owners[t.Topic] == nil {
				owners[t.Topic] = map[int32]int{}
			}
			for _, part := range t.Partitions {
				owners[t.Topic][part]++
			}
		}
	}
	switch {
	case st.State != "Stable":
		st.Why = "group state is " + st.State
	case st.Members == 0:
		st.Why = "the group has no members"
	default:
		st.Stable, st.Why = Covered(owners, want)
	}
	return st, nil
}

func (p StreamsPort) streamsStatus(ctx context.Context, app string, want map[string]int32) (executor.StreamsGroupStatus, error) {
	var st executor.StreamsGroupStatus
	g, err := p.Client.describeStreamsGroup(ctx, app)
	if errors.Is(err, ErrGroupNotFound) {
		st.State, st.Why = "Dead", "the group does not exist"
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.State, st.Members = g.State, len(g.Members)
	subs, _ := streamsTopology(g, nil)
	// A subtopology has as many tasks as its widest source. want gives a
	// fixed subtopology's sources at their own count; for a source want
	// leaves out, the count the coordinator requires stands in.
	tasks := map[string]int32{}
	for _, s := range subs {
		for _, t := range s.Sources {
			n, ok := want[t]
			if !ok {
				n = s.SourcePartitions[t]
			}
			tasks[s.ID] = max(tasks[s.ID], n)
		}
	}
	owners := map[string]map[int32]int{}
	var behind []string
	for _, m := range g.Members {
		for sub, parts := range m.Active {
			if owners[sub] == nil {
				owners[sub] = map[int32]int{}
			}
			for _, part := range parts {
				owners[sub][part]++
			}
		}
		if !m.AtTarget {
			behind = append(behind, m.ID)
		}
	}
	switch {
	case st.State != "Stable":
		st.Why = "group state is " + st.State
	case len(subs) == 0:
		st.Why = "the group has no initialized topology"
	case len(behind) > 0:
		sort.Strings(behind)
		st.Why = fmt.Sprintf("members %s have not reached their target assignment", strings.Join(behind, ", "))
	default:
		expect := map[string]int32{}
		for id, n := range tasks {
			expect["subtopology "+id] = n
			owners["subtopology "+id] = owners[id]
			delete(owners, id)
		}
		st.Stable, st.Why = Covered(owners, expect)
	}
	return st, nil
}

// Covered checks that each name in want (a topic, or a subtopology) owns
// partitions 0..want-1, each exactly once, and nothing beyond; owners
// counts the members owning each partition. The reason lists the gaps.
func Covered(owners map[string]map[int32]int, want map[string]int32) (bool, string) {
	var gaps []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		for p := range want[n] {
			switch c := owners[n][p]; {
			case c == 0:
				gaps = append(gaps, fmt.Sprintf("%s/%d unassigned", n, p))
			case c > 1:
				gaps = append(gaps, fmt.Sprintf("%s/%d assigned %d times", n, p, c))
			}
		}
		for p := range owners[n] {
			if p >= want[n] {
				gaps = append(gaps, fmt.Sprintf("%s/%d beyond its %d partitions", n, p, want[n]))
			}
		}
	}
	if len(gaps) == 0 {
		return true, ""
	}
	slices.Sort(gaps)
	if len(gaps) > 6 {
		gaps = append(gaps[:6], fmt.Sprintf("and %d more", len(gaps)-6))
	}
	return false, strings.Join(gaps, ", ")
}
