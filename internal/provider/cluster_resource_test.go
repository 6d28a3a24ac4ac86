package provider_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// clusterConfig renders a kafkascale_cluster at brokers with the HTTP scaling
// API and rebalance's settings; extra are more of the resource's lines.
func clusterConfig(servers []string, apiURL string, brokers int, rebalance string, extra ...string) string {
	return testAccProviderConfig(servers, "") + fmt.Sprintf(`
resource "kafkascale_cluster" "test" {
  broker_count = %d
  %s
  scaling {
    http {
      endpoint   = %q
      cluster_id = "local"
      %s
    }
  }
  rebalance {
    %s
  }
}
`, brokers, strings.Join(extra, "\n  "), apiURL, scalingTokenLine("s3cret-token"), rebalance)
}

// startScalableCluster starts a real cluster with the HTTP scaling API in
// front of it, as a platform would run it.
func startScalableCluster(t *testing.T, brokers int) (*kafkatest.Cluster, string) {
	t.Helper()
	return withScalingAPI(t, kafkatest.StartT(t, kafkatest.Options{Brokers: brokers, Racks: []string{"a", "b", "c"}}))
}

// withScalingAPI serves the HTTP scaling API for c until the test ends.
func withScalingAPI(t *testing.T, c *kafkatest.Cluster) (*kafkatest.Cluster, string) {
	t.Helper()
	api := kafkatest.NewScalingAPI(c, "local", "s3cret-token")
	srv := httptest.NewServer(api)
	t.Cleanup(func() { srv.Close(); api.Close() })
	return c, srv.URL
}

// Scale 3 → 5 → 3 on a real cluster holding 200 MB over 60 partitions,
// with an idempotent producer writing throughout. Racks a, b, c, then a and
// b for the new brokers: broker 3 is the only one in rack c, so it must keep
// one replica of every partition, and balance is judged against what the
// racks allow.
func TestAccClusterResource_scaleOutAndIn(t *testing.T) {
	testAccParallel(t)
	c, apiURL := startScalableCluster(t, 3)
	ctx := context.Background()

	createTopicRF(t, c, "load", 60, 3)
	fillTopic(t, c, "load", 200<<20)
	ledger := startLedger(t, c, "ledger")

	rebalance := `initial_throttle = 52428800
    max_throttle     = 104857600
    max_moves_per_step   = 20
    max_moves_per_broker = 8`

	var partitions int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// Adopting the cluster at its current count moves nothing.
				Config: clusterConfig(c.BootstrapServers(), apiURL, 3, rebalance),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("id"), knownvalue.StringExact(c.ClusterID())),
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(3)),
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_moves"), knownvalue.Int64Exact(0)),
				},
				Check: func(*terraform.State) error {
					partitions = countPartitions(t, c) // internal topics included
					return nil
				},
			},
			{
				Config: clusterConfig(c.BootstrapServers(), apiURL, 5, rebalance),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kafkascale_cluster.test", plancheck.ResourceActionUpdate),
					// The plan shows the cost before anything moves: brokers 1
					// and 2 (racks a, b) hand half their replicas to 4 and 5
					// (racks a, b); rack c's only broker keeps all of its.
					// Each new broker needs half its rack's replicas, rounded
					// down: the fewest moves that balance the rack.
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_moves"), knownvalue.Int64Func(func(v int64) error {
						if bound := int64(2 * (partitions / 2)); v != bound {
							return fmt.Errorf("planned_moves %d, want the lower bound %d (half of %d partitions, rounded down, for each new broker)", v, bound, partitions)
						}
						return nil
					})),
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_bytes"), knownvalue.Int64Func(func(v int64) error {
						// Half of rack a's and half of rack b's replicas: one
						// topic's worth, 200 MB plus record overhead.
						if v < (200<<20)*9/10 || v > (200<<20)*12/10 {
							return fmt.Errorf("planned_bytes %d, want about 200 MB", v)
						}
						return nil
					})),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("broker_count"), knownvalue.Int64Exact(5)),
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(5)),
				},
				Check: func(*terraform.State) error {
					assertScaledOut(t, c, partitions)
					assertNoThrottles(t, c)
					assertOperationCompleted(t, c, 5)
					return nil
				},
			},
			{
				// Nothing left to do: the plan is empty.
				Config:   clusterConfig(c.BootstrapServers(), apiURL, 5, rebalance),
				PlanOnly: true,
			},
			{
				ResourceName:                         "kafkascale_cluster.test",
				ImportState:                          true,
				ImportStateId:                        c.ClusterID(),
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "id",
				ImportStateVerifyIgnore:              []string{"scaling", "rebalance", "timeouts", "planned_moves", "planned_bytes", "estimated_duration"},
			},
			{
				// The operator chooses who leaves: brokers 1 and 2, where
				// the default choice would take the newest, 4 and 5 (the
				// racks stay even either way). Exactly those leave.
				Config: clusterConfig(c.BootstrapServers(), apiURL, 3, rebalance, "remove_broker_ids = [1, 2]"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("leaving_brokers"),
						knownvalue.ListExact([]knownvalue.Check{knownvalue.Int64Exact(1), knownvalue.Int64Exact(2)})),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("brokers"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectExact(map[string]knownvalue.Check{"id": knownvalue.Int64Exact(3), "rack": knownvalue.StringExact("c")}),
						knownvalue.ObjectExact(map[string]knownvalue.Check{"id": knownvalue.Int64Exact(4), "rack": knownvalue.StringExact("b")}),
						knownvalue.ObjectExact(map[string]knownvalue.Check{"id": knownvalue.Int64Exact(5), "rack": knownvalue.StringExact("a")}),
					})),
				},
				Check: func(*terraform.State) error {
					assertOnlyBrokers(t, c, []int32{3, 4, 5})
					assertNoThrottles(t, c)
					assertOperationCompleted(t, c, 3)
					return nil
				},
			},
		},
	})

	acked := ledger.stop()
	if acked < 100 {
		t.Fatalf("the producer got only %d records acknowledged during the test; the no-loss check needs load", acked)
	}
	// Nothing is killed: verify allows no failed produce.
	ledger.verify(ctx)
	assertTopicReadable(t, c, "load", 200<<20)
}
