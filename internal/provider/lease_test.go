package provider_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// leaseTestCluster is a real cluster whose brokers keep to low replication
// throttles (small follower fetches), so that operations last long enough
// to overlap, with the HTTP scaling API in front of it.
func leaseTestCluster(t *testing.T) (*kafkatest.Cluster, string) {
	t.Helper()
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"},
		BrokerProperties: map[string]string{
			"replica.fetch.max.bytes":          "65536",
			"replica.fetch.response.max.bytes": "262144",
		}})
	api := kafkatest.NewScalingAPI(c, "local", "s3cret-token")
	srv := httptest.NewServer(api)
	t.Cleanup(func() { srv.Close(); api.Close() })
	return c, srv.URL
}

func leaseClusterConfig(servers []string, apiURL string, brokers int) string {
	return leaseClusterConfigAt(servers, apiURL, brokers, 4<<20)
}

func leaseClusterConfigAt(servers []string, apiURL string, brokers int, throttle int64) string {
	return clusterConfig(servers, apiURL, brokers, fmt.Sprintf(`initial_throttle = %d
    min_throttle         = 1048576
    max_moves_per_step   = 20
    max_moves_per_broker = 8`, throttle))
}

func leaseTopicConfig(servers []string, rf int, providerExtra string) string {
	return testAccProviderConfig(servers, providerExtra) + fmt.Sprintf(`
resource "kafkascale_topic" "orders" {
  name               = "orders"
  partitions         = 8
  replication_factor = %d
  throttle           = 4194304
  static_partitioning = true
}
`, rf)
}

// leaseHold is one claim on the lease as its records in the lease log show
// it: when it was claimed, when it announced holding, when it released.
type leaseHold struct {
	claim                         string
	holder                        executor.LeaseHolder
	claimed, holding, ended       int64 // offsets; -1 when absent
	claimedAt, holdingAt, endedAt time.Time
}

func (h leaseHold) String() string {
	return fmt.Sprintf("%s %q (claimed @%d, holding @%d, released @%d)", h.holder.Resource, h.holder.What, h.claimed, h.holding, h.ended)
}

// readLeaseHolds reads the whole lease log of the cluster.
func readLeaseHolds(t *testing.T, c *kafkatest.Cluster) []leaseHold {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs, err := cl.LeaseLog().Since(context.Background(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	byClaim := map[string]*leaseHold{}
	var order []string
	for _, r := range recs {
		h := byClaim[r.Claim]
		if h == nil {
			h = &leaseHold{claim: r.Claim, claimed: -1, holding: -1, ended: -1}
			byClaim[r.Claim] = h
			order = append(order, r.Claim)
		}
		h.holder = r.Holder
		switch {
		case r.Kind == executor.LeaseClaimed:
			h.claimed, h.claimedAt = r.Offset, r.Time
		case r.Kind == executor.LeaseRelease:
			h.ended, h.endedAt = r.Offset, r.Time
		case r.Holding && h.holding < 0:
			h.holding, h.holdingAt = r.Offset, r.Time
		}
	}
	out := make([]leaseHold, len(order))
	for i, id := range order {
		out[i] = *byClaim[id]
	}
	return out
}

// findHold returns the latest claim of resource for what that held the
// lease.
func findHold(t *testing.T, holds []leaseHold, resource, what string) leaseHold {
	t.Helper()
	for _, h := range slices.Backward(holds) {
		if h.holder.Resource == resource && strings.Contains(h.holder.What, what) && h.holding >= 0 {
			return h
		}
	}
	t.Fatalf("no claim of %s %q held the lease; the lease log has: %v", resource, what, holds)
	return leaseHold{}
}

// waitForHolder polls the lease log until resource holds the lease.
func waitForHolder(t *testing.T, c *kafkatest.Cluster, resource string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		for _, h := range readLeaseHolds(t, c) {
			if h.holder.Resource == resource && h.holding >= 0 && h.ended < 0 {
				t.Logf("%s holds the lease", h)
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s never held the lease", resource)
}

// inFlight is one reassignment seen in flight, and whose it is.
type inFlight struct {
	topic     string
	partition int32
	target    []int32
	adding    []int32
}

// clusterSample is one look at the cluster: the reassignments in flight
// both before and after the throttle configs were read (so those configs
// were read while they ran), and those configs.
type clusterSample struct {
	at       time.Time
	moves    []inFlight
	follower map[string]map[string]bool // topic → "p:b" entries
	rated    map[int32]bool             // brokers with follower.replication.throttled.rate
}

// watchCluster samples the cluster until stop is closed.
func watchCluster(t *testing.T, c *kafkatest.Cluster, stop <-chan struct{}) func() []clusterSample {
	var mu sync.Mutex
	var samples []clusterSample
	done := make(chan struct{})
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		defer cl.Close()
		ctx := context.Background()
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			s, err := sampleCluster(ctx, c, cl)
			if err != nil {
				continue // a broker starting or stopping; the next sample counts
			}
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
		}
	}()
	return func() []clusterSample {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}

func sampleCluster(ctx context.Context, c *kafkatest.Cluster, cl *kafka.Client) (clusterSample, error) {
	s := clusterSample{at: time.Now(), follower: map[string]map[string]bool{}, rated: map[int32]bool{}}
	before, err := cl.ListReassignments(ctx)
	if err != nil || len(before) == 0 {
		return s, err
	}
	md, err := c.Admin().Metadata(ctx)
	if err != nil {
		return s, err
	}
	bcs, err := c.Admin().DescribeBrokerConfigs(ctx, md.Brokers.NodeIDs()...)
	if err != nil {
		return s, err
	}
	for _, rc := range bcs {
		for _, cfg := range rc.Configs {
			if cfg.Key == "follower.replication.throttled.rate" && cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig {
				var id int32
				if _, err := fmt.Sscan(rc.Name, &id); err == nil {
					s.rated[id] = true
				}
			}
		}
	}
	tcs, err := c.Admin().DescribeTopicConfigs(ctx, md.Topics.Names()...)
	if err != nil {
		return s, err
	}
	for _, rc := range tcs {
		for _, cfg := range rc.Configs {
			if cfg.Key == kafka.ConfigFollowerThrottledReplicas && cfg.Source == kmsg.ConfigSourceDynamicTopicConfig {
				s.follower[rc.Name] = map[string]bool{}
				for _, e := range strings.Split(cfg.MaybeValue(), ",") {
					s.follower[rc.Name][e] = true
				}
			}
		}
	}
	after, err := cl.ListReassignments(ctx)
	if err != nil {
		return s, err
	}
	for _, r := range before {
		for _, a := range after {
			if a.Topic == r.Topic && a.Partition == r.Partition && slices.Equal(a.Replicas, r.Replicas) {
				var target []int32
				for _, b := range r.Replicas {
					if !slices.Contains(r.Removing, b) {
						target = append(target, b)
					}
				}
				s.moves = append(s.moves, inFlight{topic: r.Topic, partition: r.Partition, target: target, adding: r.Adding})
			}
		}
	}
	return s, nil
}

// moveOwner says which operation's plan has a move to the reassignment's
// target.
func moveOwner(m inFlight, ops map[string]*executor.Operation) []string {
	var owners []string
	for name, op := range ops {
		if op == nil || op.Plan == nil {
			continue
		}
		for _, pm := range op.Plan.Moves() {
			if pm.Topic == m.topic && pm.Partition == m.partition && engine.SameMembers(pm.NewReplicas, m.target) {
				owners = append(owners, name)
				break
			}
		}
	}
	sort.Strings(owners)
	return owners
}

// assertNoOverlap checks every sample: no moment had reassignments of two
// operations in flight, and every move in flight had its throttle (the
// follower entries of its adding replicas, and the rate on their brokers):
// neither operation cleared the other's. It returns how many samples saw
// each operation's moves, so the test can tell that it watched them.
func assertNoOverlap(t *testing.T, samples []clusterSample, ops map[string]*executor.Operation) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, s := range samples {
		owners := map[string]bool{}
		for _, m := range s.moves {
			o := moveOwner(m, ops)
			if len(o) != 1 {
				t.Errorf("%s: %s p%d heading for %v matches the plans of %v; want exactly one operation's", s.at.Format(time.RFC3339Nano), m.topic, m.partition, m.target, o)
				continue
			}
			owners[o[0]] = true
			for _, b := range m.adding {
				if !s.follower[m.topic][fmt.Sprintf("%d:%d", m.partition, b)] {
					t.Errorf("%s: %s p%d is moving onto broker %d without its follower throttle entry (%s has %v)", s.at.Format(time.RFC3339Nano), m.topic, m.partition, b, m.topic, s.follower[m.topic])
				}
				if !s.rated[b] {
					t.Errorf("%s: %s p%d is moving onto broker %d, which has no follower.replication.throttled.rate", s.at.Format(time.RFC3339Nano), m.topic, m.partition, b)
				}
			}
		}
		if len(owners) > 1 {
			t.Errorf("%s: reassignments of %v in flight at once: %v", s.at.Format(time.RFC3339Nano), owners, s.moves)
		}
		for o := range owners {
			seen[o]++
		}
	}
	return seen
}

func loadOperationByKey(t *testing.T, c *kafkatest.Cluster, key string) *executor.Operation {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	op, err := cl.Operations().Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// Two Terraform working directories, each with its own state, apply against
// one cluster at the same moment: one a broker count change, the other a
// replication factor change of a topic with data. The first runs; the other
// waits, then runs. Polling the cluster throughout shows that their
// reassignments were never in flight together and that neither cleared the
// other's throttles. Then, with fail_fast, the second fails while the
// first still holds the lease, naming the holder.
//
// It runs alone: its two working directories are parallel subtests, and
// under a parallel parent those queue for a -parallel slot behind every
// test still waiting for one, with the cluster started and idle (13.5
// minutes in a loaded run of make test).
func TestAccOperationLease_twoWorkingDirectories(t *testing.T) {
	testAccPreCheck(t)
	c, apiURL := leaseTestCluster(t)
	servers := c.BootstrapServers()
	cluster := fmt.Sprintf("kafkascale_cluster %q", c.ClusterID())
	topic := `kafkascale_topic "orders"`

	createTopicRF(t, c, "load", 12, 2)
	fillTopic(t, c, "load", 48<<20)

	topicReady := make(chan struct{})
	scaledOut := make(chan struct{})
	rfChanged := make(chan struct{})
	scaledIn := make(chan struct{})
	stopWatch := make(chan struct{})
	var samples func() []clusterSample
	var scaleOut, rfChange *executor.Operation
	var failFastTook time.Duration
	var failFastStart time.Time

	t.Run("applies", func(t *testing.T) {
		t.Run("broker_count", func(t *testing.T) {
			t.Parallel()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{
					{Config: leaseClusterConfig(servers, apiURL, 3)},
					{
						PreConfig: func() {
							await(t, topicReady, "topicReady")
							samples = watchCluster(t, c, stopWatch)
						},
						Config: leaseClusterConfig(servers, apiURL, 4),
						ConfigStateChecks: []statecheck.StateCheck{
							statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("broker_count"), knownvalue.Int64Exact(4)),
						},
						Check: func(*terraform.State) error {
							scaleOut = loadOperationByKey(t, c, "cluster/"+c.ClusterID())
							close(scaledOut)
							return nil
						},
					},
					{
						// The fail-fast round: scale back in while the other
						// directory tries a change with fail_fast set.
						// Slower, so that it surely holds the lease while the
						// other directory's apply plans and tries.
						PreConfig: func() { await(t, rfChanged, "rfChanged") },
						Config:    leaseClusterConfigAt(servers, apiURL, 3, 2<<20),
						Check: func(*terraform.State) error {
							close(scaledIn)
							assertOnlyBrokers(t, c, []int32{1, 2, 3})
							return nil
						},
					},
				},
			})
		})
		t.Run("replication_factor", func(t *testing.T) {
			t.Parallel()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				CheckDestroy:             checkTopicGone(c, t, "orders"),
				Steps: []resource.TestStep{
					{
						Config: leaseTopicConfig(servers, 2, ""),
						Check: func(*terraform.State) error {
							fillTopic(t, c, "orders", 24<<20)
							close(topicReady)
							return nil
						},
					},
					{
						// Starts while the broker count change holds the lease.
						PreConfig: func() { waitForHolder(t, c, cluster) },
						Config:    leaseTopicConfig(servers, 3, ""),
						ConfigStateChecks: []statecheck.StateCheck{
							statecheck.ExpectKnownValue("kafkascale_topic.orders", tfjsonpath.New("replication_factor"), knownvalue.Int64Exact(3)),
						},
						Check: func(*terraform.State) error {
							// Read now: the destroy at the end forgets it.
							rfChange = loadOperationByKey(t, c, "topic/"+c.ClusterID()+"/orders")
							await(t, scaledOut, "scaledOut")
							close(stopWatch)
							close(rfChanged)
							return nil
						},
					},
					{
						PreConfig: func() {
							waitForHolder(t, c, cluster)
							failFastStart = time.Now()
						},
						Config: leaseTopicConfig(servers, 2, `operation_lease {
    fail_fast = true
  }`),
						ExpectError: wrapped(`(?s)Another operation holds the cluster.*operation op-.*bring the cluster to 3 brokers.*` +
							`kafkascale_cluster "` + c.ClusterID() + `".*host .* pid \d+`),
					},
					{
						// The refused apply changed nothing: once the scale-in
						// is done (and before the destroy deletes a topic it
						// may be moving), every partition still has three
						// replicas. (The state it recorded was read mid-drain,
						// so this step refreshes rather than only plans.)
						PreConfig: func() {
							failFastTook = time.Since(failFastStart)
							await(t, scaledIn, "scaledIn")
						},
						Config: leaseTopicConfig(servers, 3, ""),
						ConfigStateChecks: []statecheck.StateCheck{
							statecheck.ExpectKnownValue("kafkascale_topic.orders", tfjsonpath.New("replication_factor"), knownvalue.Int64Exact(3)),
						},
						Check: func(*terraform.State) error {
							assertTopicOnEveryBroker(t, c, "orders", 8, 3)
							return nil
						},
					},
				},
			})
		})
	})
	if t.Failed() {
		return
	}

	// A move in flight is the scale-out's or the replication factor
	// change's by its target: the plans' targets differ (two replicas for
	// the scale's moves of orders, three for the change's).
	ops := map[string]*executor.Operation{
		"broker count":       scaleOut,
		"replication factor": rfChange,
	}
	all := samples()
	seen := assertNoOverlap(t, all, ops)
	busy := 0
	for _, smp := range all {
		if len(smp.moves) > 0 {
			busy++
		}
	}
	t.Logf("%d samples of the cluster, %d with reassignments in flight; samples per operation: %v", len(all), busy, seen)
	if seen["broker count"] == 0 || seen["replication factor"] == 0 {
		t.Errorf("the polling saw reassignments of %v only; it must see both operations' to prove they did not overlap", seen)
	}

	holds := readLeaseHolds(t, c)
	scale := findHold(t, holds, cluster, "to 4 brokers")
	rf := findHold(t, holds, topic, "to 3 replicas")
	if rf.claimed >= scale.ended || scale.ended >= rf.holding {
		t.Errorf("the replication factor change did not wait for the scale: %s, %s", scale, rf)
	}
	t.Logf("the replication factor change claimed the lease %s after the scale, waited %s, and took it %s after the scale released it",
		rf.claimedAt.Sub(scale.claimedAt).Round(time.Millisecond), rf.holdingAt.Sub(rf.claimedAt).Round(time.Millisecond),
		rf.holdingAt.Sub(scale.endedAt).Round(time.Millisecond))

	// Giving up at once is shown by order, not by a wall-clock bound (the
	// test runs beside others): the fail-fast claim is released while the
	// scale-in it found still holds the lease. One that waited would be
	// released only after the scale-in's release.
	ff := findClaim(t, holds, topic, "to 2 replicas")
	if ff.holding >= 0 || ff.ended < 0 {
		t.Errorf("the fail-fast apply: %s; want it never to hold the lease, and to release its claim", ff)
	}
	scaleIn := findHold(t, holds, cluster, "to 3 brokers")
	if scaleIn.holding >= ff.claimed || ff.ended >= scaleIn.ended {
		t.Errorf("the fail-fast apply did not give up while the scale-in held the lease: %s, %s", scaleIn, ff)
	}
	t.Logf("fail-fast: the apply step took %s (plan included); its claim was released %s after it was made",
		failFastTook.Round(time.Millisecond), ff.endedAt.Sub(ff.claimedAt).Round(time.Millisecond))
	assertNoThrottles(t, c)
}

// await waits for the other working directory's step, and fails the test
// rather than hang when that never comes (the other one failed).
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Minute):
		t.Fatalf("gave up waiting for %s in the other working directory", what)
	}
}

func findClaim(t *testing.T, holds []leaseHold, resource, what string) leaseHold {
	t.Helper()
	for _, h := range holds {
		if h.holder.Resource == resource && strings.Contains(h.holder.What, what) {
			return h
		}
	}
	t.Fatalf("no claim of %s %q; the lease log has: %v", resource, what, holds)
	return leaseHold{}
}

// One configuration changes broker_count and a topic's partitions in the
// same apply, with no depends_on: Terraform applies them in parallel, and
// both succeed, one after the other.
func TestAccOperationLease_oneApplyScalesAndGrows(t *testing.T) {
	testAccParallel(t)
	c, apiURL := leaseTestCluster(t)
	servers := c.BootstrapServers()
	createTopicRF(t, c, "load", 12, 2)
	fillTopic(t, c, "load", 24<<20)
	config := func(brokers, partitions int) string {
		return leaseClusterConfig(servers, apiURL, brokers) + fmt.Sprintf(`
resource "kafkascale_topic" "events" {
  name                = "events"
  partitions          = %d
  replication_factor  = 2
  static_partitioning = true
}
`, partitions)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkTopicGone(c, t, "events"),
		Steps: []resource.TestStep{
			{Config: config(3, 6)},
			{
				Config: config(4, 12),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("broker_count"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue("kafkascale_topic.events", tfjsonpath.New("partitions"), knownvalue.Int64Exact(12)),
				},
				Check: func(*terraform.State) error {
					assertTopicOnEveryBroker(t, c, "events", 12, 2)
					assertOperationCompleted(t, c, 4)
					assertNoThrottles(t, c)
					holds := readLeaseHolds(t, c)
					scale := findHold(t, holds, fmt.Sprintf("kafkascale_cluster %q", c.ClusterID()), "to 4 brokers")
					grow := findHold(t, holds, `kafkascale_topic "events"`, "to 12 partitions")
					first, second := scale, grow
					if grow.holding < scale.holding {
						first, second = grow, scale
					}
					if first.ended < 0 || second.holding < first.ended {
						return fmt.Errorf("the two operations overlapped: %s, %s", first, second)
					}
					// Terraform starts both at once: the second claims the
					// lease while the first holds it, and waits for its
					// release. A claim after the release would mean they did
					// not run in parallel, and the lease was never contended.
					if second.claimed < 0 || second.claimed > first.ended {
						return fmt.Errorf("%s claimed the lease (@%d) after %s released it (@%d): the second never waited, so the lease was not what kept them apart",
							second.holder.What, second.claimed, first.holder.What, first.ended)
					}
					t.Logf("%s held the lease first; %s claimed it %s later, while the first held it, and held it after the first released it",
						first.holder.What, second.holder.What, second.claimedAt.Sub(first.claimedAt).Round(time.Millisecond))
					return nil
				},
			},
		},
	})
}
