package provider_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// createTopicOn creates topic out of band with every partition on the
// given brokers, as a hand-written assignment would place it.
func createTopicOn(t *testing.T, c *kafkatest.Cluster, topic string, partitions int, brokers []int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range partitions {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition = int32(p)
		// Alternate the order so preferred leaders are shared.
		a.Replicas = []int32{brokers[p%len(brokers)], brokers[(p+1)%len(brokers)]}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), c.Client())
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("creating topic %s on brokers %v: %v", topic, brokers, err)
	}
}

// outOfBalance reads the cluster and says what engine.OutOfBalance finds.
func outOfBalance(t *testing.T, c *kafkatest.Cluster) []string {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	snap, err := cl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reasons, _, err := engine.OutOfBalance(kafka.EngineCluster(snap), engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return reasons
}

// Topics placed out of band on brokers 1 and 2 of 4. With keep_balanced
// set, the plan shows an in-place update with the moves, the apply
// balances the cluster without changing its broker count, and the next
// plan is empty.
func TestAccClusterResource_keepBalancedRebalancesInPlace(t *testing.T) {
	testAccParallel(t)
	c, apiURL := startScalableCluster(t, 4)
	servers := c.BootstrapServers()
	createTopicOn(t, c, "skewed", 24, []int32{1, 2})
	fillTopic(t, c, "skewed", 24<<20)
	if reasons := outOfBalance(t, c); len(reasons) == 0 {
		t.Fatal("the cluster is not out of balance before the test: it proves nothing")
	}
	kept := clusterConfig(servers, apiURL, 4, "keep_balanced = true\n    initial_throttle = 52428800")

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: clusterConfig(servers, apiURL, 4, ""),
				Check: func(*terraform.State) error {
					if reasons := outOfBalance(t, c); len(reasons) == 0 {
						return fmt.Errorf("a cluster not kept balanced was balanced anyway")
					}
					return nil
				},
			},
			{
				Config: kept,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kafkascale_cluster.test", plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_moves"), knownvalue.Int64Func(func(v int64) error {
						if v == 0 {
							return fmt.Errorf("planned_moves 0; the plan must show the moves")
						}
						return nil
					})),
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("broker_count"), knownvalue.Int64Exact(4)),
				}},
				Check: func(*terraform.State) error {
					if reasons := outOfBalance(t, c); len(reasons) > 0 {
						return fmt.Errorf("still out of balance after the apply: %v", reasons)
					}
					assertOnlyBrokers(t, c, brokerRange(4))
					assertNoThrottles(t, c)
					held := map[int32]int{}
					rs, _ := replicasByPartition(t, c)
					for _, replicas := range rs {
						for _, b := range replicas {
							held[b]++
						}
					}
					if held[3] == 0 || held[4] == 0 {
						return fmt.Errorf("replicas per broker after the rebalance: %v; brokers 3 and 4 hold none", held)
					}
					t.Logf("replicas per broker after the rebalance: %v", held)
					return nil
				},
			},
			{Config: kept, PlanOnly: true},
		},
	})
	assertTopicReadable(t, c, "skewed", 24<<20)
}
