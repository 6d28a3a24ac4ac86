package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/streamstest"
)

// An expansion cut after the topics grew, planned again while the app is
// still between the two counts (make soak, seed 27). The app's JVM is
// frozen (SIGSTOP) before the growth, so its members stay in the group but
// send no heartbeat, and the streams group coordinator keeps the topology
// it resolved at the old count: it reports the derived repartition topic
// at 4 while the sources that write it are at 5. Read like that, 4 against
// 5 is how the topology says a count is fixed, and the plan took that topic
// and the changelog downstream of it as fixed_internal_topics; once the app
// ran on 5 the next plan dropped them again. The plan between the counts
// must name only the branch the topology really fixes, and the apply after
// the app runs again must settle on 5 with the same set and an empty plan
// after it.
func TestAccStreamsApp_plannedBetweenTheCountsOfAnExpansion(t *testing.T) {
	testAccPreCheck(t)
	c := streamsCluster(t)
	ctx := t.Context()
	adm := c.Admin()
	servers := c.BootstrapServers()
	const name, from, to = "accbetween", int32(4), int32(5)
	appID := "app-" + name
	topics := streamstest.TopicsWithPrefix(name + "-")
	createAppTopics(t, adm, from, 3, append(topics.Sources(), topics.Sinks()...)...)
	fixed := streamstest.FixedTopics(appID)
	byproduct := streamstest.RepartitionTopics(appID)[0]

	a := streamstest.StartApp(t, streamstest.AppOptions{Bootstrap: servers, AppID: appID, Protocol: streamstest.ProtocolStreams, TopicPrefix: name + "-"})
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := a.WaitState(runCtx, "RUNNING"); err != nil {
		t.Fatalf("the app never ran: %v\n%s", err, a.LogTail(40))
	}
	cl := providerClient(t, servers)

	addr := "kafkascale_streams_app.test"
	fixedChecks := []knownvalue.Check{knownvalue.StringExact(fixed[0]), knownvalue.StringExact(fixed[1])}
	config := func(partitions int32, stabilization string) string {
		return streamsAppConfig(servers, appID, topics, partitions, fmt.Sprintf(`quiet_period = "2s"
  stabilization_timeout = %q`, stabilization))
	}
	gaveUp := wrapped(fmt.Sprintf(`(?s)Streams expansion stopped.*gave up waiting for the group to be stable on %d partitions`, to))
	var paused time.Time
	steps := []resource.TestStep{{
		Config: config(from, "3m"),
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("fixed_internal_topics"), knownvalue.SetExact(fixedChecks)),
		}},
	}, {
		// Frozen, the app's members stay in the group: the expansion grows
		// every topic, then waits for a group that cannot move.
		PreConfig: func() {
			if err := a.Pause(); err != nil {
				t.Fatal(err)
			}
			paused = time.Now()
		},
		Config:      config(to, "1s"),
		ExpectError: gaveUp,
	}, {
		// The window held: the coordinator still reports the derived
		// repartition topic at the old count while its writers' sources
		// are at the new one. Without that, this step would prove nothing.
		PreConfig: func() {
			if err := heldBetween(ctx, adm, cl, appID, topics.Orders, byproduct, from, to); err != nil {
				t.Fatalf("%v (the app was frozen %v ago)", err, time.Since(paused).Round(time.Millisecond))
			}
		},
		Config: config(to, "1s"),
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("fixed_internal_topics"), knownvalue.SetExact(fixedChecks)),
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("expansion_order"), knownvalue.ListPartial(map[int]knownvalue.Check{
				0: knownvalue.StringRegexp(regexp.MustCompile(fmt.Sprintf(`^1\. wait until the group is stable on %d partitions`, to))),
			})),
		}},
		ExpectError: gaveUp,
	}, {
		PreConfig: func() {
			t.Logf("the app was frozen for %v", time.Since(paused).Round(time.Millisecond))
			if err := a.Resume(); err != nil {
				t.Fatal(err)
			}
		},
		Config: config(to, "3m"),
		Check: func(*terraform.State) error {
			port := kafka.StreamsPort{Client: cl, Protocol: streams.ProtocolStreams}
			stableOn := map[string]int32{topics.Orders: to, topics.Customers: to, byproduct: to, fixed[0]: streamstest.FixedPartitions}
			if st, err := port.StreamsGroup(ctx, appID, stableOn); err != nil || !st.Stable {
				return fmt.Errorf("apply returned but the group is not stable on %d partitions: %v %v", to, st, err)
			}
			for _, topic := range fixed {
				if n := partitionCount(ctx, adm, topic); n != streamstest.FixedPartitions {
					return fmt.Errorf("fixed topic %s has %d partitions, want the topology's %d", topic, n, streamstest.FixedPartitions)
				}
			}
			if h, err := a.Health(ctx); err != nil || h.State != "RUNNING" || h.EverError {
				return fmt.Errorf("after the expansion the app is %q (ever in ERROR: %v, %v), want RUNNING", h.State, h.EverError, err)
			}
			return nil
		},
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("settled_partitions"), knownvalue.Int64Exact(int64(to))),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("fixed_internal_topics"), knownvalue.SetExact(fixedChecks)),
		},
	}, {
		Config: config(to, "3m"),
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectEmptyPlan(),
		}},
	}}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: steps})
}

// heldBetween checks that the streams group coordinator still reports
// repartition topic byproduct at from while source is at to on the
// cluster: the app is read between the two counts of an expansion.
func heldBetween(ctx context.Context, adm *kadm.Client, cl *kafka.Client, appID, source, byproduct string, from, to int32) error {
	if n := partitionCount(ctx, adm, source); n != to {
		return fmt.Errorf("source %s has %d partitions, want %d after the interrupted expansion", source, n, to)
	}
	g, err := cl.DescribeStreamsGroup(ctx, appID)
	if err != nil {
		return err
	}
	if g.Topology == nil {
		return fmt.Errorf("the coordinator reports no topology for %s", appID)
	}
	var seen []string
	for _, st := range g.Topology.Subtopologies {
		for _, r := range st.RepartitionSources {
			if r.Topic == byproduct && r.Partitions == from {
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s at %d", r.Topic, r.Partitions))
		}
	}
	return fmt.Errorf("the window was not held: the coordinator reports %s, want %s at %d (the old count)", strings.Join(seen, ", "), byproduct, from)
}
