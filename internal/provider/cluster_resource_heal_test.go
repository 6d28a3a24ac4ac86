package provider_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// healConfig renders a kafkascale_cluster with remove_broker_ids (none when
// remove is empty) and a throttle low enough that the healing copies run
// while the ledger writes.
func healConfig(servers []string, apiURL string, brokers int, remove string) string {
	line := ""
	if remove != "" {
		line = "remove_broker_ids = " + remove
	}
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
    initial_throttle = 10485760
    min_throttle     = 1048576
  }
}
`, brokers, line, apiURL, scalingTokenLine("s3cret-token"))
}

// deadBrokerCluster is 4 brokers in racks a, b, c, a, every topic at
// min.insync.replicas 2, with 24 RF-3 partitions of data and an acks=all
// ledger writing throughout.
type deadBrokerCluster struct {
	c      *kafkatest.Cluster
	apiURL string
	ledger *ledger
}

// With reuseIDs, the platform replaces a dead broker by starting it again
// under its id on an empty disk.
func startDeadBrokerCluster(t *testing.T, reuseIDs bool) *deadBrokerCluster {
	t.Helper()
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 4, Racks: []string{"a", "b", "c"},
		BrokerProperties: map[string]string{"min.insync.replicas": "2"}})
	api := kafkatest.NewScalingAPI(c, "local", "s3cret-token")
	api.ReuseIDs = reuseIDs
	srv := httptest.NewServer(api)
	t.Cleanup(func() { srv.Close(); api.Close() })
	createTopicRF(t, c, "load", 24, 3)
	fillTopic(t, c, "load", 48<<20)
	return &deadBrokerCluster{c: c, apiURL: srv.URL, ledger: startLedger(t, c, "ledger")}
}

// killForGood waits until the ledger has acknowledged records, SIGKILLs the
// broker, never to restart it, and waits until the controller fences it and
// the partitions it held are under-replicated.
func (d *deadBrokerCluster) killForGood(t *testing.T, id int32) {
	t.Helper()
	waitFor(t, "the ledger's first acknowledged records", func() bool { return d.ledger.ackedCount() >= 50 })
	d.ledger.allowFailures(0, fmt.Sprintf("broker %d dies, but every partition keeps 2 of its 3 replicas in sync, "+
		"min.insync.replicas is 2, and a new leader is elected within seconds: no produce waits 2 minutes", id))
	if err := d.c.KillBroker(id); err != nil {
		t.Fatalf("killing broker %d: %v", id, err)
	}
	waitFor(t, fmt.Sprintf("broker %d fenced", id), func() bool {
		regs, err := kafkatest.DescribeCluster(context.Background(), d.c.Client())
		return err == nil && slices.ContainsFunc(regs, func(r kafkatest.RegisteredBroker) bool { return r.ID == id && r.Fenced })
	})
	// The broker that answers the metadata read can show the fencing
	// before the ISR shrinks that follow it in the metadata log.
	var under []string
	waitFor(t, fmt.Sprintf("the partitions of broker %d under-replicated", id), func() bool {
		under = underReplicated(t, d.c)
		return len(under) > 0
	})
	t.Logf("broker %d is dead: %d partitions under-replicated, %d records acknowledged so far", id, len(under), d.ledger.ackedCount())
}

// assertNothingLost stops the ledger and checks that it acknowledged
// records, that every one of them reads back, and that the data topic is
// whole.
func (d *deadBrokerCluster) assertNothingLost(t *testing.T) {
	t.Helper()
	if n := d.ledger.stop(); n == 0 {
		t.Fatal("the ledger acknowledged nothing: there was no load to lose")
	}
	d.ledger.verify(context.Background())
	assertTopicReadable(t, d.c, "load", 48<<20)
}

func (l *ledger) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// healingGrace is how long after an apply a metadata read may still lag
// the controller's last ISR change: one round of metadata propagation.
const healingGrace = 3 * time.Second

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// replicasByPartition reads every partition's replicas and ISR from the
// cluster.
func replicasByPartition(t *testing.T, c *kafkatest.Cluster) (replicas, isr map[string][]int32) {
	t.Helper()
	md, err := c.Admin().Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	replicas, isr = map[string][]int32{}, map[string][]int32{}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			k := fmt.Sprintf("%s p%d", td.Topic, p.Partition)
			replicas[k], isr[k] = slices.Clone(p.Replicas), slices.Clone(p.ISR)
		}
	}
	return replicas, isr
}

func underReplicated(t *testing.T, c *kafkatest.Cluster) []string {
	t.Helper()
	replicas, isr := replicasByPartition(t, c)
	var out []string
	for k, rs := range replicas {
		if len(isr[k]) < len(rs) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// shareOf lists the partitions with a replica on broker id.
func shareOf(t *testing.T, c *kafkatest.Cluster, id int32) []string {
	t.Helper()
	replicas, _ := replicasByPartition(t, c)
	var out []string
	for k, rs := range replicas {
		if slices.Contains(rs, id) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// assertHealed checks the cluster itself, right after the apply: no
// partition under-replicated, every partition at RF 3 on the live brokers,
// one replica per rack, only the live brokers registered, and no throttle
// left.
//
// The apply returns only once every partition is back in sync, so this
// does not wait for healing. The broker that answers the metadata read can
// show the last ISR expansion a moment after the controller committed it,
// as it applies the same metadata records: healingGrace allows that, and
// no more, so an apply that returned before the copies caught up fails.
func assertHealed(t *testing.T, c *kafkatest.Cluster, live []int32) {
	t.Helper()
	under := underReplicated(t, c)
	for deadline := time.Now().Add(healingGrace); len(under) > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		under = underReplicated(t, c)
	}
	if len(under) > 0 {
		t.Errorf("%d partitions still under-replicated %s after the apply returned: %s", len(under), healingGrace, strings.Join(under, ", "))
	}
	replicas, _ := replicasByPartition(t, c)
	for k, rs := range replicas {
		if len(rs) != 3 {
			t.Errorf("%s has replicas %v; want RF 3", k, rs)
		}
		for _, b := range rs {
			if !slices.Contains(live, b) {
				t.Errorf("%s has a replica on broker %d, which is not live (live: %v)", k, b, live)
			}
		}
	}
	if a := readAssignment(t, c); !a.racksOK {
		t.Errorf("rack spread broken: %s", strings.Join(a.problems, "; "))
	}
	assertOnlyBrokers(t, c, live)
	assertNoThrottles(t, c)
}

// Broker 4 dies for good under acks=all load; broker_count = 3 removes it.
// The apply heals every partition from the surviving replicas and
// unregisters broker 4; no acknowledged record is lost.
func TestAccClusterResource_removeDeadBroker(t *testing.T) {
	testAccParallel(t)
	d := startDeadBrokerCluster(t, false)
	servers := d.c.BootstrapServers()
	var share []string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: healConfig(servers, d.apiURL, 4, "")},
			{
				PreConfig: func() {
					share = shareOf(t, d.c, 4)
					d.killForGood(t, 4)
				},
				Config: healConfig(servers, d.apiURL, 3, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					// The default choice takes the dead broker, known at plan time.
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("leaving_brokers"),
						knownvalue.ListExact([]knownvalue.Check{knownvalue.Int64Exact(4)})),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("broker_count"), knownvalue.Int64Exact(3)),
				},
				Check: func(*terraform.State) error {
					assertHealed(t, d.c, []int32{1, 2, 3})
					assertOperationCompleted(t, d.c, 3)
					t.Logf("broker 4 held %d partitions; all healed", len(share))
					return nil
				},
			},
			{Config: healConfig(servers, d.apiURL, 3, ""), PlanOnly: true},
		},
	})
	d.assertNothingLost(t)
}

// The same failure, replaced in one apply: remove_broker_ids = [4] with an
// unchanged broker_count adds a broker through the scaling API, in broker
// 4's rack, moves exactly broker 4's former share onto it, and unregisters
// broker 4. The scaling API assigns a new id here;
// TestAccClusterResource_replaceDeadBrokerReusingItsID has a platform that
// brings broker 4 back under its own id.
func TestAccClusterResource_replaceDeadBroker(t *testing.T) {
	testAccParallel(t)
	d := startDeadBrokerCluster(t, false)
	servers := d.c.BootstrapServers()
	var share []string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: healConfig(servers, d.apiURL, 4, "")},
			{
				PreConfig: func() {
					share = shareOf(t, d.c, 4)
					d.killForGood(t, 4)
				},
				Config: healConfig(servers, d.apiURL, 4, "[4]"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("leaving_brokers"),
						knownvalue.ListExact([]knownvalue.Check{knownvalue.Int64Exact(4)})),
					// Exactly broker 4's share moves (share is read once the step runs).
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_moves"), knownvalue.Int64Func(func(v int64) error {
						if v != int64(len(share)) {
							return fmt.Errorf("planned_moves %d; want broker 4's share, %d", v, len(share))
						}
						return nil
					})),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("broker_count"), knownvalue.Int64Exact(4)),
				},
				Check: func(*terraform.State) error {
					assertHealed(t, d.c, []int32{1, 2, 3, 5})
					if got := shareOf(t, d.c, 5); fmt.Sprint(got) != fmt.Sprint(share) {
						t.Errorf("new broker 5 holds %v; want exactly broker 4's former share %v", got, share)
					}
					assertOperationCompleted(t, d.c, 4)
					t.Logf("broker 5 took over broker 4's %d partitions", len(share))
					return nil
				},
			},
			// The replacement is done: the same configuration plans nothing.
			{Config: healConfig(servers, d.apiURL, 4, "[4]"), PlanOnly: true},
		},
	})
	d.assertNothingLost(t)
}

// The same failure on a platform that reuses ids, as a StatefulSet does:
// the replacement brings broker 4 back under its id with an empty disk.
// Kafka re-replicates onto it by itself, so the apply reassigns nothing: it
// waits, throttled, until every partition's ISR is full, and returns with
// every replica where it was before the failure.
func TestAccClusterResource_replaceDeadBrokerReusingItsID(t *testing.T) {
	testAccParallel(t)
	d := startDeadBrokerCluster(t, true)
	servers := d.c.BootstrapServers()
	var before map[string][]int32
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: healConfig(servers, d.apiURL, 4, "")},
			{
				PreConfig: func() {
					before, _ = replicasByPartition(t, d.c)
					d.killForGood(t, 4)
				},
				Config: healConfig(servers, d.apiURL, 4, "[4]"),
				Check: func(*terraform.State) error {
					// The apply itself waited for the ISR: no wait here.
					if under := underReplicated(t, d.c); len(under) > 0 {
						t.Errorf("the apply returned with %d partitions under-replicated: %v", len(under), firstOf(under, 5))
					}
					after, _ := replicasByPartition(t, d.c)
					if fmt.Sprint(after) != fmt.Sprint(before) {
						t.Errorf("replicas moved; a reused id needs no reassignment\nbefore %v\nafter  %v", before, after)
					}
					assertOnlyBrokers(t, d.c, []int32{1, 2, 3, 4})
					assertNoThrottles(t, d.c)
					op := loadOperation(t, d.c)
					if op.Phase != executor.PhaseCompleted || !slices.Equal(op.ReusedBrokers, []int32{4}) || op.MovesDone != 0 {
						t.Errorf("operation: phase %s, reused brokers %v, moves done %d; want completed, [4], 0", op.Phase, op.ReusedBrokers, op.MovesDone)
					}
					t.Logf("broker 4 back under its id; %d partitions re-replicated by Kafka, none reassigned", len(shareOf(t, d.c, 4)))
					return nil
				},
			},
			{Config: healConfig(servers, d.apiURL, 4, "[4]"), PlanOnly: true},
		},
	})
	d.assertNothingLost(t)
}

func firstOf(s []string, n int) []string { return s[:min(n, len(s))] }

// While broker 4 is dead, only healing it may run: a scale-out, and the
// removal of a live broker, are refused at plan time with a message that
// points to removal or replacement, and nothing changes on the cluster.
func TestAccClusterResource_deadBrokerRefusals(t *testing.T) {
	testAccParallel(t)
	d := startDeadBrokerCluster(t, false)
	servers := d.c.BootstrapServers()
	var before map[string][]int32
	untouched := func() {
		after, _ := replicasByPartition(t, d.c)
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused plan changed the assignment")
		}
		assertUntouched(t, d.c, 4)
	}
	step := func(config, want string) resource.TestStep {
		return resource.TestStep{PreConfig: untouched, Config: config, ExpectError: wrapped(want)}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: healConfig(servers, d.apiURL, 4, "")},
			{
				PreConfig: func() {
					d.killForGood(t, 4)
					before, _ = replicasByPartition(t, d.c)
				},
				Config: healConfig(servers, d.apiURL, 5, ""),
				ExpectError: wrapped(`(?s)broker_count.*brokers \[4\] are dead \(fenced or offline\).*a scale-out cannot heal them.*` +
					`Remove them first \(broker_count = 3, or remove_broker_ids = \[4\]\), or replace them \(remove_broker_ids = \[4\] with broker_count = 4\)`),
			},
			step(healConfig(servers, d.apiURL, 3, "[3]"),
				`(?s)remove_broker_ids.*brokers \[4\] are dead.*removes live brokers \[3\] and keeps them.*remove them \(remove_broker_ids = \[4\]\) or replace them`),
			step(healConfig(servers, d.apiURL, 4, "[3]"), `(?s)remove_broker_ids.*removes live brokers \[3\]`),
			// Bad input for remove_broker_ids.
			step(healConfig(servers, d.apiURL, 3, "[9]"), `(?s)remove_broker_ids.*broker 9 is not registered; the registered brokers are \[1 2 3 4\]`),
			step(healConfig(servers, d.apiURL, 3, "[3, 4]"), `(?s)remove_broker_ids.*2 brokers are named to remove, but going from 4 to 3 brokers removes 1`),
			step(healConfig(servers, d.apiURL, 5, "[4]"), `(?s)remove_broker_ids.*a scale-out removes no broker`),
			step(healConfig(servers, d.apiURL, 2, "[3, 4]"), `(?s)remove_broker_ids.*leaves 2 brokers, fewer than the replication factor 3`),
			step(healConfig(servers, d.apiURL, 3, "[]"), `(?s)remove_broker_ids.*at least 1`),
			// A set cannot repeat an id; the data source's list can, and is refused.
			step(testAccProviderConfig(servers, "")+`
data "kafkascale_rebalance_plan" "dup" {
  broker_count      = 3
  remove_broker_ids = [4, 4]
}`, `(?s)remove_broker_ids.*broker 4 is named twice`),
			{PreConfig: untouched, Config: healConfig(servers, d.apiURL, 4, ""), PlanOnly: true},
		},
	})
	untouched()
	if n := d.ledger.stop(); n == 0 {
		t.Fatal("the ledger acknowledged nothing")
	}
	d.ledger.verify(context.Background())
}
