package provider_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// metadataVersion39 is the metadata.version feature level of 3.9-IV0, what
// a Kafka 3.9 cluster is formatted at; Kafka 4.0 starts at 22.
const metadataVersion39 = 21

// The compatibility subset on Kafka 3.9 (KRaft): the data source, topic
// growth, a replication factor change, and a scale-out and back in through
// the scaling API, each checked on the cluster itself as the 4.4 tests do.
// One cluster serves the subtests in this order, so the subset costs one
// cluster start: the data source reads the cluster before anything else
// touches it, and the scale runs last over what the others left.
func TestAccKafka39(t *testing.T) {
	testAccParallel(t)
	c, apiURL := withScalingAPI(t, kafkatest.StartT(t, kafkatest.Options{
		Brokers: 3, Racks: []string{"a", "b", "c"}, KafkaVersion: kafkatest.KafkaVersion39,
	}))
	assertKafka39(t, c)

	t.Run("data source", func(t *testing.T) { testKafka39DataSource(t, c) })
	t.Run("topic growth", func(t *testing.T) { testKafka39TopicGrowth(t, c) })
	t.Run("replication factor", func(t *testing.T) { testKafka39ReplicationFactor(t, c) })
	t.Run("scale out and in", func(t *testing.T) { testKafka39Scale(t, c, apiURL) })
	t.Run("no replication factor guard", func(t *testing.T) { testKafka39NoGuard(t, c) })
	// ds39's records were written before the scale-out and moved twice.
	assertTopicReadable(t, c, "ds39", ds39Records*ds39RecordSize)
}

// ds39 holds ds39Records records of ds39RecordSize bytes.
const ds39Partitions, ds39RecordsPerPartition, ds39RecordSize = 6, 200, 1024
const ds39Records = ds39Partitions * ds39RecordsPerPartition

// assertKafka39 makes sure the brokers really are 3.9: formatted at
// 3.9-IV0, and without DescribeCluster v2 (KIP-1073, Kafka 4.0), which is
// what hides fenced brokers on 3.9.
func assertKafka39(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	ctx := context.Background()
	features, err := kafkatest.FinalizedFeatures(ctx, c.Client())
	if err != nil {
		t.Fatal(err)
	}
	if mv := features["metadata.version"]; mv != metadataVersion39 {
		t.Fatalf("the cluster runs at metadata.version %d (features %v), want %d (3.9-IV0): it is not Kafka 3.9", mv, features, metadataVersion39)
	}
	// The broker's own log names the release, which also shows that 3.9
	// logs through kafkatest's log4j2 setup.
	logged, err := os.ReadFile(filepath.Join(c.Dir(), "broker-1", "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Kafka version: " + kafkatest.KafkaVersion39; !strings.Contains(string(logged), want) {
		t.Fatalf("broker 1's server.log (%d bytes) does not say %q", len(logged), want)
	}
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, c.Client())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range versions.ApiKeys {
		if k.ApiKey == kmsg.DescribeCluster.Int16() && k.MaxVersion >= 2 {
			t.Fatalf("the brokers answer DescribeCluster up to v%d; Kafka 3.9 stops at v1", k.MaxVersion)
		}
	}
}

// The data source on 3.9: every figure of a topic placed by hand, and the
// active controller from DescribeQuorum.
func testKafka39DataSource(t *testing.T, c *kafkatest.Cluster) {
	// Six partitions, RF 3, leaders rotating: each broker holds all six
	// replicas and is the preferred leader of two.
	assignment := map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}, 3: {1, 3, 2}, 4: {2, 1, 3}, 5: {3, 2, 1}}
	createTopic(t, c, "ds39", assignment)
	produceFixed(t, c, "ds39", ds39Partitions, ds39RecordsPerPartition, ds39RecordSize)
	perReplica := int64(ds39RecordsPerPartition * ds39RecordSize)

	const ds = "data.kafkascale_cluster.test"
	checks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(ds, tfjsonpath.New("cluster_id"), knownvalue.StringExact(c.ClusterID())),
		statecheck.ExpectKnownValue(ds, tfjsonpath.New("controller_id"), knownvalue.Int64Exact(int64(kafkatest.ControllerID))),
		statecheck.ExpectKnownValue(ds, tfjsonpath.New("brokers"), knownvalue.ListSizeExact(3)),
	}
	var attrChecks []resource.TestCheckFunc
	for i, b := range c.Brokers() {
		host, port := splitAddr(t, b.Addr)
		checks = append(checks, statecheck.ExpectKnownValue(ds, tfjsonpath.New("brokers").AtSliceIndex(i), knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"id":                     knownvalue.Int64Exact(int64(b.ID)),
			"host":                   knownvalue.StringExact(host),
			"port":                   knownvalue.Int64Exact(port),
			"rack":                   knownvalue.StringExact(b.Rack),
			"partition_count":        knownvalue.Int64Exact(6),
			"preferred_leader_count": knownvalue.Int64Exact(2),
			"leader_count":           knownvalue.Int64Exact(2),
		})))
		// Six replicas of perReplica payload bytes, plus headers.
		attrChecks = append(attrChecks,
			resource.TestCheckResourceAttrWith(ds, fmt.Sprintf("brokers.%d.bytes_on_disk", i), between(6*perReplica, 6*perReplica*115/100)),
			resource.TestCheckResourceAttrWith(ds, fmt.Sprintf("brokers.%d.disk_usable_bytes", i), between(1, 1<<62)))
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:            testAccProviderConfig(c.BootstrapServers(), "") + `data "kafkascale_cluster" "test" {}`,
			ConfigStateChecks: checks,
			Check:             resource.ComposeAggregateTestCheckFunc(attrChecks...),
		}},
	})
}

// Growing a keyed topic on 3.9: the new partitions go where the engine
// places them (an explicit assignment), and the plan warns with the keys it
// sampled.
func testKafka39TopicGrowth(t *testing.T, c *kafkatest.Cluster) {
	cl := topicTestClient(t, c)
	servers := c.BootstrapServers()
	rec := &warningRecorder{}
	var want []engine.Partition
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: rec.factories(),
		CheckDestroy:             checkTopicGone(c, t, "grow39"),
		Steps: []resource.TestStep{
			{
				Config: topicConfig(servers, "grow39", 4, 2, ""),
				Check: func(*terraform.State) error {
					assertTopicOnEveryBroker(t, c, "grow39", 4, 2)
					return produceKeyed(servers, "grow39", 100)
				},
			},
			{
				PreConfig: func() {
					rec.reset()
					want = expectedPlacement(t, cl, "grow39", 6, 0)
				},
				Config: topicConfig(servers, "grow39", 6, 2, ""),
				Check: func(*terraform.State) error {
					assertPlacedAsEngine(t, assertTopicOnEveryBroker(t, c, "grow39", 6, 2), want)
					return rec.expect(`^Growing a keyed topic moves keys to other partitions`, `from 4 to 6 partitions`)
				},
			},
		},
	})
}

// A replication factor change 2 → 3 on 3.9, through the executor: every
// partition gets a third replica in the third rack, fully in sync, and no
// throttle is left.
// Kafka 3.9 knows AlterPartitionReassignments v0 only, which has no guard
// against a change of replication factor (KIP-860): the question the
// executor asks the controller about a partition a broker shows on a
// move's old and new replicas together is not sent at all, since version
// 0 would drop the guard and reassign the partition. The executor then
// has only the conflict's polls of grace, as before Kafka 4.0.
func testKafka39NoGuard(t *testing.T, c *kafkatest.Cluster) {
	cl := topicTestClient(t, c)
	ctx := context.Background()
	if err := cl.CreateTopic(ctx, "guard39", map[int32][]int32{0: {1, 2, 3}}, nil); err != nil {
		t.Fatal(err)
	}
	taken, err := cl.ReassignKeepingReplicationFactor(ctx, []kafka.Assignment{{Topic: "guard39", Partition: 0, Replicas: []int32{1, 2}}})
	if !errors.Is(err, kafka.ErrNoReplicationFactorGuard) || len(taken) != 0 {
		t.Fatalf("on Kafka 3.9: taken %v, error %v; want nothing taken and ErrNoReplicationFactorGuard", taken, err)
	}
	// A broker shows a new topic a moment after the controller creates it.
	var got []int32
	for deadline := time.Now().Add(30 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		md, err := c.Admin().Metadata(ctx, "guard39")
		if err != nil {
			t.Fatal(err)
		}
		got = md.Topics["guard39"].Partitions[0].Replicas
	}
	if len(got) != 3 {
		t.Errorf("guard39 p0 is on %v; want its 3 replicas untouched", got)
	}
}

func testKafka39ReplicationFactor(t *testing.T, c *kafkatest.Cluster) {
	cl := topicTestClient(t, c)
	servers := c.BootstrapServers()
	ctx := context.Background()
	const addr = "kafkascale_topic.test"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkTopicGone(c, t, "rf39"),
		Steps: []resource.TestStep{
			{
				Config: topicConfig(servers, "rf39", 6, 2, "throttle = 10485760"),
				Check: func(*terraform.State) error {
					assertTopicOnEveryBroker(t, c, "rf39", 6, 2)
					// Data for the new replicas to copy.
					produceFixed(t, c, "rf39", 6, 200, 1024)
					return nil
				},
			},
			{
				Config: topicConfig(servers, "rf39", 6, 3, "throttle = 10485760"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("replication_factor"), knownvalue.Int64Exact(3)),
				},
				Check: func(*terraform.State) error {
					assertTopicOnEveryBroker(t, c, "rf39", 6, 3)
					assertNoThrottles(t, c)
					assertTopicReadable(t, c, "rf39", 6*200*1024)
					op, err := cl.Operations().Load(ctx, "topic/"+c.ClusterID()+"/rf39")
					if err != nil {
						return err
					}
					if op == nil || op.Phase != executor.PhaseCompleted || op.Kind != executor.KindReplicationFactor || op.Plan.ReplicaMoves != 6 {
						return fmt.Errorf("operation %+v; want a completed replication-factor change of 6 replica copies", op)
					}
					return nil
				},
			},
			{
				Config:   topicConfig(servers, "rf39", 6, 3, "throttle = 10485760"),
				PlanOnly: true,
			},
		},
	})
}

// A scale-out 3 → 4 and back to 3 through kafkascale_cluster and the HTTP
// scaling API on 3.9. Kafka 3.9 has no cordoned.log.dirs (KIP-1066, 4.3), so
// the scale-in plan says the drain is not cordoned, and the drain runs
// without one.
func testKafka39Scale(t *testing.T, c *kafkatest.Cluster, apiURL string) {
	// Every topic here is RF 3 over racks a, b, c (the operations and lease
	// topics too): the new broker 4 lands in rack a beside broker 1, and the
	// two share rack a's replicas.
	createTopicRF(t, c, "load39", 24, 3)
	fillTopic(t, c, "load39", 24<<20)
	// Large steps: the subset checks what 3.9 does, not the grouping, and
	// each group costs seconds of settling.
	rebalance := `initial_throttle = 52428800
    max_throttle     = 104857600
    max_moves_per_step   = 32
    max_moves_per_broker = 32`
	rec := &warningRecorder{}
	var partitions int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: rec.factories(),
		Steps: []resource.TestStep{
			{
				Config: clusterConfig(c.BootstrapServers(), apiURL, 3, rebalance),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_moves"), knownvalue.Int64Exact(0)),
				},
				Check: func(*terraform.State) error {
					partitions = countPartitions(t, c)
					return nil
				},
			},
			{
				Config: clusterConfig(c.BootstrapServers(), apiURL, 4, rebalance),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_moves"), knownvalue.Int64Func(func(v int64) error {
						if bound := int64(partitions / 2); v != bound {
							return fmt.Errorf("planned_moves %d, want the lower bound %d (half of rack a's %d replicas)", v, bound, partitions)
						}
						return nil
					})),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(4)),
				},
				Check: func(*terraform.State) error {
					assertScaledOut39(t, c, partitions)
					assertLeadersSpread(t, c, brokerRange(4))
					assertNoThrottles(t, c)
					assertOperationCompleted(t, c, 4)
					return nil
				},
			},
			{
				PreConfig: rec.reset,
				Config:    clusterConfig(c.BootstrapServers(), apiURL, 3, rebalance),
				Check: func(*terraform.State) error {
					op := loadOperation(t, c)
					if op.Phase != executor.PhaseCompleted || len(op.RemoveBrokers) != 1 {
						t.Fatalf("operation %+v; want a completed scale-in removing one broker", op)
					}
					if len(op.CordonedBrokers) != 0 {
						t.Errorf("the operation records cordons on %v; Kafka 3.9 cannot cordon", op.CordonedBrokers)
					}
					gone := op.RemoveBrokers[0]
					var left []int32
					for _, b := range []int32{1, 2, 3, 4} {
						if b != gone {
							left = append(left, b)
						}
					}
					assertOnlyBrokers(t, c, left)
					assertLeadersSpread(t, c, left)
					assertUnregistered39(t, c, gone)
					assertNoThrottles(t, c)
					return rec.expect(`^The drain is not cordoned`, fmt.Sprintf(`brokers \[%d\] are drained uncordoned`, gone))
				},
			},
		},
	})
	assertTopicReadable(t, c, "load39", 24<<20)
}

// assertScaledOut39 checks the assignment after 3 → 4 with racks a, b, c,
// a: brokers 2 and 3, alone in their racks, keep a replica of every
// partition; brokers 1 and 4 share rack a's within one.
func assertScaledOut39(t *testing.T, c *kafkatest.Cluster, partitions int) {
	t.Helper()
	a := readAssignment(t, c)
	if !a.racksOK {
		t.Errorf("rack spread broken: %v", a.problems)
	}
	for _, b := range []int32{2, 3} {
		if a.perBroker[b] != partitions {
			t.Errorf("broker %d, alone in its rack, holds %d replicas; with RF 3 over 3 racks it must hold all %d", b, a.perBroker[b], partitions)
		}
	}
	x, y := a.perBroker[1], a.perBroker[4]
	if x+y != partitions || x-y > 1 || y-x > 1 {
		t.Errorf("brokers 1 and 4 share rack a's %d replicas as %d and %d; want within one of each other", partitions, x, y)
	}
	t.Logf("replicas per broker %v, preferred leaders %v", a.perBroker, a.leaders)
}

// assertUnregistered39 checks that the controller no longer knows broker
// id. DescribeCluster on 3.9 lists only unfenced brokers, so a stopped
// broker whose registration was left behind would not show there; the
// controller's own answer to UnregisterBroker tells: BROKER_ID_NOT_REGISTERED.
// Had the registration stayed, this removes it, and the test fails.
func assertUnregistered39(t *testing.T, c *kafkatest.Cluster, id int32) {
	t.Helper()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(context.Background(), c.Client())
	if err != nil {
		t.Fatalf("asking the controller about broker %d: %v", id, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Errorf("broker %d was still registered after the scale-in (UnregisterBroker answered %v, want BROKER_ID_NOT_REGISTERED)", id, err)
	}
	if b := c.Brokers(); slices.ContainsFunc(b, func(x kafkatest.Broker) bool { return x.ID == id && x.Running }) {
		t.Errorf("broker %d still runs after the scale-in: %v", id, b)
	}
}
