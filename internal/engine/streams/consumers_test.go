package streams_test

import (
	"errors"
	"regexp"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// shopApp is the fixture app as a streams-protocol group describes it:
// orders joined with customers in subtopology 0, re-keyed through a
// repartition topic that subtopology 1 counts.
func shopApp(members int) streams.App {
	return streams.App{
		ID: "shop", GroupExists: true, Protocol: streams.ProtocolStreams, Members: members,
		Consumed: []string{"customers", "orders", "shop-byproduct-repartition"},
		Topics: []streams.Topic{
			{Name: "orders", Role: streams.RoleSource, Partitions: 4},
			{Name: "customers", Role: streams.RoleSource, Partitions: 4},
			{Name: "shop-byproduct-repartition", Role: streams.RoleRepartition, Partitions: 4},
			{Name: "shop-counts-store-changelog", Role: streams.RoleChangelog, Partitions: 4},
			{Name: "shop-customers-store-changelog", Role: streams.RoleChangelog, Partitions: 4},
		},
		Subtopologies: []streams.Subtopology{
			{ID: "0", Sources: []string{"orders", "customers"}, Changelogs: []string{"shop-customers-store-changelog"}},
			{ID: "1", Sources: []string{"shop-byproduct-repartition"}, Changelogs: []string{"shop-counts-store-changelog"}},
		},
	}
}

func refusal(t *testing.T, err error) *streams.ConsumersError {
	t.Helper()
	var se *streams.ConsumersError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *ConsumersError", err)
	}
	return se
}

func TestCheckTopicGrowthRefusesASourceOfAStreamsAppNamingItsCoPartitionedTopics(t *testing.T) {
	_, err := streams.CheckTopicGrowth(streams.TopicGrowth{Topic: "orders", From: 4, To: 8}, streams.Consumers{Apps: []streams.App{shopApp(1)}})
	se := refusal(t, err)
	if len(se.Apps) != 1 || se.Apps[0].App != "shop" || !slices.Equal(se.Apps[0].CoPartitioned, []string{"customers"}) || !se.Apps[0].FromTopology {
		t.Fatalf("refusal %+v, want shop with customers co-partitioned from the topology", se.Apps)
	}
	if !slices.Equal(se.Apps[0].Sources, []string{"customers", "orders"}) {
		t.Errorf("sources %v, want customers, orders", se.Apps[0].Sources)
	}
	want := []string{"shop-byproduct-repartition", "shop-counts-store-changelog", "shop-customers-store-changelog"}
	if !slices.Equal(se.Apps[0].Internal, want) {
		t.Errorf("internal topics %v, want %v", se.Apps[0].Internal, want)
	}
	for _, p := range []string{`Kafka Streams app "shop" \(streams protocol, 1 member\(s\)\) reads topic "orders" co-partitioned with customers`,
		`nor would its internal topics shop-byproduct-repartition, shop-counts-store-changelog, shop-customers-store-changelog`,
		`Growing "orders" alone from 4 to 8 partitions stops the app`} {
		if !regexp.MustCompile(p).MatchString(err.Error()) {
			t.Errorf("message %q does not match %q", err, p)
		}
	}
}

func TestCheckTopicGrowthWithoutATopologyNamesEveryOtherTopicTheAppReads(t *testing.T) {
	app := shopApp(0)
	app.Protocol, app.Subtopologies = streams.ProtocolClassic, nil
	_, err := streams.CheckTopicGrowth(streams.TopicGrowth{Topic: "customers", From: 4, To: 6}, streams.Consumers{Apps: []streams.App{app}})
	se := refusal(t, err)
	if got := se.Apps[0]; !slices.Equal(got.CoPartitioned, []string{"orders"}) || got.FromTopology {
		t.Fatalf("refusal %+v, want orders, not from a topology", got)
	}
	if !regexp.MustCompile(`"shop" \(classic protocol, stopped\) reads topic "customers" together with orders`).MatchString(err.Error()) {
		t.Errorf("message %q", err)
	}
}

// A sink of one app is a source of the next: growing it alone breaks the
// downstream app, and only that one.
func TestCheckTopicGrowthRefusesASinkThatADownstreamAppReads(t *testing.T) {
	down := streams.App{
		ID: "billing", GroupExists: true, Protocol: streams.ProtocolStreams, Members: 2,
		Consumed: []string{"enriched", "invoices"},
		Topics:   []streams.Topic{{Name: "enriched", Role: streams.RoleSource, Partitions: 4}, {Name: "invoices", Role: streams.RoleSource, Partitions: 4}},
		Subtopologies: []streams.Subtopology{
			{ID: "0", Sources: []string{"enriched", "invoices"}},
		},
	}
	_, err := streams.CheckTopicGrowth(streams.TopicGrowth{Topic: "enriched", From: 4, To: 8}, streams.Consumers{Apps: []streams.App{shopApp(1), down}})
	se := refusal(t, err)
	if !slices.Equal(se.AppIDs(), []string{"billing"}) || !slices.Equal(se.Apps[0].CoPartitioned, []string{"invoices"}) {
		t.Fatalf("refusal %+v, want billing alone with invoices", se.Apps)
	}
}

func TestCheckTopicGrowthNamesEveryAppThatReadsTheTopicInOrder(t *testing.T) {
	other := shopApp(3)
	other.ID = "audit"
	_, err := streams.CheckTopicGrowth(streams.TopicGrowth{Topic: "orders", From: 4, To: 8}, streams.Consumers{Apps: []streams.App{shopApp(1), other}})
	if se := refusal(t, err); !slices.Equal(se.AppIDs(), []string{"audit", "shop"}) {
		t.Fatalf("apps %v, want audit, shop", se.AppIDs())
	}
}

func TestCheckTopicGrowthWarnsForEachPlainGroupAndRefusesNothing(t *testing.T) {
	c := streams.Consumers{
		Apps: []streams.App{shopApp(1)},
		Groups: []streams.ConsumerGroup{
			{ID: "reporting", Members: 2, Topics: []string{"clicks", "orders"}},
			{ID: "archiver", Members: 0, Topics: []string{"clicks"}},
			{ID: "unrelated", Members: 1, Topics: []string{"payments"}},
		},
	}
	warnings, err := streams.CheckTopicGrowth(streams.TopicGrowth{Topic: "clicks", From: 4, To: 6}, c)
	if err != nil {
		t.Fatalf("a topic no Streams app reads was refused: %v", err)
	}
	if len(warnings) != 2 {
		t.Fatalf("warnings %q, want one for archiver and one for reporting", warnings)
	}
	for i, p := range []string{`^Consumer group "archiver" reads topic "clicks" and has no member now.*partitions 4–5`,
		`^Consumer group "reporting" reads topic "clicks" and has 2 member\(s\)`} {
		if !regexp.MustCompile(p).MatchString(warnings[i]) {
			t.Errorf("warning %d %q does not match %q", i, warnings[i], p)
		}
	}
}

func TestCheckTopicGrowthWarnsPlainGroupsEvenWhenAStreamsAppRefuses(t *testing.T) {
	c := streams.Consumers{Apps: []streams.App{shopApp(1)}, Groups: []streams.ConsumerGroup{{ID: "reporting", Members: 1, Topics: []string{"orders"}}}}
	warnings, err := streams.CheckTopicGrowth(streams.TopicGrowth{Topic: "orders", From: 4, To: 8}, c)
	refusal(t, err)
	if len(warnings) != 1 {
		t.Errorf("warnings %q, want reporting's", warnings)
	}
}

// A replication factor change, or any plan that keeps the count, adds no
// partition and moves no key: it is never refused.
func TestCheckTopicGrowthAllowsAChangeThatAddsNoPartition(t *testing.T) {
	c := streams.Consumers{Apps: []streams.App{shopApp(1)}, Groups: []streams.ConsumerGroup{{ID: "reporting", Members: 1, Topics: []string{"orders"}}}}
	for _, g := range []streams.TopicGrowth{{Topic: "orders", From: 4, To: 4}, {Topic: "orders", From: 8, To: 4}} {
		if w, err := streams.CheckTopicGrowth(g, c); err != nil || len(w) > 0 {
			t.Errorf("%+v: warnings %q, err %v; want neither", g, w, err)
		}
	}
}

func TestCheckTopicGrowthIgnoresAppsThatDoNotReadTheTopic(t *testing.T) {
	// The app writes counts, it does not read it.
	if w, err := streams.CheckTopicGrowth(streams.TopicGrowth{Topic: "counts", From: 4, To: 8}, streams.Consumers{Apps: []streams.App{shopApp(1)}}); err != nil || len(w) > 0 {
		t.Errorf("warnings %q, err %v; want neither", w, err)
	}
}
