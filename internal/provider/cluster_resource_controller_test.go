package provider_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// A cluster with three KRaft controllers scales 3 → 5 under acks=all load
// (min.insync.replicas=2), and the active controller is SIGKILLed while a
// group of reassignments is in flight. The quorum elects another leader and
// the same apply completes on it without user action: 5 brokers, no
// throttle left, nothing reassigning, every acknowledged record readable,
// and the next plan empty.
func TestAccClusterResource_controllerFailoverMidGroup(t *testing.T) {
	testAccPreCheck(t)
	c, apiURL := withScalingAPI(t, kafkatest.StartT(t, kafkatest.Options{
		Controllers: 3, Brokers: 3, Racks: []string{"a", "b", "c"},
	}))
	// Half the data of the other kill tests: the 1 MiB/s throttle of
	// slowConfig still keeps each group in flight for seconds, and the
	// test stays short.
	const size = 32 << 20
	ledger := loadCluster(t, c, size)
	ledger.allowFailures(0, "the killed controller is one of three and hosts no replica: the quorum elects "+
		"another within seconds, and every broker keeps serving, so no produce waits 2 minutes")

	fo := &failover{killed: -1}
	watch := background(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: slowConfig(c.BootstrapServers(), apiURL, 3, "30m")},
			{
				PreConfig: func() {
					watch(func(stop <-chan struct{}) { fo.killMidGroup(c, stop) })
				},
				Config: slowConfig(c.BootstrapServers(), apiURL, 5, "30m"),
				Check: func(*terraform.State) error {
					killed, op, err := fo.result()
					if err != nil {
						t.Fatalf("killing the active controller: %v", err)
					}
					if killed < 0 {
						t.Fatalf("the active controller was never killed: no group was seen in flight")
					}
					t.Logf("controller %d was SIGKILLed during group %d/%d of operation %s (%d of %d moves done)",
						killed, op.Group+1, len(op.Plan.Groups), op.ID, op.MovesDone, op.Plan.ReplicaMoves)
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					leader, err := c.WaitNewActiveController(ctx, killed)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Contains(c.ControllerIDs(), leader) {
						t.Errorf("the quorum leader %d is none of the controllers %v", leader, c.ControllerIDs())
					}
					t.Logf("controller %d leads now", leader)
					done := loadOperation(t, c)
					if done.ID != op.ID {
						t.Errorf("the apply completed operation %s; want the one in flight at the kill, %s", done.ID, op.ID)
					}
					assertOperationCompleted(t, c, 5)
					assertOnlyBrokers(t, c, brokerRange(5))
					assertScaledOut(t, c, countPartitions(t, c))
					assertNoThrottles(t, c)
					if rs := reassigning(t, c); len(rs) > 0 {
						t.Errorf("%d partitions still reassigning after the apply", len(rs))
					}
					return nil
				},
			},
			{Config: slowConfig(c.BootstrapServers(), apiURL, 5, "30m"), PlanOnly: true},
		},
	})
	if acked := ledger.stop(); acked == 0 {
		t.Fatal("no record was acknowledged, so none being lost proves nothing")
	}
	ledger.verify(context.Background())
	assertTopicReadable(t, c, "load", size)
}

// failover kills the active controller once, from a goroutine, and keeps
// what it did for the test to check afterwards.
type failover struct {
	mu     sync.Mutex
	killed int32
	op     *executor.Operation
	err    error
}

func (f *failover) result() (int32, *executor.Operation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed, f.op, f.err
}

// killMidGroup polls the operations topic and the reassignments until the
// operation is in phase reassign with a group submitted and Kafka lists its
// reassignments, then SIGKILLs the active controller. It runs in a
// goroutine, so it reports through f instead of failing the test.
func (f *failover) killMidGroup(c *kafkatest.Cluster, stop <-chan struct{}) {
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
		return
	}
	defer cl.Close()
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		op, err := cl.Operations().Load(ctx, "cluster/"+c.ClusterID())
		if err != nil || op == nil || op.Phase != executor.PhaseReassign || op.Plan == nil || op.StepsSubmitted < 1 {
			continue
		}
		if rs, err := listReassignments(c); err != nil || len(rs) == 0 {
			continue
		}
		killed, err := c.KillActiveController(ctx)
		f.mu.Lock()
		f.killed, f.op, f.err = killed, op, err
		f.mu.Unlock()
		return
	}
}
