package provider_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// Seven brokers over racks a, a, a, b, b, c, c shrunk to five with no
// broker named. Removing the highest ids would empty rack c, and RF-3
// partitions could no longer span three racks; the default choice keeps
// the racks as even as the count allows (2, 2, 1), taking two brokers of
// rack a (of those, the ones with clearly fewer bytes to move, then the
// highest ids). The plan shows them in leaving_brokers, and the apply
// removes exactly them, every RF-3 partition still over three racks.
//
// The broker left alone in rack a then holds a replica of every RF-3
// partition, far more than the others; that is forced by the racks. Its
// preferred leaderships are not: every partition has two other replicas
// that can lead. So preferred leaders must end within one of the mean on
// every broker, and the lone broker at or below the mean.
func TestAccClusterResource_defaultChoiceKeepsRacksEven(t *testing.T) {
	testAccParallel(t)
	racks := []string{"a", "a", "a", "b", "b", "c", "c"}
	c, apiURL := withScalingAPI(t, kafkatest.StartT(t, kafkatest.Options{Brokers: len(racks), Racks: racks}))
	servers := c.BootstrapServers()
	createTopicRF(t, c, "spread", 24, 3)
	createTopicRF(t, c, "pairs", 12, 2)
	fillTopic(t, c, "spread", 12<<20)
	rack := map[int32]string{}
	for i, r := range racks {
		rack[int32(i+1)] = r
	}
	var leaving []int32

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: clusterConfig(servers, apiURL, 7, "initial_throttle = 52428800")},
			{
				Config: clusterConfig(servers, apiURL, 5, "initial_throttle = 52428800"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("leaving_brokers"),
						knownvalue.ListPartial(map[int]knownvalue.Check{
							0: leavingFromRackA(rack, &leaving),
							1: leavingFromRackA(rack, &leaving),
						})),
				}},
				Check: func(*terraform.State) error {
					if len(leaving) != 2 {
						return fmt.Errorf("the plan named %v as leaving; want two brokers", leaving)
					}
					var stay []int32
					for b := int32(1); b <= int32(len(racks)); b++ {
						if !slices.Contains(leaving, b) {
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
					assertLeadersSpareTheLoneBroker(t, c, stay, rack)
					return nil
				},
			},
			{Config: clusterConfig(servers, apiURL, 5, "initial_throttle = 52428800"), PlanOnly: true},
		},
	})
	assertTopicReadable(t, c, "spread", 12<<20)
}

// leavingFromRackA checks one id of leaving_brokers: it must be of rack a,
// the only rack with brokers to spare. It records the id in leaving.
func leavingFromRackA(rack map[int32]string, leaving *[]int32) knownvalue.Check {
	return knownvalue.Int64Func(func(v int64) error {
		if rack[int32(v)] != "a" {
			return fmt.Errorf("broker %d of rack %q leaves; want one of rack a, which has three", v, rack[int32(v)])
		}
		if !slices.Contains(*leaving, int32(v)) {
			*leaving = append(*leaving, int32(v))
		}
		return nil
	})
}

// assertLeadersSpareTheLoneBroker reads the live cluster: over every
// partition, each broker of stay is the preferred leader (first replica)
// of within one of the mean, and the broker alone in its rack, which holds
// the most replicas, of no more than the mean.
func assertLeadersSpareTheLoneBroker(t *testing.T, c *kafkatest.Cluster, stay []int32, rack map[int32]string) {
	t.Helper()
	leaders, replicas, total := preferredLeaders(t, c)
	mean := float64(total) / float64(len(stay))
	perRack := map[string]int{}
	for _, b := range stay {
		perRack[rack[b]]++
	}
	for _, b := range stay {
		n := leaders[b]
		if math.Abs(float64(n)-mean) > 1 {
			t.Errorf("broker %d (rack %s) is the preferred leader of %d partitions, %.2f from the mean %.2f; want within 1",
				b, rack[b], n, math.Abs(float64(n)-mean), mean)
		}
		if perRack[rack[b]] == 1 && float64(n) > mean {
			t.Errorf("broker %d, alone in rack %s with %d replicas, is the preferred leader of %d partitions, above the mean %.2f by %.2f",
				b, rack[b], replicas[b], n, mean, float64(n)-mean)
		}
	}
	t.Logf("preferred leaders per broker %v, replicas %v, mean leadership %.2f", leaders, replicas, mean)
}
