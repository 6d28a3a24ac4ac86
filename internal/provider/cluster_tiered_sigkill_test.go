//go:build linux

package provider_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// TestAccClusterResource_sigkillMidGroup on a tiered cluster (issue 39):
// topic load tiers, 8 partitions of 8 MiB with a local retention of
// 1 MiB each, so the plan copies their local tails only; terraform apply and the provider are
// SIGKILLed in the middle of a group of the 3 -> 5 scale-out, under
// acks=all load; the next apply resumes the same operation and completes
// it, with nothing lost, the whole topic readable from offset 0 (most of
// it from remote storage) and no throttle left.
//
// Then the cancel: a scale-in back to 3, which drains the tiered
// partitions' replicas off brokers 4 and 5, is SIGKILLed in a group too,
// and the configuration goes back to 5. The plan says the drain is
// cancelled, and the apply reverts its moves in flight: the cluster keeps
// its five brokers, none cordoned, no throttle left, nothing lost.
func TestAccClusterResource_sigkillMidGroupTiered(t *testing.T) {
	testAccParallel(t)
	tf := newTerraformCLI(t)
	c, apiURL := withScalingAPI(t, kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}, Tiered: &kafkatest.TieredOptions{}}))
	const size = 64 << 20 // what assertSettledAndIntact reads back
	const partitions = 8
	const localRetention = 1 << 20
	createTieredTopic(t, c, "load", partitions, 3, map[string]string{
		"segment.bytes":         strconv.Itoa(archiveSegmentBytes),
		"local.retention.bytes": strconv.Itoa(localRetention),
	})
	fillTopic(t, c, "load", size)
	local, remote := waitTiered(t, c, "load", localRetention+archiveSegmentBytes)
	t.Logf("load: %s written, %s on its leaders' disks, %s in remote storage", mibs(size), mibs(local), mibs(remote))
	createTieredTopic(t, c, "ledger", 6, 3, map[string]string{"min.insync.replicas": "2", "segment.ms": "2000", "local.retention.ms": "1000"})
	ledger := runLedger(t, c, "ledger")

	killed := killMidGroup(t, tf, c, apiURL)
	// The plan copies local tails: at most the local log of each moving
	// replica's partition (2 MiB), far from its whole size (8 MiB).
	perPartition := int64(size / partitions)
	if limit := int64(killed.Plan.ReplicaMoves) * perPartition * 3 / 8; killed.Plan.TotalBytes > limit {
		t.Errorf("the killed operation planned %s for %d moves: want under %s, 3/8 of the partitions' whole size",
			mibs(killed.Plan.TotalBytes), killed.Plan.ReplicaMoves, mibs(limit))
	}
	t.Logf("the killed operation: %d moves, %s planned; %s of the moving partitions stay in remote storage, not copied; %d moves done",
		killed.Plan.ReplicaMoves, mibs(killed.Plan.TotalBytes), mibs(killed.Plan.RemoteBytes), killed.MovesDone)

	tf.mustRun(0, "apply", "-auto-approve")
	done := loadOperation(t, c)
	if done.ID != killed.ID || done.Phase != executor.PhaseCompleted {
		t.Errorf("after the apply the operation is %s in phase %s; want the killed %s resumed and completed", done.ID, done.Phase, killed.ID)
	}
	assertOperationCompleted(t, c, 5)
	assertAssignmentIs(t, c, killed.Plan.Target)
	assertOnlyBrokers(t, c, brokerRange(5))

	tf.configure(slowConfig(c.BootstrapServers(), apiURL, 3, "30m"))
	drain := killApplyMidGroup(t, tf, c)
	if drain.Kind != executor.KindScaleIn {
		t.Fatalf("the operation killed after the scale-out is %s (%s); want the scale-in to 3", drain.ID, drain.Kind)
	}
	tf.configure(slowConfig(c.BootstrapServers(), apiURL, 5, "30m"))
	plan := tf.mustRun(2, "plan", "-detailed-exitcode")
	matchAll(t, "the plan after the killed drain and the revert", plan,
		`Warning: An unfinished operation will be cancelled`,
		fmt.Sprintf(`cancels operation %s \(scale-in\): \d+ move\(s\) in flight are reverted`, drain.ID),
	)
	tf.mustRun(0, "apply", "-auto-approve")
	// The cancel is recorded on the drain's operation; a rebalance that
	// puts back what the drain had finished may follow it.
	if last := loadOperation(t, c); last == nil || !last.Done() || (last.ID == drain.ID && last.Phase != executor.PhaseCancelled) ||
		(last.ID != drain.ID && last.Phase != executor.PhaseCompleted) {
		t.Errorf("after the revert the last operation is %+v; want the killed drain %s cancelled, or a completed operation after it", last, drain.ID)
	}
	assertOnlyBrokers(t, c, brokerRange(5))
	assertNoCordons(t, c)
	assertSettledAndIntact(t, tf, c, ledger)
}
