package provider_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// budgetConfig is slowConfig with rebalance.max_apply_duration set.
func budgetConfig(servers []string, apiURL string, brokers int, budget string) string {
	return strings.Replace(slowConfig(servers, apiURL, brokers, "30m"),
		"    min_throttle     = 1048576\n",
		fmt.Sprintf("    min_throttle     = 1048576\n    max_apply_duration = %q\n", budget), 1)
}

// A 3 → 5 scale-out of several groups under acks=all load, with a
// max_apply_duration far shorter than a group, as an auto-apply workspace
// with a run time limit would run it: each apply succeeds once the moves it
// started are done, at least one group whole, with a warning that says how
// far it got; between applies nothing is reassigning, no throttle is left
// and exactly the finished moves are on the cluster; the plan after each shows the change again with
// what is left; the same operation goes on apply by apply, the last one
// completes it, and the plan after it is empty. Every acknowledged record
// is readable.
func TestAccClusterResource_maxApplyDurationPausesAndConverges(t *testing.T) {
	testAccParallel(t)
	tf := newTerraformCLI(t)
	c, apiURL, ledger := startLoadedCluster(t)
	tf.configure(budgetConfig(c.BootstrapServers(), apiURL, 3, "1s"))
	tf.mustRun(0, "apply", "-auto-approve")

	tf.configure(budgetConfig(c.BootstrapServers(), apiURL, 5, "1s"))
	var first *executor.Operation
	applies, groupsBefore := 0, 0
	for {
		out := tf.mustRun(0, "apply", "-auto-approve")
		applies++
		op := loadOperation(t, c)
		if op == nil {
			t.Fatalf("apply %d left no operation in %s", applies, "__kafkascale_operations")
		}
		if first == nil {
			first = op
		}
		if op.ID != first.ID || fmt.Sprint(op.Plan.Target) != fmt.Sprint(first.Plan.Target) {
			t.Fatalf("apply %d ran operation %s; want %s and its persisted plan continued", applies, op.ID, first.ID)
		}
		if op.Done() {
			if strings.Contains(out, "paused at max_apply_duration") {
				t.Errorf("the apply that completed the operation warns that it paused:\n%s", out)
			}
			break
		}
		if applies > len(op.Plan.Groups)+1 {
			t.Fatalf("operation %s is unfinished after %d applies of a %d-group plan", op.ID, applies, len(op.Plan.Groups))
		}
		if op.Group <= groupsBefore {
			t.Errorf("apply %d left the operation at group %d, as the apply before it: every apply finishes a group", applies, op.Group)
		}
		groupsBefore = op.Group
		assertPausedBetweenGroups(t, c, op, applies)
		pct := 100 * float64(op.BytesDone) / float64(op.Plan.TotalBytes)
		matchAll(t, fmt.Sprintf("apply %d", applies), out,
			`Warning: Operation paused at max_apply_duration`,
			fmt.Sprintf(`Operation %s \(scale-out to 5 brokers\) reached rebalance.max_apply_duration and started no new move: %d of %d moves done \(%d of %d groups whole\), %.0f %% of bytes`,
				op.ID, op.MovesDone, len(op.Plan.Moves()), op.Group, len(op.Plan.Groups), pct),
			`the next apply continues this operation`,
			`Apply complete! Resources: 0 added, 1 changed, 0 destroyed.`,
		)

		// The state keeps the count the operation started from, so the
		// plan shows the change again, with what is left.
		plan := tf.mustRun(2, "plan", "-detailed-exitcode")
		rest := op.Remaining(op.ThrottleRate)
		matchAll(t, fmt.Sprintf("the plan after apply %d", applies), plan,
			`Warning: A paused operation will continue`,
			fmt.Sprintf(`pending_operation\s+= "Operation %s \(scale-out to 5 brokers\) paused in phase reassign at group %d/%d, with %d moves \(%d bytes\) left`,
				op.ID, op.Group+1, len(op.Plan.Groups), rest.Moves, rest.Bytes),
			`broker_count\s+= 3 -> 5`,
			fmt.Sprintf(`planned_moves\s+= \d+ -> %d`, rest.Moves),
		)
	}
	done := loadOperation(t, c)
	t.Logf("operation %s completed over %d applies (%d groups, %d moves, %d bytes)",
		done.ID, applies, len(done.Plan.Groups), done.Plan.ReplicaMoves, done.Plan.TotalBytes)
	if applies < 2 || applies > len(done.Plan.Groups) {
		t.Errorf("%d applies for %d groups; want at least 2, and no more than one per group", applies, len(done.Plan.Groups))
	}
	assertOperationCompleted(t, c, 5)
	assertAssignmentIs(t, c, done.Plan.Target)
	assertOnlyBrokers(t, c, brokerRange(5))
	assertScaledOut(t, c, countPartitions(t, c))
	assertSettledAndIntact(t, tf, c, ledger)
}

// assertPausedBetweenGroups checks the cluster while op is paused: five
// brokers registered, nothing reassigning, no throttle, every move started
// finished, the moves done (the groups before op.Group and the finished
// ones) on their new replicas and the others still on their old ones.
func assertPausedBetweenGroups(t *testing.T, c *kafkatest.Cluster, op *executor.Operation, apply int) {
	t.Helper()
	if !op.Paused() || op.Phase != executor.PhaseReassign || op.LastError != "" {
		t.Errorf("after apply %d the operation is in phase %s, paused %v, last error %q; want paused in reassign, no error",
			apply, op.Phase, op.Paused(), op.LastError)
	}
	for _, k := range op.Started {
		if !slices.Contains(op.Finished, k) {
			t.Errorf("after apply %d move %d is started and not finished; a paused operation leaves nothing in flight", apply, k)
		}
	}
	regs, err := kafkatest.DescribeCluster(context.Background(), c.Client())
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) != 5 {
		t.Errorf("%d brokers registered while paused, want the 5 the operation added", len(regs))
	}
	if rs := reassigning(t, c); len(rs) > 0 {
		t.Errorf("%d partitions reassigning while paused after apply %d; a paused operation leaves nothing in flight", len(rs), apply)
	}
	assertNoThrottles(t, c)
	// A partition may move in several groups, one replica at a time: it
	// must stand where its last move of a finished group left it, or,
	// with none finished, where its first move starts.
	want := map[string][]int32{}
	moved, waiting := 0, 0
	n := 0
	for i, g := range op.Plan.Groups {
		for _, m := range g.Moves() {
			k := fmt.Sprintf("%s-%d", m.Topic, m.Partition)
			switch {
			case i < op.Group || slices.Contains(op.Finished, n):
				want[k] = m.NewReplicas
				moved++
			case want[k] == nil:
				want[k] = m.OldReplicas
				waiting++
			default:
				waiting++
			}
			n++
		}
	}
	live := readReplicas(t, c)
	for k, w := range want {
		if !engine.SameMembers(live[k], w) {
			t.Errorf("partition %s has replicas %v while paused after %d of %d groups, want %v", k, live[k], op.Group, len(op.Plan.Groups), w)
		}
	}
	t.Logf("paused after apply %d at group %d/%d: %d moves on the cluster, %d waiting, %d of %d bytes",
		apply, op.Group, len(op.Plan.Groups), moved, waiting, op.BytesDone, op.Plan.TotalBytes)
}
