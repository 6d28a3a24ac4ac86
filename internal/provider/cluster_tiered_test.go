package provider_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// The tiered topic of TestAccClusterResource_tieredScaleOut, at the size
// the issue of tiered storage asked for: 192 MiB in 6 partitions of RF 2,
// in segments of 1 MiB (Kafka 4's smallest), of which the brokers keep 3
// MiB and the active segment, about 20 MiB on the leaders' disks: most of
// each partition lives in remote storage only.
const (
	archiveTopic          = "archive"
	archivePartitions     = 6
	archiveBytes          = 192 << 20
	archiveSegmentBytes   = 1 << 20
	archiveLocalRetention = 3 << 20
)

// A scale-out of a tiered cluster copies, and plans, only the local logs
// of the tiered topic, not what is in remote storage (issue 39): 3 -> 5
// brokers without KIP-1023, where a new replica copies its leader's local
// log, then 5 -> 7 with follower.fetch.last.tiered.offset.enable, where it
// copies only what is not tiered yet. Each time planned_bytes is within
// 25% of what the new replicas hold once the apply is done, and far below
// the moved partitions' whole size. An acks=all producer writes to a
// tiered topic during the first scale-out, and every record it got
// acknowledged reads back from offset 0 afterwards, the old ones from
// remote storage, as does the whole archive; no throttle stays.
func TestAccClusterResource_tieredScaleOut(t *testing.T) {
	testAccParallel(t)
	began := time.Now()
	c, apiURL := withScalingAPI(t, kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}, Tiered: &kafkatest.TieredOptions{}}))
	createTieredTopic(t, c, archiveTopic, archivePartitions, 2, map[string]string{
		"segment.bytes":         strconv.Itoa(archiveSegmentBytes),
		"local.retention.bytes": strconv.Itoa(archiveLocalRetention),
	})
	fillTopic(t, c, archiveTopic, archiveBytes)
	local, remote := waitArchiveTiered(t, c)
	t.Logf("%s: %s written, %s on its leaders' disks, %s in remote storage; cluster ready in %v",
		archiveTopic, mibs(archiveBytes), mibs(local), mibs(remote), time.Since(began).Round(time.Second))

	// The ledger's topic tiers too, rolling a segment every 2s and keeping
	// none of the rolled ones locally past a second: the records acked
	// early in the test are read back from remote storage.
	createTieredTopic(t, c, "ledger", 6, 3, map[string]string{"segment.ms": "2000", "local.retention.ms": "1000"})
	ledger := runLedger(t, c, "ledger")

	rebalance := `initial_throttle = 52428800
    max_moves_per_step   = 20
    max_moves_per_broker = 8`
	counts := [2]int{5, 7}
	var planned [2]int64
	var before [2]map[replicaKey]int64
	var copied, whole [2]int64
	var eta [2]string
	var started [2]time.Time
	plannedBytes := func(i int) []plancheck.PlanCheck {
		return []plancheck.PlanCheck{
			plancheck.ExpectResourceAction("kafkascale_cluster.test", plancheck.ResourceActionUpdate),
			plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_bytes"), knownvalue.Int64Func(func(v int64) error {
				planned[i] = v
				return nil
			})),
			plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("estimated_duration"), knownvalue.StringFunc(func(v string) error {
				eta[i] = v
				return nil
			})),
		}
	}
	beforeMove := func(i int) {
		before[i] = replicaSizes(t, c)
		logTieredSnapshot(t, c)
		started[i] = time.Now()
	}
	checkCopied := func(i int, what string) func(*terraform.State) error {
		return func(*terraform.State) error {
			assertOperationCompleted(t, c, counts[i])
			copied[i], whole[i] = newReplicaBytes(t, c, before[i])
			t.Logf("%s: planned_bytes %s, the new replicas hold %s (their partitions' local logs held %s before); estimated %s, took %v from the plan to the end of the apply",
				what, mibs(planned[i]), mibs(copied[i]), mibs(whole[i]), eta[i], time.Since(started[i]).Round(time.Second))
			if d := planned[i] - copied[i]; d < -copied[i]/4 || d > copied[i]/4 {
				t.Errorf("%s: planned_bytes %d (%s), the new replicas hold %d (%s): want within 25%%", what, planned[i], mibs(planned[i]), copied[i], mibs(copied[i]))
			}
			// What a plan blind to tiering would count: the moved
			// partitions' whole size, remote segments included.
			if moved := int64(newReplicasOf(t, c, before[i], archiveTopic)) * archiveBytes / archivePartitions; planned[i] > moved/4 {
				t.Errorf("%s: planned_bytes %s for partitions of %s in all: want under a quarter, since most of it stays in remote storage", what, mibs(planned[i]), mibs(moved))
			}
			assertNoThrottles(t, c)
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// The preview of the first scale-out: most of what the
				// moved partitions hold stays in remote storage, and the
				// data source says how much.
				Config: clusterConfig(c.BootstrapServers(), apiURL, 3, rebalance) + `
data "kafkascale_rebalance_plan" "five" { broker_count = 5 }`,
				Check: func(st *terraform.State) error {
					a := st.RootModule().Resources["data.kafkascale_rebalance_plan.five"].Primary.Attributes
					pb, _ := strconv.ParseInt(a["planned_bytes"], 10, 64)
					rb, _ := strconv.ParseInt(a["remote_bytes"], 10, 64)
					t.Logf("data.kafkascale_rebalance_plan at 5 brokers: planned_bytes %s, remote_bytes %s", mibs(pb), mibs(rb))
					if pb <= 0 || rb < 4*pb {
						return fmt.Errorf("planned_bytes %d, remote_bytes %d: want the moved partitions' remote segments, at least 4 times their local logs, in remote_bytes", pb, rb)
					}
					return nil
				},
			},
			{
				PreConfig:        func() { beforeMove(0) },
				Config:           clusterConfig(c.BootstrapServers(), apiURL, 5, rebalance),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: plannedBytes(0)},
				Check:            checkCopied(0, "3 -> 5 brokers without KIP-1023"),
			},
			{
				PreConfig: func() {
					// The ledger keeps writing through this scale-out, and
					// must: on Kafka 4.4 with KIP-1023 on, a new follower
					// asks the leader where uploads stand, and the leader of
					// an idle tiered partition could not say ("Segments are
					// uploaded to remote storage, but the leader does not
					// know the earliest pending upload offset"). The follower
					// retries that for as long as nothing is written: with
					// the ledger stopped here, the new replicas of its six
					// partitions waited minutes, until a record written by
					// hand let them start. Its writes since the plan are a
					// few KiB against the MiB planned.
					setClusterConfig(t, c, kafka.ConfigFollowerFetchLastTieredOffset, "true")
					beforeMove(1)
				},
				Config:           clusterConfig(c.BootstrapServers(), apiURL, 7, rebalance),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: plannedBytes(1)},
				Check:            checkCopied(1, "5 -> 7 brokers with KIP-1023"),
			},
		},
	})
	ledger.stop()
	ledger.verify(context.Background())
	assertTopicReadable(t, c, archiveTopic, archiveBytes)
	t.Logf("tiered scale-out: %s written to %s (%s local, %s remote); without KIP-1023 planned %s, copied %s (local logs %s); with KIP-1023 planned %s, copied %s (local logs %s); %v in all",
		mibs(archiveBytes), archiveTopic, mibs(local), mibs(remote), mibs(planned[0]), mibs(copied[0]), mibs(whole[0]),
		mibs(planned[1]), mibs(copied[1]), mibs(whole[1]), time.Since(began).Round(time.Second))
	if copied[1] >= copied[0] {
		t.Errorf("with KIP-1023 the new replicas copied %s, without it %s: want less", mibs(copied[1]), mibs(copied[0]))
	}
}

func mibs(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// createTieredTopic creates topic with remote.storage.enable and configs.
func createTieredTopic(t *testing.T, c *kafkatest.Cluster, topic string, partitions int32, rf int16, configs map[string]string) {
	t.Helper()
	cfg := map[string]*string{kafka.ConfigRemoteStorageEnable: kadm.StringPtr("true")}
	for k, v := range configs {
		cfg[k] = kadm.StringPtr(v)
	}
	resp, err := c.Admin().CreateTopic(context.Background(), partitions, rf, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating tiered topic %s: %v", topic, err)
	}
}

// waitArchiveTiered waits until every replica of the archive keeps at
// most its local retention and the active segment, and returns what its
// leaders hold locally and what remote storage holds of it.
func waitArchiveTiered(t *testing.T, c *kafkatest.Cluster) (local, remote int64) {
	t.Helper()
	return waitTiered(t, c, archiveTopic, archiveLocalRetention+archiveSegmentBytes)
}

// waitTiered is kafkatest's WaitTiered within 3 minutes.
func waitTiered(t *testing.T, c *kafkatest.Cluster, topic string, maxLocal int64) (local, remote int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	local, remote, err := c.WaitTiered(ctx, topic, maxLocal)
	if err != nil {
		t.Fatal(err)
	}
	return local, remote
}

type replicaKey struct {
	broker    int32
	topic     string
	partition int32
}

// replicaSizes reads the size of every replica on the brokers' disks.
func replicaSizes(t *testing.T, c *kafkatest.Cluster) map[replicaKey]int64 {
	t.Helper()
	dirs, err := c.Admin().DescribeAllLogDirs(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[replicaKey]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			t.Fatalf("broker %d, log dir %s: %v", d.Broker, d.Dir, d.Err)
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if !p.IsFuture {
				out[replicaKey{d.Broker, p.Topic, p.Partition}] += p.Size
			}
		})
	})
	return out
}

// newReplicaBytes adds up what the replicas not in before hold (what the
// moves copied, and what was written to them since) and what the largest
// replica of their partition held in before: the local log a plan that
// knew nothing of KIP-1023 would have counted.
func newReplicaBytes(t *testing.T, c *kafkatest.Cluster, before map[replicaKey]int64) (copied, local int64) {
	t.Helper()
	largest := map[replicaKey]int64{}
	for k, s := range before {
		p := replicaKey{topic: k.topic, partition: k.partition}
		largest[p] = max(largest[p], s)
	}
	for k, s := range replicaSizes(t, c) {
		if _, ok := before[k]; !ok {
			copied += s
			local += largest[replicaKey{topic: k.topic, partition: k.partition}]
		}
	}
	return copied, local
}

// newReplicasOf counts topic's replicas that are not in before.
func newReplicasOf(t *testing.T, c *kafkatest.Cluster, before map[replicaKey]int64, topic string) int {
	t.Helper()
	n := 0
	for k := range replicaSizes(t, c) {
		if _, ok := before[k]; !ok && k.topic == topic {
			n++
		}
	}
	return n
}

// logTieredSnapshot logs what the provider's read of the cluster counts
// of the archive: its local size, what a new replica copies, and what
// stays in remote storage. Every archive partition must have some in
// remote storage: the estimate counts a new replica's start from there
// (engine.TieredStartTime).
func logTieredSnapshot(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s, err := cl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var size, copyBytes, remote int64
	for _, p := range s.Partitions {
		if p.Topic == archiveTopic {
			size, copyBytes, remote = size+p.SizeBytes, copyBytes+p.CopyBytes, remote+p.RemoteBytes
			if p.RemoteBytes <= 0 {
				t.Errorf("%s p%d: %d bytes in remote storage, want some: its first segments are there only", p.Topic, p.Partition, p.RemoteBytes)
			}
		}
	}
	t.Logf("the snapshot counts of %s: %s local, %s to copy for a new replica of each partition, %s in remote storage and not copied",
		archiveTopic, mibs(size), mibs(copyBytes), mibs(remote))
}

// setClusterConfig is kafkatest's SetClusterConfig within a minute.
func setClusterConfig(t *testing.T, c *kafkatest.Cluster, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.SetClusterConfig(ctx, key, value); err != nil {
		t.Fatal(err)
	}
}
