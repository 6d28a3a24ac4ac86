package streamstest

import (
	"fmt"
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
func RepartitionTopics(appID string) []string {
	return []string{appID + "-byproduct-repartition"}
}

// ChangelogTopics are the changelogs of the app's two stores.
func ChangelogTopics(appID string) []string {
	return []string{appID + "-counts-store-changelog", appID + "-customers-store-changelog"}
}

// InternalTopics are RepartitionTopics and ChangelogTopics.
func InternalTopics(appID string) []string {
	return append(RepartitionTopics(appID), ChangelogTopics(appID)...)
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
