package provider_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// The data source is checked field by field against a cluster whose every
// replica this test placed itself, so the expected figures are known
// without asking the code under test.
func TestAccClusterDataSource(t *testing.T) {
	testAccParallel(t)
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}})

	// Six partitions, RF 2: every broker holds 4 replicas and is the
	// preferred leader of 2.
	assignment := map[int32][]int32{0: {1, 2}, 1: {2, 3}, 2: {3, 1}, 3: {1, 3}, 4: {2, 1}, 5: {3, 2}}
	createTopic(t, c, "ds-test", assignment)

	const recordsPerPartition, recordSize = 500, 1024
	produceFixed(t, c, "ds-test", len(assignment), recordsPerPartition, recordSize)
	perReplica := int64(recordsPerPartition * recordSize)

	brokerChecks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue("data.kafkascale_cluster.test", tfjsonpath.New("cluster_id"), knownvalue.StringExact(c.ClusterID())),
		statecheck.ExpectKnownValue("data.kafkascale_cluster.test", tfjsonpath.New("id"), knownvalue.StringExact(c.ClusterID())),
		statecheck.ExpectKnownValue("data.kafkascale_cluster.test", tfjsonpath.New("controller_id"), knownvalue.Int64Exact(int64(kafkatest.ControllerID))),
		statecheck.ExpectKnownValue("data.kafkascale_cluster.test", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(3)),
	}
	for i, b := range c.Brokers() {
		host, port := splitAddr(t, b.Addr)
		brokerChecks = append(brokerChecks, statecheck.ExpectKnownValue("data.kafkascale_cluster.test",
			tfjsonpath.New("brokers").AtSliceIndex(i), knownvalue.ObjectPartial(map[string]knownvalue.Check{
				"id":                     knownvalue.Int64Exact(int64(b.ID)),
				"host":                   knownvalue.StringExact(host),
				"port":                   knownvalue.Int64Exact(port),
				"rack":                   knownvalue.StringExact(b.Rack),
				"partition_count":        knownvalue.Int64Exact(4),
				"preferred_leader_count": knownvalue.Int64Exact(2),
				"leader_count":           knownvalue.Int64Exact(2),
			})))
	}

	var attrChecks []resource.TestCheckFunc
	for i := range c.Brokers() {
		prefix := fmt.Sprintf("brokers.%d.", i)
		// Four replicas of perReplica payload bytes each, plus record and
		// batch headers, which stay well under 15% at 1 KiB records.
		attrChecks = append(attrChecks,
			resource.TestCheckResourceAttrWith("data.kafkascale_cluster.test", prefix+"bytes_on_disk", between(4*perReplica, 4*perReplica*115/100)),
			resource.TestCheckResourceAttrWith("data.kafkascale_cluster.test", prefix+"disk_total_bytes", between(1<<20, 1<<62)),
			resource.TestCheckResourceAttrWith("data.kafkascale_cluster.test", prefix+"disk_usable_bytes", between(1, 1<<62)),
		)
	}

	// The plan preview on the same cluster: 12 replicas over 4 brokers is
	// 3 each, so the predicted broker 4 receives 3 and nothing else moves.
	planChecks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.four", tfjsonpath.New("planned_moves"), knownvalue.Int64Exact(3)),
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.four", tfjsonpath.New("lower_bound"), knownvalue.Int64Exact(3)),
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.four", tfjsonpath.New("add_brokers"), knownvalue.ListExact([]knownvalue.Check{knownvalue.Int64Exact(4)})),
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.four", tfjsonpath.New("planned_bytes"), knownvalue.Int64Func(func(v int64) error {
			if v < 3*perReplica || v > 3*perReplica*115/100 {
				return fmt.Errorf("planned_bytes %d, want three replicas of about %d bytes", v, perReplica)
			}
			return nil
		})),
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.four", tfjsonpath.New("moves"), knownvalue.ListSizeExact(3)),
		// No topic here is tiered.
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.four", tfjsonpath.New("remote_bytes"), knownvalue.Int64Exact(0)),
	}
	for i := 0; i < 4; i++ {
		planChecks = append(planChecks, statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.four",
			tfjsonpath.New("brokers").AtSliceIndex(i).AtMapKey("replicas_after"), knownvalue.Int64Exact(3)))
	}
	// max_moves cuts the list, not the figures: the per-broker traffic
	// still sums every move, and a warning says how to list them all.
	cutChecks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.cut", tfjsonpath.New("planned_moves"), knownvalue.Int64Exact(3)),
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.cut", tfjsonpath.New("moves"), knownvalue.ListSizeExact(1)),
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.cut", tfjsonpath.New("brokers").AtSliceIndex(3).AtMapKey("moves_in"), knownvalue.Int64Exact(3)),
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.cut", tfjsonpath.New("brokers").AtSliceIndex(3).AtMapKey("moves_out"), knownvalue.Int64Exact(0)),
		statecheck.ExpectKnownValue("data.kafkascale_rebalance_plan.cut", tfjsonpath.New("brokers").AtSliceIndex(3).AtMapKey("bytes_in"),
			knownvalue.Int64Func(func(v int64) error {
				if v < 3*perReplica || v > 3*perReplica*115/100 {
					return fmt.Errorf("bytes_in %d, want three replicas of about %d bytes", v, perReplica)
				}
				return nil
			})),
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            testAccProviderConfig(c.BootstrapServers(), "") + `data "kafkascale_cluster" "test" {}`,
				ConfigStateChecks: brokerChecks,
				Check:             resource.ComposeAggregateTestCheckFunc(attrChecks...),
			},
			{
				Config:            testAccProviderConfig(c.BootstrapServers(), "") + `data "kafkascale_rebalance_plan" "four" { broker_count = 4 }`,
				ConfigStateChecks: planChecks,
				Check: func(st *terraform.State) error {
					rs := st.RootModule().Resources["data.kafkascale_rebalance_plan.four"].Primary.Attributes
					for i := 0; i < 3; i++ {
						added := false
						for j := 0; j < 2; j++ {
							added = added || rs[fmt.Sprintf("moves.%d.new_replicas.%d", i, j)] == "4"
						}
						if !added {
							return fmt.Errorf("move %d does not land on the new broker 4: %v", i, rs)
						}
					}
					return nil
				},
			},
			{
				Config: testAccProviderConfig(c.BootstrapServers(), "") + `data "kafkascale_rebalance_plan" "cut" {
  broker_count = 4
  max_moves    = 1
}`,
				ConfigStateChecks: cutChecks,
				Check: func(st *terraform.State) error {
					// Three moves of three partitions: the ones out of
					// brokers 1 to 3 add up to the three into broker 4.
					rs := st.RootModule().Resources["data.kafkascale_rebalance_plan.cut"].Primary.Attributes
					out := 0
					for i := 0; i < 3; i++ {
						n, err := strconv.Atoi(rs[fmt.Sprintf("brokers.%d.moves_out", i)])
						if err != nil {
							return err
						}
						out += n
					}
					if out != 3 {
						return fmt.Errorf("brokers 1-3 give up %d replicas, want 3: %v", out, rs)
					}
					n, _ := strconv.Atoi(rs["warnings.#"])
					for i := 0; i < n; i++ {
						if strings.Contains(rs[fmt.Sprintf("warnings.%d", i)], "moves lists the first 1 of the plan's 3 moves") &&
							strings.Contains(rs[fmt.Sprintf("warnings.%d", i)], "set max_moves to at least 3") {
							return nil
						}
					}
					return fmt.Errorf("no warning says the list of moves was cut: %v", rs)
				},
			},
			{
				Config:      testAccProviderConfig(c.BootstrapServers(), "") + `data "kafkascale_rebalance_plan" "one" { broker_count = 1 }`,
				ExpectError: wrapped(`(?s)This change of brokers cannot be made.*leaves 1 brokers, fewer than the replication factor 2`),
			},
		},
	})
	assertUntouched(t, c, 3)
}

func produceFixed(t *testing.T, c *kafkatest.Cluster, topic string, partitions, perPartition, size int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	payload := []byte(strings.Repeat("x", size))
	var rs []*kgo.Record
	for p := 0; p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(p), Value: payload})
		}
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
}

func splitAddr(t *testing.T, addr string) (string, int64) {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	port, err := strconv.ParseInt(addr[i+1:], 10, 64)
	if err != nil {
		t.Fatalf("broker address %q: %v", addr, err)
	}
	return addr[:i], port
}

// between checks that an integer attribute lies in [lo, hi].
func between(lo, hi int64) resource.CheckResourceAttrWithFunc {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return err
		}
		if n < lo || n > hi {
			return fmt.Errorf("%d is outside [%d, %d]", n, lo, hi)
		}
		return nil
	}
}
