package provider_test

// Changes made beside an unfinished operation, from a second working
// directory, and operations that stop short of their layout: what the
// cluster holds afterwards, read from the cluster itself.

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// topicHCL is one kafkascale_topic named name.
func topicHCL(name string, partitions, rf int, extra string) string {
	return fmt.Sprintf(`
resource "kafkascale_topic" %q {
  name               = %q
  partitions         = %d
  replication_factor = %d
  %s
}
`, name, name, partitions, rf, extra)
}

// waitFirstGroupInFlight waits until the operation of the cluster resource
// reassigns, with a step of its first group submitted and a partition
// moving, and returns it as stored then. It fails if the apply ends first.
func waitFirstGroupInFlight(t *testing.T, c *kafkatest.Cluster, apply *processGroup) *executor.Operation {
	t.Helper()
	deadline := time.After(4 * time.Minute)
	for {
		select {
		case <-apply.exited:
			t.Fatalf("terraform apply ended before a reassignment was seen in flight:\n%s", apply.out)
		case <-deadline:
			t.Fatalf("no reassignment was in flight within 4 minutes:\n%s", apply.out)
		case <-time.After(100 * time.Millisecond):
		}
		op := loadOperation(t, c)
		if op == nil || op.Done() || op.Phase != executor.PhaseReassign || op.StepsSubmitted < 1 {
			continue
		}
		if rs, err := listReassignments(c); err == nil && len(rs) > 0 {
			return op
		}
	}
}

// finished waits for a terraform started with start and fails the test
// unless it exits with want.
func finished(t *testing.T, g *processGroup, want int) string {
	t.Helper()
	select {
	case <-g.exited:
	case <-time.After(10 * time.Minute):
		t.Fatalf("terraform did not end within 10 minutes:\n%s", g.out)
	}
	if code := g.cmd.ProcessState.ExitCode(); code != want {
		t.Fatalf("terraform exited %d, want %d:\n%s", code, want, g.out)
	}
	return g.out.String()
}

// topicReplicas counts, per broker, the replicas and preferred leaders of
// topic on the live cluster.
func topicReplicas(t *testing.T, c *kafkatest.Cluster, topic string) (replicas, leaders map[int32]int) {
	t.Helper()
	md, err := c.Admin().Metadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, p := range md.Topics[topic].Partitions {
		for i, b := range p.Replicas {
			replicas[b]++
			if i == 0 {
				leaders[b]++
			}
		}
	}
	return replicas, leaders
}

// assertBalancedByRack checks the live cluster: within each rack, every
// broker holds within one replica of the rack's mean, every partition has
// its replicas in distinct racks, and, with leaders, every broker is the
// preferred leader of within one partition of the mean over all brokers.
func assertBalancedByRack(t *testing.T, c *kafkatest.Cluster, leaders bool) {
	t.Helper()
	md, err := c.Admin().Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a := readAssignment(t, c)
	if !a.racksOK {
		t.Errorf("rack spread broken: %s", strings.Join(a.problems, "; "))
	}
	byRack := map[string][]int32{}
	partitions := 0
	for _, b := range md.Brokers {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		byRack[rack] = append(byRack[rack], b.NodeID)
	}
	for _, n := range a.leaders {
		partitions += n
	}
	for rack, ids := range byRack {
		sum := 0
		for _, id := range ids {
			sum += a.perBroker[id]
		}
		mean := float64(sum) / float64(len(ids))
		for _, id := range ids {
			if math.Abs(float64(a.perBroker[id])-mean) > 1 {
				t.Errorf("broker %d of rack %s holds %d replicas; the rack's mean is %.1f", id, rack, a.perBroker[id], mean)
			}
		}
	}
	mean := float64(partitions) / float64(len(md.Brokers))
	for _, b := range md.Brokers {
		if !leaders {
			break
		}
		if l := a.leaders[b.NodeID]; math.Abs(float64(l)-mean) > 1 {
			t.Errorf("broker %d is the preferred leader of %d partitions; the mean is %.1f", b.NodeID, l, mean)
		}
	}
	t.Logf("replicas per broker %v, preferred leaders %v, racks %v", a.perBroker, a.leaders, byRack)
}

// inPlaceMoves is how many replica moves the planner would make to
// rebalance the live cluster at its count.
func inPlaceMoves(t *testing.T, c *kafkatest.Cluster) int {
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
	plan, err := engine.PlanReassignment(kafka.EngineCluster(snap), engine.Change{}, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return plan.ReplicaMoves
}

// assertNoCordons checks that no broker is left cordoned.
func assertNoCordons(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	if left := cordonsSet(t, c); len(left) > 0 {
		t.Errorf("cordons left: %v", left)
	}
}

// While a scale-in drains brokers, another working directory creates a
// topic: the create succeeds while the drain still runs (it does not wait
// for the drain's lease), places no replica on a leaving broker (on Kafka
// 3.9 too, which has no cordon: the leaving brokers come from the drain's
// record), the scale-in finishes with nothing left on the removed brokers,
// and the new topic is balanced over the brokers that stay.
func TestAccTopicResource_createdDuringDrain(t *testing.T) {
	testCreatedDuringDrain(t, kafkatest.KafkaVersion)
}

func TestAccKafka39_topicCreatedDuringDrain(t *testing.T) {
	testCreatedDuringDrain(t, kafkatest.KafkaVersion39)
}

func testCreatedDuringDrain(t *testing.T, version string) {
	testAccParallel(t)
	c, apiURL := withScalingAPI(t, kafkatest.StartT(t, kafkatest.Options{Brokers: 5, Racks: []string{"a", "b", "c", "a", "b"}, KafkaVersion: version}))
	servers := c.BootstrapServers()
	createTopicRF(t, c, "load", 10, 3)
	fillTopic(t, c, "load", 48<<20)
	a, b := newTerraformCLI(t), newTerraformCLI(t)
	a.configure(slowConfig(servers, apiURL, 5, "30m"))
	a.mustRun(0, "apply", "-auto-approve")

	a.configure(slowConfig(servers, apiURL, 3, "30m"))
	drain := a.start("apply", "-auto-approve")
	op := waitFirstGroupInFlight(t, c, drain)
	leaving := op.RemoveBrokers
	if len(leaving) != 2 {
		t.Fatalf("the drain removes brokers %v; want 2", leaving)
	}

	b.configure(testAccProviderConfig(servers, "") + topicHCL("born-during-drain", 12, 3, ""))
	started := time.Now()
	out := b.mustRun(0, "apply", "-auto-approve")
	took := time.Since(started)
	if during := loadOperation(t, c); during == nil || during.ID != op.ID || during.Done() {
		t.Fatalf("the create returned after the drain had ended (%+v): it waited for it\n%s", during, out)
	}
	replicas, _ := topicReplicas(t, c, "born-during-drain")
	for _, l := range leaving {
		if replicas[l] > 0 {
			t.Errorf("the new topic has %d replicas on leaving broker %d: %v", replicas[l], l, replicas)
		}
	}
	t.Logf("the create took %s while the drain of %v ran; replicas per broker %v", took.Round(time.Millisecond), leaving, replicas)

	finished(t, drain, 0)
	var staying []int32
	for id := int32(1); id <= 5; id++ {
		if !slices.Contains(leaving, id) {
			staying = append(staying, id)
		}
	}
	assertOnlyBrokers(t, c, staying)
	replicas, leaders := topicReplicas(t, c, "born-during-drain")
	for _, id := range staying {
		if replicas[id] != 12 || leaders[id] < 3 || leaders[id] > 5 {
			t.Errorf("broker %d holds %d replicas of the new topic and leads %d; want 12 (RF 3 over 3 brokers) and 4±1", id, replicas[id], leaders[id])
		}
	}
	assertNoThrottles(t, c)
	assertNoCordonsIfSupported(t, c, version)
	b.mustRun(0, "plan", "-detailed-exitcode")
	a.mustRun(0, "plan", "-detailed-exitcode")
}

// assertNoCordonsIfSupported checks the cordons on Kafka that has them.
func assertNoCordonsIfSupported(t *testing.T, c *kafkatest.Cluster, version string) {
	t.Helper()
	if version != kafkatest.KafkaVersion39 {
		assertNoCordons(t, c)
	}
}

// A config change of a topic that a scale-out moves, from a second
// working directory, waits for the scale-out's lease and then applies:
// both succeed, and the lease log shows the change held the lease only
// after the scale-out released it. A change of a topic nobody moves, made
// at the same time, does not wait.
func TestAccTopicResource_configChangeWaitsForTheLease(t *testing.T) {
	testAccParallel(t)
	c, apiURL := startScalableCluster(t, 3)
	servers := c.BootstrapServers()
	a, b := newTerraformCLI(t), newTerraformCLI(t)
	topics := func(retention string) string {
		return testAccProviderConfig(servers, "") +
			topicHCL("moving", 12, 3, fmt.Sprintf(`config = { "retention.ms" = %q }`, retention))
	}
	b.configure(topics("86400000"))
	b.mustRun(0, "apply", "-auto-approve")
	fillTopic(t, c, "moving", 36<<20)

	a.configure(slowConfig(servers, apiURL, 3, "30m"))
	a.mustRun(0, "apply", "-auto-approve")
	a.configure(slowConfig(servers, apiURL, 4, "30m"))
	scale := a.start("apply", "-auto-approve")
	op := waitFirstGroupInFlight(t, c, scale)
	if !op.Moves("moving") {
		t.Fatalf("the scale-out %s does not move topic moving; the test needs it to", op.ID)
	}

	b.configure(topics("3600000"))
	// With the provider's log, to read that the change says it waits.
	b.env = append(b.env, "TF_LOG=INFO")
	out := b.mustRun(0, "apply", "-auto-approve")
	if after := loadOperation(t, c); after == nil || after.Phase != executor.PhaseCompleted {
		t.Errorf("the config change returned before the scale-out completed (%+v): it did not wait", after)
	}
	if !strings.Contains(out, "waiting for the operation lease: an unfinished operation moves this topic") {
		t.Errorf("the config change's log does not say it waits for the lease")
	}
	finished(t, scale, 0)

	cfgs, err := c.Admin().DescribeTopicConfigs(context.Background(), "moving")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cfgs.On("moving", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, cfg := range rc.Configs {
		if cfg.Key == "retention.ms" {
			got = cfg.MaybeValue()
		}
	}
	if got != "3600000" {
		t.Errorf("retention.ms of moving is %q on the cluster; want 3600000", got)
	}
	holds := readLeaseHolds(t, c)
	scaleHold := findHold(t, holds, fmt.Sprintf("kafkascale_cluster %q", c.ClusterID()), "to 4 brokers")
	change := findHold(t, holds, `kafkascale_topic "moving"`, "change the configs of topic moving")
	if change.claimed >= scaleHold.ended || scaleHold.ended >= change.holding {
		t.Errorf("the config change did not wait for the scale-out: %s, %s", scaleHold, change)
	}
	assertNoThrottles(t, c)
	b.mustRun(0, "plan", "-detailed-exitcode")
}

// A scale-out 3→5 runs from one working directory; during its copy the
// other, which owns topics big and small (both being moved) as
// kafkascale_topic, drops small. Its plan shows no change for big, whose
// partitions carry the scale-out's replicas in flight; the deletion waits
// for the scale-out instead of stopping it; no operation of big's own
// (which would copy at the topic's own throttle) is ever recorded; the
// scale-out completes, and the cluster ends balanced.
func TestAccTopicResource_deleteAndRefreshBesideAScaleOut(t *testing.T) {
	testAccParallel(t)
	c, apiURL := startScalableCluster(t, 3)
	servers := c.BootstrapServers()
	a, b := newTerraformCLI(t), newTerraformCLI(t)
	both := testAccProviderConfig(servers, "") + topicHCL("big", 12, 3, "") + topicHCL("small", 4, 3, "")
	b.configure(both)
	b.mustRun(0, "apply", "-auto-approve")
	fillTopic(t, c, "big", 48<<20)
	fillTopic(t, c, "small", 4<<20)

	a.configure(slowConfig(servers, apiURL, 3, "30m"))
	a.mustRun(0, "apply", "-auto-approve")
	a.configure(slowConfig(servers, apiURL, 5, "30m"))
	scale := a.start("apply", "-auto-approve")
	op := waitFirstGroupInFlight(t, c, scale)
	if !op.Moves("big") || !op.Moves("small") {
		t.Fatalf("the scale-out %s does not move both big and small; the test needs it to", op.ID)
	}

	b.configure(testAccProviderConfig(servers, "") + topicHCL("big", 12, 3, ""))
	plan := b.mustRun(2, "plan", "-detailed-exitcode")
	matchAll(t, "the plan beside the scale-out", plan, `kafkascale_topic.small will be destroyed`, `Plan: 0 to add, 0 to change, 1 to destroy`)
	if strings.Contains(plan, "kafkascale_topic.big will be updated") || regexp.MustCompile(`replication_factor\s+= \d+ -> \d+`).MatchString(plan) {
		t.Errorf("the plan changes big, which only the scale-out moves:\n%s", plan)
	}
	b.mustRun(0, "apply", "-auto-approve")
	if after := loadOperation(t, c); after == nil || after.ID != op.ID || after.Phase != executor.PhaseCompleted {
		t.Errorf("small was deleted before the scale-out completed (%+v): the deletion did not wait", after)
	}
	finished(t, scale, 0)
	if rf := loadOperationByKey(t, c, "topic/"+c.ClusterID()+"/big"); rf != nil {
		t.Errorf("an operation of topic big was recorded (%s, throttle %d): the refresh planned a change nobody asked for", rf.ID, rf.ThrottleRate)
	}
	assertOnlyBrokers(t, c, []int32{1, 2, 3, 4, 5})
	// Replicas only: the scale-out balanced preferred leaders with small
	// in the cluster, and deleting small takes its leaders with it, as
	// deleting any topic does.
	assertBalancedByRack(t, c, false)
	assertNoThrottles(t, c)
	a.mustRun(0, "plan", "-detailed-exitcode")
	b.mustRun(0, "plan", "-detailed-exitcode")
}

// A scale-in 5→3 pauses at max_apply_duration with moves done; the
// configuration goes back to 5. The plan says the operation is cancelled
// and shows the moves that put the cluster back; the apply runs them: the
// replicas per broker within each rack end within one of the rack's mean,
// preferred leaders within one of the mean, no throttle or cordon is left,
// nothing acknowledged is lost and no produce failed, and the next plan is
// empty.
func TestAccClusterResource_revertedDrainPutsTheClusterBack(t *testing.T) {
	testAccParallel(t)
	tf := newTerraformCLI(t)
	c, apiURL := startScalableCluster(t, 5)
	ledger := loadCluster(t, c, 48<<20)
	servers := c.BootstrapServers()
	tf.configure(budgetConfig(servers, apiURL, 5, "30m"))
	tf.mustRun(0, "apply", "-auto-approve")
	balancing := strings.Replace(budgetConfig(servers, apiURL, 5, "30m"), "min_throttle     = 1048576\n",
		"min_throttle     = 1048576\n    keep_balanced    = true\n", 1)
	tf.configure(balancing)
	tf.mustRun(0, "apply", "-auto-approve")
	// Within tolerance is not the planner's ideal: the moves it would still
	// make are what a revert may add to undoing the drain. (No plan is
	// asserted empty here: under the ledger's writes, the bytes per broker
	// can drift past max_disk_skew_percent between the apply and the plan.)
	owed := inPlaceMoves(t, c)

	tf.configure(budgetConfig(servers, apiURL, 3, "2s"))
	tf.mustRun(0, "apply", "-auto-approve")
	paused := loadOperation(t, c)
	if paused == nil || !paused.Paused() || paused.MovesDone == 0 {
		t.Fatalf("after the budgeted scale-in the operation is %+v; want it paused with moves done", paused)
	}

	tf.configure(budgetConfig(servers, apiURL, 5, "30m"))
	plan := tf.mustRun(2, "plan", "-detailed-exitcode")
	matchAll(t, "the revert's plan", plan, `An unfinished operation will be cancelled`, `planned_moves\s+= \d+ -> [1-9]\d*`)
	moves := regexp.MustCompile(`planned_moves\s+= \d+ -> (\d+)`).FindStringSubmatch(plan)
	tf.mustRun(0, "apply", "-auto-approve")
	back := loadOperation(t, c)
	if back == nil || back.Kind != executor.KindRebalance || back.Phase != executor.PhaseCompleted {
		t.Fatalf("after the revert the operation is %+v; want a completed rebalance", back)
	}
	if len(moves) == 2 && moves[1] != fmt.Sprint(back.Plan.ReplicaMoves) {
		t.Errorf("the plan showed %s moves, the revert made %d", moves[1], back.Plan.ReplicaMoves)
	}
	if back.Plan.ReplicaMoves > paused.MovesDone+owed {
		t.Errorf("the revert made %d moves; undoing the drain's %d and the %d the planner would have made before it take no more",
			back.Plan.ReplicaMoves, paused.MovesDone, owed)
	}
	t.Logf("the drain made %d moves before it paused; the revert made %d (the planner would have made %d before the drain)",
		paused.MovesDone, back.Plan.ReplicaMoves, owed)
	assertOnlyBrokers(t, c, []int32{1, 2, 3, 4, 5})
	assertBalancedByRack(t, c, true)
	assertNoThrottles(t, c)
	assertNoCordons(t, c)
	tf.mustRun(0, "plan", "-detailed-exitcode")
	ledger.stop()
	ledger.verify(context.Background())
}

// A scale-out 3→5 is stopped half-way by a reassignment made outside
// kafkascale. The next plan is not empty: it names the stopped operation
// and the moves that finish the layout; its apply ends balanced, and the
// plan after it is empty.
func TestAccClusterResource_stoppedScaleOutLeavesAPlan(t *testing.T) {
	testAccParallel(t)
	tf := newTerraformCLI(t)
	c, apiURL, ledger := startLoadedCluster(t)
	servers := c.BootstrapServers()
	tf.configure(slowConfig(servers, apiURL, 3, "30m"))
	tf.mustRun(0, "apply", "-auto-approve")
	tf.configure(slowConfig(servers, apiURL, 5, "30m"))
	scale := tf.start("apply", "-auto-approve")
	op := waitFirstGroupInFlight(t, c, scale)

	// Someone moves, with Kafka's own API, a partition the last group of
	// the plan moves too, somewhere the plan does not send it.
	last := op.Plan.Groups[len(op.Plan.Groups)-1].Moves()[0]
	outside := slices.Clone(last.OldReplicas)
	for id := int32(1); id <= 5; id++ {
		if !slices.Contains(last.OldReplicas, id) && !slices.Contains(last.NewReplicas, id) {
			outside[len(outside)-1] = id
			break
		}
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(last.Topic, last.Partition, outside)
	resp, err := c.Admin().AlterPartitionAssignments(context.Background(), req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("moving %s p%d to %v outside kafkascale: %v", last.Topic, last.Partition, outside, err)
	}
	t.Logf("moved %s p%d from %v to %v outside kafkascale; the plan sends it to %v", last.Topic, last.Partition, last.OldReplicas, outside, last.NewReplicas)
	out := finished(t, scale, 1)
	matchAll(t, "the stopped apply", out, `changed outside kafkascale`)
	waitNoReassignments(t, c)

	plan := tf.mustRun(2, "plan", "-detailed-exitcode")
	matchAll(t, "the plan after the stop", plan, `was abandoned before it reached its layout`, `The next apply rebalances the cluster in place`,
		`planned_moves\s+= \d+ -> [1-9]`)
	tf.mustRun(0, "apply", "-auto-approve")
	assertOnlyBrokers(t, c, []int32{1, 2, 3, 4, 5})
	assertBalancedByRack(t, c, true)
	assertNoThrottles(t, c)
	tf.mustRun(0, "plan", "-detailed-exitcode")
	ledger.stop()
	ledger.verify(context.Background())
}

// waitNoReassignments waits until the controller reports none.
func waitNoReassignments(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if rs, err := listReassignments(c); err == nil && len(rs) == 0 {
			return
		}
	}
	t.Fatalf("reassignments still running after 3 minutes: %v", reassigning(t, c))
}

// Once applied, remove_broker_ids may stay in the configuration while it
// names brokers that are gone. A later plan that has to compute a change
// (here keep_balanced finding a lopsided topic) must not ask for those
// brokers again: the soak (seed 1) found the plan and the apply failing
// with "broker 4 is not registered" whenever an operation was unfinished
// or a rebalance was due.
func TestAccClusterResource_appliedRemoveBrokerIDsStay(t *testing.T) {
	testAccParallel(t)
	tf := newTerraformCLI(t)
	c, apiURL := startScalableCluster(t, 4)
	createTopicRF(t, c, "load", 12, 2)
	fillTopic(t, c, "load", 8<<20)
	cfg := clusterConfig(c.BootstrapServers(), apiURL, 3, "keep_balanced = true\n    initial_throttle = 10485760", "remove_broker_ids = [4]")
	tf.configure(cfg)
	tf.mustRun(0, "apply", "-auto-approve")
	assertOnlyBrokers(t, c, []int32{1, 2, 3})

	createTopic(t, c, "lopsided", map[int32][]int32{0: {1, 2}, 1: {1, 2}, 2: {2, 1}, 3: {1, 2}, 4: {2, 1}, 5: {1, 2}})
	plan := tf.mustRun(2, "plan", "-detailed-exitcode")
	matchAll(t, "the plan after the scale-in", plan, `The cluster is out of balance`)
	tf.mustRun(0, "apply", "-auto-approve")
	tf.mustRun(0, "plan", "-detailed-exitcode")
	assertOnlyBrokers(t, c, []int32{1, 2, 3})
	assertNoThrottles(t, c)
}
