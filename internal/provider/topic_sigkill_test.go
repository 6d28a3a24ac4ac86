//go:build linux

package provider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// A replication factor change 2 → 3 is SIGKILLed with terraform apply and
// the provider it runs, so nothing is saved to the Terraform state, and the
// user sets 2 again. The plan finds the change in the operation log, shows
// it pending and says the apply cancels it; the apply ends with every
// partition at 2 replicas, no throttle and nothing reassigning, and the
// next plan is empty.
func TestAccTopicResource_sigkillThenRevert(t *testing.T) {
	testAccParallel(t)
	tf := newTerraformCLI(t)
	c := startSlowReplicationCluster(t)
	servers := c.BootstrapServers()
	const topic, partitions = "killed", 12
	key := "topic/" + c.ClusterID() + "/" + topic

	tf.configure(topicConfig(servers, topic, partitions, 2, ""))
	tf.mustRun(0, "apply", "-auto-approve")
	fillTopic(t, c, topic, 16<<20)

	inFlight := killReplicationFactorChange(t, tf, c, topic, partitions, false)
	if len(throttlesSet(t, c)) == 0 {
		t.Fatal("no throttle is set after the kill: the change was not caught midway, so this proves nothing")
	}

	tf.configure(topicConfig(servers, topic, partitions, 2, `throttle = 52428800`))
	plan := tf.mustRun(2, "plan", "-detailed-exitcode")
	t.Logf("plan after the kill and the revert:\n%s", plan)
	matchAll(t, "the plan after the kill and the revert", plan,
		`Warning: An unfinished replication factor change will be cancelled`,
		fmt.Sprintf(`cancels operation %s \(replication-factor\)`, inFlight.ID),
		fmt.Sprintf(`pending_operation\s+= "Operation %s \(replication factor change of topic killed to 3\) stopped in phase reassign`, inFlight.ID),
		`1 to change`,
	)
	tf.mustRun(0, "apply", "-auto-approve")
	assertTopicOnEveryBroker(t, c, topic, partitions, 2)
	assertNoThrottles(t, c)
	if rs := reassigning(t, c); len(rs) > 0 {
		t.Errorf("%d partitions still reassigning after the apply", len(rs))
	}
	if op := loadOperationByKey(t, c, key); op == nil || !op.Done() {
		t.Errorf("the topic's operation is %+v after the apply; want it done", op)
	}
	tf.mustRun(0, "plan", "-detailed-exitcode")
	assertTopicReadable(t, c, topic, 16<<20)
	tf.mustRun(0, "destroy", "-auto-approve")
}

// A replication factor change 2 → 3 is SIGKILLed midway; its copies then
// finish on their own and its throttles are gone, as when the kill lands
// after the last move lost its throttle but before the preferred leaders
// were elected and the operation closed (the soak's seed 2, step 27). The
// topic then reads as 3 replicas everywhere with nothing throttled: only
// the operation log knows the change is unfinished. The plan must still
// show it pending and say the apply resumes it; the apply closes the
// operation with preferred leaders elected, and the next plan is empty.
func TestAccTopicResource_sigkillAfterTheLastMove(t *testing.T) {
	testAccParallel(t)
	tf := newTerraformCLI(t)
	c := startSlowReplicationCluster(t)
	servers := c.BootstrapServers()
	const topic, partitions = "lastmove", 12
	key := "topic/" + c.ClusterID() + "/" + topic

	tf.configure(topicConfig(servers, topic, partitions, 2, ""))
	tf.mustRun(0, "apply", "-auto-approve")
	fillTopic(t, c, topic, 4<<20)

	inFlight := killReplicationFactorChange(t, tf, c, topic, partitions, true)
	removeThrottlesOutside(t, c, topic)
	waitNoReassignments(t, c)
	// Every move is done: each partition has its 3 replicas. (Their ISR
	// is not checked here: a replica that just joined can drop out for a
	// moment on a loaded machine, and nothing waits for it before the
	// apply; the apply does, and the check after it reads the ISR.)
	replicas, _ := replicasByPartition(t, c)
	for p, rs := range replicas {
		if strings.HasPrefix(p, topic+" ") && len(rs) != 3 {
			t.Fatalf("%s has replicas %v after the kill and the copies; want 3, or this proves nothing", p, rs)
		}
	}
	if op := loadOperationByKey(t, c, key); op == nil || op.Done() {
		t.Fatalf("the operation is %+v after the kill; want it unfinished, or this proves nothing", op)
	}

	// The configuration still asks for 3 replicas.
	plan := tf.mustRun(2, "plan", "-detailed-exitcode")
	t.Logf("plan after the kill:\n%s", plan)
	matchAll(t, "the plan after the kill", plan,
		`Warning: An interrupted replication factor change will resume`,
		fmt.Sprintf(`pending_operation\s+= "Operation %s \(replication factor change of topic lastmove to 3\) stopped in phase reassign`, inFlight.ID),
		`1 to change`,
	)
	tf.mustRun(0, "apply", "-auto-approve")
	if op := loadOperationByKey(t, c, key); op == nil || op.ID != inFlight.ID || op.Phase != executor.PhaseCompleted {
		t.Errorf("the topic's operation is %+v after the apply; want %s completed", op, inFlight.ID)
	}
	assertTopicOnEveryBroker(t, c, topic, partitions, 3)
	if astray := notPreferredLeaders(t, c); len(astray) > 0 {
		t.Errorf("after the apply, %d partitions are not led by their preferred leader: %v", len(astray), astray)
	}
	assertNoThrottles(t, c)
	tf.mustRun(0, "plan", "-detailed-exitcode")
	assertTopicReadable(t, c, topic, 4<<20)
	tf.mustRun(0, "destroy", "-auto-approve")
}

// removeThrottlesOutside deletes the replication throttles of topic and of
// every running broker, as another tool would.
func removeThrottlesOutside(t *testing.T, c *kafkatest.Cluster, topic string) {
	t.Helper()
	ctx := context.Background()
	var ids []int32
	for _, b := range c.Brokers() {
		if b.Running {
			ids = append(ids, b.ID)
		}
	}
	del := func(keys ...string) []kadm.AlterConfig {
		out := make([]kadm.AlterConfig, len(keys))
		for i, k := range keys {
			out[i] = kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k}
		}
		return out
	}
	rs, err := c.Admin().AlterTopicConfigs(ctx, del(kafka.ConfigLeaderThrottledReplicas, kafka.ConfigFollowerThrottledReplicas), topic)
	if err == nil {
		err = errors.Join(errorsOf(rs)...)
	}
	if err != nil {
		t.Fatalf("removing the throttled replicas of %s: %v", topic, err)
	}
	for _, id := range ids {
		rs, err := c.Admin().AlterBrokerConfigs(ctx, del("leader.replication.throttled.rate", "follower.replication.throttled.rate"), id)
		if err == nil {
			err = errors.Join(errorsOf(rs)...)
		}
		if err != nil {
			t.Fatalf("removing the throttle rates of broker %d: %v", id, err)
		}
	}
}

func errorsOf(rs kadm.AlterConfigsResponses) []error {
	var out []error
	for _, r := range rs {
		if r.Err != nil {
			out = append(out, fmt.Errorf("%s: %w", r.Name, r.Err))
		}
	}
	return out
}

// killReplicationFactorChange applies replication factor 3 to topic at a
// throttle of 64 KiB/s and SIGKILLs terraform and the provider it runs once
// the change is in flight (a step submitted and a reassignment listed), so
// that nothing is saved to the Terraform state. With allSubmitted, it waits
// until every move of the plan is submitted. It returns the operation as
// last seen before the kill.
func killReplicationFactorChange(t *testing.T, tf *terraformCLI, c *kafkatest.Cluster, topic string, partitions int, allSubmitted bool) *executor.Operation {
	t.Helper()
	key := "topic/" + c.ClusterID() + "/" + topic
	tf.configure(topicConfig(c.BootstrapServers(), topic, partitions, 3, `throttle = 65536`))
	apply := tf.start("apply", "-auto-approve")
	deadline := time.Now().Add(4 * time.Minute)
	var inFlight *executor.Operation
	for inFlight == nil {
		select {
		case <-apply.exited:
			t.Fatalf("terraform apply ended before the change was in flight:\n%s", apply.out)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change was not in flight within 4 minutes:\n%s", apply.out)
		}
		op := loadOperationByKey(t, c, key)
		if op == nil || op.Phase != executor.PhaseReassign || op.StepsSubmitted < 1 {
			continue
		}
		if allSubmitted && !everyMoveStarted(op) {
			continue
		}
		if rs, err := listReassignments(c); err == nil && len(rs) > 0 {
			inFlight = op
		}
	}
	pgid := apply.cmd.Process.Pid
	members := groupMembers(pgid)
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL to process group %d: %v", pgid, err)
	}
	<-apply.exited
	waitGone(t, members)
	return inFlight
}

// everyMoveStarted says whether every move of op's plan is submitted: the
// groups before op.Group are done, and each from it on has all its moves
// recorded as started.
func everyMoveStarted(op *executor.Operation) bool {
	if op.Plan == nil {
		return false
	}
	for g := op.Group; g < len(op.Plan.Groups); g++ {
		if op.StartedIn(g) < len(op.Plan.Groups[g].Moves()) {
			return false
		}
	}
	return true
}
