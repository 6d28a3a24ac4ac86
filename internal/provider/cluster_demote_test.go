package provider_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// Broker 2 of four is demoted under acks=all load, then no longer. The
// plan of the demotion moves no data (planned_moves and planned_bytes 0);
// after its apply broker 2 is neither the preferred nor the actual leader
// of any partition, every partition keeps its replicas, no throttle is
// left, and the next plan is empty. Taken off demote_broker_ids, broker 2
// leads its share again, within one of the mean, again moving no data.
// Nothing acknowledged is lost.
func TestAccClusterResource_demoteBroker(t *testing.T) {
	testAccParallel(t)
	c, apiURL := startScalableCluster(t, 4)
	servers := c.BootstrapServers()
	createTopicRF(t, c, "spread", 24, 2)
	fillTopic(t, c, "spread", 4<<20)
	ledger := startLedger(t, c, "load")
	const rebalance = "initial_throttle = 52428800"
	zero := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
		plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_moves"), knownvalue.Int64Exact(0)),
		plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_bytes"), knownvalue.Int64Exact(0)),
	}}
	var before map[string][]int32

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: clusterConfig(servers, apiURL, 4, rebalance),
				Check: func(*terraform.State) error {
					before, _ = replicasByPartition(t, c)
					return nil
				},
			},
			{
				Config:           clusterConfig(servers, apiURL, 4, rebalance, "demote_broker_ids = [2]"),
				ConfigPlanChecks: zero,
				Check: func(*terraform.State) error {
					assertSameMembers(t, c, before)
					if led := ledBy(t, c, 2); len(led) > 0 {
						return fmt.Errorf("after the demotion, broker 2 still leads %d partitions: %v", len(led), led)
					}
					assertNoThrottles(t, c)
					return nil
				},
			},
			{Config: clusterConfig(servers, apiURL, 4, rebalance, "demote_broker_ids = [2]"), PlanOnly: true},
			{
				Config:           clusterConfig(servers, apiURL, 4, rebalance),
				ConfigPlanChecks: zero,
				Check: func(*terraform.State) error {
					assertSameMembers(t, c, before)
					assertLeadershipWithinOne(t, c, []int32{1, 2, 3, 4})
					assertNoThrottles(t, c)
					return nil
				},
			},
			{Config: clusterConfig(servers, apiURL, 4, rebalance), PlanOnly: true},
		},
	})
	ledger.stop()
	ledger.verify(context.Background())
}

// ledBy lists the partitions of more than one replica whose preferred
// leader (first replica) or actual leader is broker b.
func ledBy(t *testing.T, c *kafkatest.Cluster, b int32) []string {
	t.Helper()
	var out []string
	eachPartition(t, c, func(topic string, p kadm.PartitionDetail) {
		if len(p.Replicas) > 1 && (p.Replicas[0] == b || p.Leader == b) {
			out = append(out, fmt.Sprintf("%s p%d replicas %v leader %d", topic, p.Partition, p.Replicas, p.Leader))
		}
	})
	return out
}

// assertSameMembers checks that every partition in before still has the
// same replicas, in any order: no data moved.
func assertSameMembers(t *testing.T, c *kafkatest.Cluster, before map[string][]int32) {
	t.Helper()
	now, _ := replicasByPartition(t, c)
	for k, was := range before {
		a, b := slices.Sorted(slices.Values(was)), slices.Sorted(slices.Values(now[k]))
		if !slices.Equal(a, b) {
			t.Errorf("%s moved: replicas %v, before %v", k, now[k], was)
		}
	}
}

// assertLeadershipWithinOne checks that each broker is the preferred
// leader of within one partition of the mean over all partitions.
func assertLeadershipWithinOne(t *testing.T, c *kafkatest.Cluster, brokers []int32) {
	t.Helper()
	leaders, _, total := preferredLeaders(t, c)
	mean := float64(total) / float64(len(brokers))
	for _, b := range brokers {
		if d := math.Abs(float64(leaders[b]) - mean); d > 1 {
			t.Errorf("broker %d is the preferred leader of %d partitions, %.2f from the mean %.2f; want within 1", b, leaders[b], d, mean)
		}
	}
}
