//go:build linux

package provider_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
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

	tf.configure(topicConfig(servers, topic, partitions, 3, `throttle = 65536`))
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
