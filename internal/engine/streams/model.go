package streams

import (
	"slices"
	"strings"
)

// TopicRole is what a topic is to a Kafka Streams application.
type TopicRole string

// The roles. Sources and the internal topics that tasks consume
// (repartition and foreign-key subscription topics) decide the task count;
// changelogs must equal the task count of their subtopology; sinks are only
// written to.
const (
	RoleSource      TopicRole = "source"
	RoleSink        TopicRole = "sink"
	RoleRepartition TopicRole = "repartition"
	RoleChangelog   TopicRole = "changelog"
	RoleForeignKey  TopicRole = "foreign-key"
)

// Consumed reports whether the app's tasks read the topic, which is what
// makes a classic group's leader rejoin when its partition count changes.
func (r TopicRole) Consumed() bool {
	return r == RoleSource || r == RoleRepartition || r == RoleForeignKey
}

// Internal reports whether Streams created the topic for itself.
func (r TopicRole) Internal() bool {
	return r == RoleRepartition || r == RoleChangelog || r == RoleForeignKey
}

// InternalTopicRole tells whether topic is one of appID's internal topics,
// by Streams' naming rules: <app>-<name>-repartition,
// <app>-<store>-changelog, and the foreign-key join's
// <app>-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic and its
// RESPONSE twin (lower case when the join is named).
// otherApps are the other application ids on the cluster: a topic belongs
// to the longest id it starts with, so "billing-eu-store-changelog" is
// billing-eu's, not billing's.
func InternalTopicRole(appID, topic string, otherApps []string) (TopicRole, bool) {
	rest, ok := strings.CutPrefix(topic, appID+"-")
	if !ok || rest == "" {
		return "", false
	}
	for _, o := range otherApps {
		if len(o) > len(appID) && strings.HasPrefix(topic, o+"-") {
			return "", false
		}
	}
	lower := strings.ToLower(rest)
	switch {
	case strings.HasSuffix(lower, "-topic") &&
		(strings.Contains(lower, "subscription-registration") || strings.Contains(lower, "subscription-response")):
		return RoleForeignKey, true
	case strings.HasSuffix(rest, "-repartition"):
		return RoleRepartition, true
	case strings.HasSuffix(rest, "-changelog"):
		return RoleChangelog, true
	}
	return "", false
}

// Topic is one topic of a Streams app as the cluster shows it.
type Topic struct {
	Name string
	Role TopicRole
	// Partitions is the topic's partition count now; 0 means it does not
	// exist.
	Partitions int32
	// Fixed marks an internal topic whose count does not follow the
	// sources (see FixedInternalTopics): an expansion leaves it alone.
	// PlanExpansion sets it; a caller need not.
	Fixed bool `json:",omitempty"`
}

// Subtopology is one subtopology as a streams-protocol group
// describes it: the topics its tasks read, the repartition topics it
// writes, and the changelogs of its stores.
type Subtopology struct {
	ID         string
	Sources    []string
	Changelogs []string
	// RepartitionSinks are the repartition topics its tasks write.
	RepartitionSinks []string `json:",omitempty"`
	// SourcePartitions is the partition count of each of Sources as the
	// group coordinator resolves the topology: for a repartition topic the
	// count it requires (fixed by Repartitioned.withNumberOfPartitions, or
	// else the most tasks of the subtopologies writing it), for any other
	// topic its count on the cluster.
	SourcePartitions map[string]int32 `json:",omitempty"`
}

// Protocol is the rebalance protocol of an app's group.
type Protocol string

// The protocols ListGroups reports. An app that never ran has no group.
const (
	ProtocolNone    Protocol = ""
	ProtocolClassic Protocol = "classic"
	ProtocolStreams Protocol = "streams"
)

// App is a Streams application as the cluster shows it.
type App struct {
	// ID is the application.id, which is also the group id.
	ID string
	// Topics are the app's sources, sinks and internal topics.
	Topics []Topic
	// GroupExists is true when the cluster has a group named ID.
	GroupExists bool
	Protocol    Protocol
	Members     int
	// Consumed lists the topics the group's members subscribe to or own,
	// when the group tells (nil when it does not).
	Consumed []string
	// Subtopologies come from a streams-protocol group's topology; nil for
	// a classic group.
	Subtopologies []Subtopology
}

// TopicsWith returns the names of the app's topics in role, sorted.
func (a App) TopicsWith(role TopicRole) []string {
	var out []string
	for _, t := range a.Topics {
		if t.Role == role {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// InternalTopics returns the names of the app's internal topics, sorted.
func (a App) InternalTopics() []string {
	var out []string
	for _, t := range a.Topics {
		if t.Role.Internal() {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Partitions is the app's partition count now: the most partitions of any
// source, which is also the task count Streams derives for the sources'
// subtopologies.
func (a App) Partitions() int32 {
	var n int32
	for _, t := range a.Topics {
		if t.Role == RoleSource && t.Partitions > n {
			n = t.Partitions
		}
	}
	return n
}

func (a App) topic(name string) (Topic, bool) {
	for _, t := range a.Topics {
		if t.Name == name {
			return t, true
		}
	}
	return Topic{}, false
}
