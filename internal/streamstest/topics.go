package streamstest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Topics names the app's own topics (a topic prefix may set them apart).
type Topics struct {
	Orders    string // source stream; key customer, value "product=..;amount=.."
	Customers string // source table; key customer, value a name
	Enriched  string // sink: orders joined with customers
	Counts    string // sink: product -> count (8-byte big-endian long)
}

// TopicsWithPrefix returns the topic names the app uses with --topic-prefix prefix.
func TopicsWithPrefix(prefix string) Topics {
	return Topics{
		Orders:    prefix + "orders",
		Customers: prefix + "customers",
		Enriched:  prefix + "enriched",
		Counts:    prefix + "counts",
	}
}

// Sources are the topics the app consumes.
func (t Topics) Sources() []string { return []string{t.Orders, t.Customers} }

// Sinks are the topics the app only produces to.
func (t Topics) Sinks() []string { return []string{t.Enriched, t.Counts} }

// The internal topics the app's topology creates, by Streams' naming rules:
// <application.id>-<name>-repartition and <application.id>-<store>-changelog.
// RepartitionTopics follow the sources' count.
func RepartitionTopics(appID string) []string {
	return []string{appID + "-byproduct-repartition"}
}

// ChangelogTopics are the changelogs of the two stores whose tasks follow
// the sources' count.
func ChangelogTopics(appID string) []string {
	return []string{appID + "-counts-store-changelog", appID + "-customers-store-changelog"}
}

// FixedPartitions is the count the topology fixes for its "by-shard"
// branch (Repartitioned.withNumberOfPartitions in App.java).
const FixedPartitions int32 = 3

// FixedTopics are the internal topics of the "by-shard" branch: its
// repartition topic and the changelog of the subtopology reading it. They
// keep FixedPartitions whatever the sources have, and Streams stops the app
// when it finds them at another count.
func FixedTopics(appID string) []string {
	return []string{appID + "-by-shard-repartition", appID + "-per-shard-changelog"}
}

// GrowingTopics are the internal topics that follow the sources:
// RepartitionTopics and ChangelogTopics.
func GrowingTopics(appID string) []string {
	return append(RepartitionTopics(appID), ChangelogTopics(appID)...)
}

// InternalTopics are all the app's internal topics, sorted: GrowingTopics
// and FixedTopics.
func InternalTopics(appID string) []string {
	out := append(GrowingTopics(appID), FixedTopics(appID)...)
	slices.Sort(out)
	return out
}

// Home returns the home partition a key names ("h5-p2" -> 5).
func Home(key string) (int32, error) {
	rest, ok := strings.CutPrefix(key, "h")
	if !ok {
		return 0, fmt.Errorf("key %q does not start with h<home>-", key)
	}
	num, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, fmt.Errorf("key %q does not start with h<home>-", key)
	}
	h, err := strconv.ParseInt(num, 10, 32)
	if err != nil || h < 0 {
		return 0, fmt.Errorf("key %q does not name a home partition", key)
	}
	return int32(h), nil
}

// TotalsTopics names the own topics of the TopologyTotals app.
type TotalsTopics struct {
	Refunds string // source table, co-partitioned with the shared orders
	Totals  string // sink: product -> orders (8-byte big-endian long)
}

// TotalsTopicsWithPrefix returns the TopologyTotals app's topics with
// --topic-prefix prefix.
func TotalsTopicsWithPrefix(prefix string) TotalsTopics {
	return TotalsTopics{Refunds: prefix + "refunds", Totals: prefix + "totals"}
}

// TotalsInternalTopics are the TopologyTotals app's internal topics, sorted;
// every one follows the sources.
func TotalsInternalTopics(appID string) []string {
	return []string{appID + "-byproduct-repartition", appID + "-refunds-store-changelog", appID + "-totals-store-changelog"}
}
