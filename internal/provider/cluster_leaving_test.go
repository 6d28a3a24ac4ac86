package provider_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// Five brokers over racks a, a, a, b, c shrunk to four with no broker
// named. Removing the highest id would empty rack c, and RF-3 partitions
// could no longer span three racks; the default choice keeps the racks as
// even as the count allows, taking a broker of rack a (of those, the one
// with clearly fewer bytes to move, then the highest id). The plan shows it
// in leaving_brokers, and the apply removes exactly it, every partition
// still over three racks.
func TestAccClusterResource_defaultChoiceKeepsRacksEven(t *testing.T) {
	testAccParallel(t)
	c, apiURL := withScalingAPI(t, kafkatest.StartT(t, kafkatest.Options{Brokers: 5, Racks: []string{"a", "a", "a", "b", "c"}}))
	servers := c.BootstrapServers()
	createTopicRF(t, c, "spread", 12, 3)
	fillTopic(t, c, "spread", 12<<20)
	rack := map[int32]string{1: "a", 2: "a", 3: "a", 4: "b", 5: "c"}
	var leaving int32

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: clusterConfig(servers, apiURL, 5, "initial_throttle = 52428800")},
			{
				Config: clusterConfig(servers, apiURL, 4, "initial_throttle = 52428800"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("leaving_brokers"),
						knownvalue.ListExact([]knownvalue.Check{knownvalue.Int64Func(func(v int64) error {
							if leaving = int32(v); rack[leaving] != "a" {
								return fmt.Errorf("broker %d of rack %q leaves; want one of rack a, which has three", v, rack[leaving])
							}
							return nil
						})})),
				}},
				Check: func(*terraform.State) error {
					var stay []int32
					for _, b := range []int32{1, 2, 3, 4, 5} {
						if b != leaving {
							stay = append(stay, b)
						}
					}
					assertOnlyBrokers(t, c, stay)
					assertNoThrottles(t, c)
					rs, _ := replicasByPartition(t, c)
					for p, replicas := range rs {
						racks := map[string]bool{}
						for _, b := range replicas {
							racks[rack[b]] = true
						}
						if len(replicas) == 3 && len(racks) != 3 {
							return fmt.Errorf("%s has replicas %v over racks %v; want three racks", p, replicas, racks)
						}
					}
					return nil
				},
			},
			{Config: clusterConfig(servers, apiURL, 4, "initial_throttle = 52428800"), PlanOnly: true},
		},
	})
	assertTopicReadable(t, c, "spread", 12<<20)
}
