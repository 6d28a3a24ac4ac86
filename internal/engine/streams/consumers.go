package streams

import (
	"fmt"
	"slices"
	"strings"
)

// ConsumerGroup is a consumer group that is not a Kafka Streams app.
type ConsumerGroup struct {
	ID      string
	Members int
	// Topics are the topics its members subscribe to or it has committed
	// offsets on, sorted.
	Topics []string
}

// Consumers are the cluster's groups, split into Kafka Streams apps and
// plain consumer groups.
type Consumers struct {
	// Apps carry Consumed (every topic the app's tasks read, internal ones
	// included), Topics (the consumed sources and the internal topics, with
	// their counts) and, for a streams-protocol group, Subtopologies.
	Apps   []App
	Groups []ConsumerGroup
}

// TopicGrowth is a change of one topic's partition count on its own,
// outside any Streams expansion: that topic alone.
type TopicGrowth struct {
	Topic    string
	From, To int32
}

// Consumer is a Streams app that reads a topic about to grow.
type Consumer struct {
	App      string
	Protocol Protocol
	Members  int
	// CoPartitioned are the other topics the app reads with it: from a
	// streams-protocol group's topology, the other sources of the
	// subtopologies that read it; without a topology, every other topic
	// the app consumes.
	CoPartitioned []string
	// FromTopology is true when CoPartitioned comes from the topology.
	FromTopology bool
	// Internal are the app's internal topics, whose counts follow its
	// sources.
	Internal []string
	// Sources are every topic the app reads that is not its own internal
	// topic: what a declaration of the app lists as its sources.
	Sources []string
}

// ConsumersError refuses to grow a topic that Kafka Streams apps
// read: only that topic would grow, and each app stops on its next
// rebalance.
type ConsumersError struct {
	TopicGrowth
	Apps []Consumer
}

// AppIDs are the refusing apps' ids, sorted.
func (e *ConsumersError) AppIDs() []string {
	out := make([]string, len(e.Apps))
	for i, a := range e.Apps {
		out[i] = a.App
	}
	return out
}

func (e *ConsumersError) Error() string {
	var parts []string
	for _, a := range e.Apps {
		state := "stopped"
		if a.Members > 0 {
			state = fmt.Sprintf("%d member(s)", a.Members)
		}
		protocol := string(a.Protocol)
		if protocol == "" {
			protocol = string(ProtocolClassic)
		}
		s := fmt.Sprintf("Kafka Streams app %q (%s protocol, %s) reads topic %q", a.App, protocol, state, e.Topic)
		switch {
		case len(a.CoPartitioned) > 0 && a.FromTopology:
			s += fmt.Sprintf(" co-partitioned with %s, which would not grow with it", strings.Join(a.CoPartitioned, ", "))
		case len(a.CoPartitioned) > 0:
			s += fmt.Sprintf(" together with %s, which would not grow with it", strings.Join(a.CoPartitioned, ", "))
		}
		if len(a.Internal) > 0 {
			s += fmt.Sprintf("; nor would its internal topics %s", strings.Join(a.Internal, ", "))
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%s. Growing %q alone from %d to %d partitions stops the app on its next rebalance: "+
		"Streams requires co-partitioned topics to have equal counts (\"Following topics do not have the same number of "+
		"partitions\") and its internal topics to match its sources (\"Existing internal topic … has invalid partitions\")",
		strings.Join(parts, "; "), e.Topic, e.From, e.To)
}

// CheckTopicGrowth decides whether a topic may grow on its own, given
// every group on the cluster. A Kafka Streams app that reads it (a source,
// or another app's sink it reads) refuses the growth: it must grow through
// the app's expansion, which grows the co-partitioned topics and the
// internal topics with it. Each plain consumer group that reads it gets a
// warning. A change that adds no partition is never refused.
func CheckTopicGrowth(g TopicGrowth, c Consumers) (warnings []string, err error) {
	if g.To <= g.From {
		return nil, nil
	}
	refusal := &ConsumersError{TopicGrowth: g}
	for _, a := range sortedApps(c.Apps) {
		if !slices.Contains(a.Consumed, g.Topic) {
			continue
		}
		refusal.Apps = append(refusal.Apps, streamsConsumer(a, g.Topic))
	}
	warnings = ConsumerGroupWarnings([]TopicGrowth{g}, c.Groups)
	if len(refusal.Apps) > 0 {
		return warnings, refusal
	}
	return warnings, nil
}

// ConsumerGroupWarnings are the warnings for the plain consumer groups that
// read growing topics: one for each group and topic, groups sorted by id,
// in the order of growths. Such a group is never refused, but its members
// rebalance onto the new partitions, may skip what was written there
// before, and see keys move unless every producer partitions statically.
func ConsumerGroupWarnings(growths []TopicGrowth, groups []ConsumerGroup) []string {
	groups = slices.Clone(groups)
	slices.SortFunc(groups, func(x, y ConsumerGroup) int { return strings.Compare(x.ID, y.ID) })
	var warnings []string
	for _, cg := range groups {
		for _, g := range growths {
			if g.To <= g.From || !slices.Contains(cg.Topics, g.Topic) {
				continue
			}
			state := "has no member now and resumes from its committed offsets when it starts"
			if cg.Members > 0 {
				state = fmt.Sprintf("has %d member(s), which rebalance when their metadata shows the new partitions", cg.Members)
			}
			warnings = append(warnings, fmt.Sprintf("Consumer group %q reads topic %q and %s. It starts reading partitions %d–%d "+
				"from where its auto.offset.reset points: with \"latest\", records written to them before the rebalance are "+
				"skipped. A consumer that keeps state per key sees keys move to the new partitions unless every producer "+
				"partitions statically.", cg.ID, g.Topic, state, g.From, g.To-1))
		}
	}
	return warnings
}

func sortedApps(apps []App) []App {
	out := slices.Clone(apps)
	slices.SortFunc(out, func(x, y App) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// streamsConsumer is what an app that reads topic must hear: the topics
// that would be left behind.
func streamsConsumer(a App, topic string) Consumer {
	sc := Consumer{App: a.ID, Protocol: a.Protocol, Members: a.Members}
	all := a.InternalTopics()
	internal := func(t string) bool { return slices.Contains(all, t) }
	// The fixed ones keep their counts whatever the sources do.
	fixed := FixedTopicNames(FixedInternalTopics(a, nil, 0, a.Partitions()))
	for _, t := range all {
		if !slices.Contains(fixed, t) {
			sc.Internal = append(sc.Internal, t)
		}
	}
	set := map[string]bool{}
	for _, st := range a.Subtopologies {
		if !slices.Contains(st.Sources, topic) {
			continue
		}
		sc.FromTopology = true
		for _, s := range st.Sources {
			if s != topic && !internal(s) {
				set[s] = true
			}
		}
	}
	if !sc.FromTopology {
		for _, s := range a.Consumed {
			if s != topic && !internal(s) {
				set[s] = true
			}
		}
	}
	for s := range set {
		sc.CoPartitioned = append(sc.CoPartitioned, s)
	}
	slices.Sort(sc.CoPartitioned)
	for _, s := range a.Consumed {
		if !internal(s) {
			sc.Sources = append(sc.Sources, s)
		}
	}
	slices.Sort(sc.Sources)
	return sc
}
