package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// clusterGroups is one read of the cluster's groups and topic counts: what
// both DescribeStreamsApp and DescribeConsumers decide from.
type clusterGroups struct {
	listed kadm.ListedGroups
	// counts are the partition counts of every topic.
	counts  map[string]int32
	classic kadm.DescribedGroups
	streams map[string]StreamsGroup
	// committed are the topics each group has committed offsets on; read
	// only with withOffsets, for the groups whose members do not tell.
	committed map[string][]string
}

// ids are the listed group ids, sorted.
func (g clusterGroups) ids() []string { return slices.Sorted(maps.Keys(g.listed)) }

// readGroups costs one ListGroups, one Metadata, one DescribeGroups for
// every classic group and one StreamsGroupDescribe per streams group; with
// withOffsets, one OffsetFetch per coordinator for the groups that have no
// member to tell what they read (stopped groups, and consumer-protocol
// groups, which DescribeGroups does not describe).
func (c *Client) readGroups(ctx context.Context, what string, withOffsets bool) (clusterGroups, error) {
	g := clusterGroups{counts: map[string]int32{}, streams: map[string]StreamsGroup{}, committed: map[string][]string{}}
	err := c.withTimeout(ctx, what, func(ctx context.Context) error {
		// ListGroups asks every broker: one that is starting or stopping
		// refuses the connection (the soak, seed 23: a plan of the
		// Streams app just as the platform added a broker).
		err := c.retryRefused(ctx, func() (err error) {
			g.listed, err = c.admin.ListGroups(ctx)
			return err
		})
		if err != nil {
			return fmt.Errorf("listing groups: %w", err)
		}
		md, err := metadataRequest(nil).RequestWith(ctx, c.kgo)
		if err != nil {
			return fmt.Errorf("reading topic metadata: %w", err)
		}
		for _, t := range md.Topics {
			if t.Topic != nil && kerr.ErrorForCode(t.ErrorCode) == nil {
				g.counts[*t.Topic] = int32(len(t.Partitions))
			}
		}
		var classicIDs, streamsIDs []string
		for id, lg := range g.listed {
			switch {
			case lg.GroupType == "streams":
				streamsIDs = append(streamsIDs, id)
			case lg.ProtocolType == "consumer" && lg.GroupType != "consumer" && lg.GroupType != "share":
				classicIDs = append(classicIDs, id)
			}
		}
		if len(classicIDs) > 0 {
			if g.classic, err = c.admin.DescribeGroups(ctx, classicIDs...); err != nil {
				return fmt.Errorf("describing classic groups: %w", err)
			}
		}
		for _, id := range streamsIDs {
			sg, err := c.describeStreamsGroup(ctx, id)
			if err != nil {
				return err
			}
			g.streams[id] = sg
		}
		if withOffsets {
			return g.readCommitted(ctx, c.admin)
		}
		return nil
	})
	return g, err
}

// readCommitted fetches the committed topics of every group that has no
// member to tell what it reads, in one batched OffsetFetch.
func (g *clusterGroups) readCommitted(ctx context.Context, admin *kadm.Client) error {
	var ask []string
	for _, id := range g.ids() {
		if d, ok := g.classic[id]; ok && d.Err == nil && len(d.Members) > 0 {
			continue // the members' subscriptions tell
		}
		if s, ok := g.streams[id]; ok && s.Topology != nil && len(s.Members) > 0 {
			continue // the topology tells
		}
		if lg := g.listed[id]; lg.ProtocolType != "" && lg.ProtocolType != "consumer" && lg.GroupType != "streams" {
			continue // connect workers and the like commit no offsets; a group with no protocol may (manual assignment)
		}
		ask = append(ask, id)
	}
	if len(ask) == 0 {
		return nil
	}
	for id, r := range admin.FetchManyOffsets(ctx, ask...) {
		if errors.Is(r.Err, kerr.GroupIDNotFound) {
			continue // deleted since the listing
		}
		if r.Err != nil {
			return fmt.Errorf("fetching the committed offsets of group %s: %w", id, r.Err)
		}
		g.committed[id] = slices.Sorted(maps.Keys(r.Fetched))
	}
	return nil
}

// DescribeConsumers reads every group on the cluster and tells the Kafka
// Streams apps from the plain consumer groups (see clusterGroups.consumers).
//
// Only groups the principal may DESCRIBE are listed by Kafka.
func (c *Client) DescribeConsumers(ctx context.Context) (streams.Consumers, error) {
	g, err := c.readGroups(ctx, "reading the cluster's consumer groups", true)
	if err != nil {
		return streams.Consumers{}, err
	}
	return g.consumers(), nil
}

// consumers tells the Kafka Streams apps from the plain consumer groups:
//   - a streams-protocol group is a Streams app; its topology says what its
//     subtopologies read;
//   - a classic group is a Streams app when its members use Streams'
//     "stream" assignor, or, with no member, when it has committed offsets
//     and the cluster has internal topics named after it;
//   - every other consumer group is plain, reading what its members
//     subscribe to and what it has committed offsets on.
//
// An app's Topics are the topics it consumes that are not its own internal
// topics (as sources), then its internal topics, with their counts.
func (g clusterGroups) consumers() streams.Consumers {
	ids := g.ids()
	var out streams.Consumers
	for _, id := range ids {
		app, isApp := g.group(id, ids)
		if !isApp {
			if len(app.Consumed) > 0 {
				out.Groups = append(out.Groups, streams.ConsumerGroup{ID: id, Members: app.Members, Topics: app.Consumed})
			}
			continue
		}
		internal := internalTopics(id, g.counts, ids)
		for _, t := range app.Consumed {
			if _, in := internal[t]; !in {
				app.Topics = append(app.Topics, streams.Topic{Name: t, Role: streams.RoleSource, Partitions: g.counts[t]})
			}
		}
		for _, t := range slices.Sorted(maps.Keys(internal)) {
			app.Topics = append(app.Topics, streams.Topic{Name: t, Role: internal[t], Partitions: g.counts[t]})
		}
		out.Apps = append(out.Apps, app)
	}
	return out
}

// group is what the cluster tells of group id: its protocol, members, the
// topics it consumes (its members' subscriptions or topology, and its
// committed offsets), and for a streams group its topology; Topics is
// left empty. isApp says whether it is a Kafka Streams app (see consumers).
func (g clusterGroups) group(id string, ids []string) (app streams.App, isApp bool) {
	app = streams.App{ID: id, GroupExists: true}
	consumed := map[string]bool{}
	for _, t := range g.committed[id] {
		consumed[t] = true
	}
	if s, ok := g.streams[id]; ok {
		isApp, app.Members = true, len(s.Members)
		app.Protocol = streams.ProtocolStreams
		var fromTopology []string
		app.Subtopologies, fromTopology = streamsTopology(s, g.counts)
		for _, t := range fromTopology {
			consumed[t] = true
		}
	} else if d, ok := g.classic[id]; ok && d.Err == nil {
		app.Members = len(d.Members)
		app.Protocol = streams.ProtocolClassic
		for _, t := range classicSubscriptions(d) {
			consumed[t] = true
		}
		isApp = d.Protocol == "stream" || (app.Members == 0 && len(consumed) > 0 && len(internalTopics(id, g.counts, ids)) > 0)
	} else {
		// Not described: a consumer-protocol group, or a classic group
		// whose protocol type is empty (offsets committed with no member
		// ever joined). As ListGroups types it; an empty classic one with
		// committed offsets and internal topics is a stopped app.
		lg := g.listed[id]
		app.Protocol = streams.ProtocolClassic
		if lg.GroupType == "streams" {
			app.Protocol = streams.ProtocolStreams
		}
		isApp = lg.ProtocolType == "" && (lg.GroupType == "" || lg.GroupType == "classic") && lg.State == "Empty" &&
			len(consumed) > 0 && len(internalTopics(id, g.counts, ids)) > 0
	}
	if len(consumed) > 0 {
		app.Consumed = slices.Sorted(maps.Keys(consumed))
	}
	return app, isApp
}

// internalTopics are the topics named as appID's internal topics, with
// their roles.
func internalTopics(appID string, counts map[string]int32, ids []string) map[string]streams.TopicRole {
	out := map[string]streams.TopicRole{}
	for name := range counts {
		if role, ok := streams.InternalTopicRole(appID, name, ids); ok {
			out[name] = role
		}
	}
	return out
}
