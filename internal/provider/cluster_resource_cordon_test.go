package provider_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// During a slow scale-in 5→3, someone else creates a 60-partition RF-3
// topic with a plain admin client. The leaving brokers are cordoned
// (KIP-1066), so the controller places none of its replicas on them, the
// drain completes, and afterwards no broker keeps a cordon.
func TestAccClusterResource_drainCordonsLeavingBrokers(t *testing.T) {
	testAccParallel(t)
	c, apiURL := startScalableCluster(t, 5)
	createTopicRF(t, c, "load", 24, 3)
	// 64 MiB: the drain copies about 77 MiB into three brokers at 1 MiB/s
	// each, some 25 s, which leaves the watch many polls to see a cordoned
	// broker with a move in flight.
	fillTopic(t, c, "load", 64<<20)

	late := &lateTopic{}
	var removed []int32
	stopWatch := make(chan struct{})
	var watch sync.WaitGroup
	t.Cleanup(func() { close(stopWatch); watch.Wait() })
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: slowConfig(c.BootstrapServers(), apiURL, 5, "30m")},
			{
				PreConfig: func() {
					watch.Add(1)
					go func() {
						defer watch.Done()
						late.createWhenCordoned(c, stopWatch)
					}()
				},
				Config: slowConfig(c.BootstrapServers(), apiURL, 3, "30m"),
				Check: func(*terraform.State) error {
					late.mu.Lock()
					defer late.mu.Unlock()
					if late.err != nil {
						t.Fatalf("creating the topic during the drain: %v", late.err)
					}
					if late.replicas == nil {
						t.Fatal("the topic was never created: no cordoned broker with a reassignment in flight was seen")
					}
					op := loadOperation(t, c)
					removed = op.RemoveBrokers
					if op.Phase != executor.PhaseCompleted {
						t.Errorf("operation phase %s, want completed", op.Phase)
					}
					if !slices.Equal(late.cordoned, op.RemoveBrokers) {
						t.Errorf("brokers %v were cordoned during the drain; want the leaving brokers %v", late.cordoned, op.RemoveBrokers)
					}
					// Lifted before the brokers were stopped: none is left to remove.
					if len(op.CordonedBrokers) != 0 {
						t.Errorf("the completed operation still records cordons on %v", op.CordonedBrokers)
					}
					t.Logf("topic late created %s into the drain of brokers %v with %d reassignment(s) in flight",
						late.at.Sub(op.StartedAt).Round(time.Millisecond), op.RemoveBrokers, late.inFlight)
					if len(late.replicas) != 60 {
						t.Errorf("topic late has %d partitions, want 60", len(late.replicas))
					}
					// A step that keeps a replica on a leaving broker lifts
					// the cordon for its submission: a topic created in that
					// moment may land there (ci18). The drain is then planned
					// anew and drains it too; otherwise the cordon kept it off.
					var landed []string
					for p, rs := range late.replicas {
						if len(rs) != 3 {
							t.Errorf("late p%d has replicas %v, want 3", p, rs)
						}
						for _, b := range rs {
							if slices.Contains(op.RemoveBrokers, b) {
								landed = append(landed, fmt.Sprintf("late p%d on broker %d", p, b))
							}
						}
					}
					if len(landed) > 0 && !strings.HasSuffix(op.ID, "-anew") {
						t.Errorf("%s landed on the leaving brokers, and the drain that completed (%s) is not the one planned anew", strings.Join(landed, ", "), op.ID)
					}
					if len(landed) > 0 {
						t.Logf("%d replica(s) of late landed on the leaving brokers while a step lifted the cordon; the drain was planned anew", len(landed))
					}
					var staying []int32
					for _, b := range op.BrokersBefore {
						if !slices.Contains(op.RemoveBrokers, b) {
							staying = append(staying, b)
						}
					}
					assertOnlyBrokers(t, c, staying)
					assertNoThrottles(t, c)
					for _, s := range cordonsSet(t, c) {
						t.Errorf("%s after the scale-in", s)
					}
					return nil
				},
			},
			{Config: slowConfig(c.BootstrapServers(), apiURL, 3, "30m"), PlanOnly: true},
		},
	})
	assertReusedIDUncordoned(t, c, removed[0])
}

// assertReusedIDUncordoned brings broker id back with an empty disk, as a
// platform that reuses ids does, and checks it carries no cordon: Kafka
// keeps one under the id after the broker is unregistered.
func assertReusedIDUncordoned(t *testing.T, c *kafkatest.Cluster, id int32) {
	t.Helper()
	ctx := t.Context()
	if err := c.AddBrokerWithID(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	// A new client: kafkatest's own still dials the id's former port.
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got, err := cl.Cordons(ctx, []int32{id})
	if err != nil {
		t.Fatal(err)
	}
	if got[id] != "" {
		t.Errorf("broker %d, back under its id after the scale-in, is cordoned (%s = %q)", id, kafka.ConfigCordonedLogDirs, got[id])
	}
}

// lateTopic is the topic someone else creates during the drain, and what
// the cluster showed when it was created.
type lateTopic struct {
	mu       sync.Mutex
	cordoned []int32
	inFlight int
	at       time.Time
	replicas map[int32][]int32
	err      error
}

// createWhenCordoned waits until the same brokers have been cordoned for
// cordonSettled while reassignments run (the drain is under way, between
// the submissions of its steps), then creates topic late with a plain
// admin client, as another team would, and records where the controller
// put it. The wait is for the controller, which learns of a cordon from the
// brokers' heartbeats, and for the step submissions at the start of a
// group, which lift the cordon for a moment (see executor.submitCordoned).
func (l *lateTopic) createWhenCordoned(c *kafkatest.Cluster, stop <-chan struct{}) {
	const cordonSettled = 3 * time.Second
	ctx := context.Background()
	var since time.Time
	var seen []int32
	for {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		cordoned, err := cordonedBrokers(ctx, c)
		rs, rerr := listReassignments(c)
		if err != nil || rerr != nil || len(cordoned) == 0 || len(rs) == 0 || !slices.Equal(cordoned, seen) {
			since, seen = time.Now(), cordoned
			continue
		}
		if time.Since(since) < cordonSettled {
			continue
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.cordoned, l.inFlight, l.at = cordoned, len(rs), time.Now()
		resp, err := c.Admin().CreateTopic(ctx, 60, 3, nil, "late")
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			l.err = err
			return
		}
		// The creating broker's metadata may lag the controller a moment.
		for i := 0; i < 50; i++ {
			td, err := c.Admin().ListTopics(ctx, "late")
			if err == nil && len(td["late"].Partitions) == 60 {
				l.replicas = map[int32][]int32{}
				for _, p := range td["late"].Partitions {
					l.replicas[p.Partition] = slices.Clone(p.Replicas)
				}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		l.err = fmt.Errorf("topic late never showed its 60 partitions")
		return
	}
}

// cordonedBrokers lists the running brokers whose cordoned.log.dirs is set.
func cordonedBrokers(ctx context.Context, c *kafkatest.Cluster) ([]int32, error) {
	var ids []int32
	for _, b := range c.Brokers() {
		if b.Running {
			ids = append(ids, b.ID)
		}
	}
	bcs, err := c.Admin().DescribeBrokerConfigs(ctx, ids...)
	if err != nil {
		return nil, err
	}
	var out []int32
	for _, rc := range bcs {
		if rc.Err != nil {
			return nil, rc.Err
		}
		for _, cfg := range rc.Configs {
			if cfg.Key == kafka.ConfigCordonedLogDirs && cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig && cfg.MaybeValue() != "" {
				var id int32
				if _, err := fmt.Sscan(rc.Name, &id); err == nil {
					out = append(out, id)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// cordonsSet lists the running brokers that keep a cordon.
func cordonsSet(t *testing.T, c *kafkatest.Cluster) []string {
	t.Helper()
	ids, err := cordonedBrokers(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, id := range ids {
		out = append(out, fmt.Sprintf("broker %d keeps %s", id, kafka.ConfigCordonedLogDirs))
	}
	return out
}

// A slow scale-in 5→3 cut off by its timeout leaves the leaving brokers
// cordoned (the drain resumes later); an apply that asks for 5 brokers
// again cancels it, and then no broker keeps a cordon, all 5 stay, and
// nothing is reassigning.
func TestAccClusterResource_cancelledDrainRemovesTheCordon(t *testing.T) {
	testAccParallel(t)
	c, apiURL := startScalableCluster(t, 5)
	createTopicRF(t, c, "load", 24, 3)
	// 64 MiB: the drain copies about 77 MiB into three brokers at 1 MiB/s
	// each, at least 25 s, so an apply cut off at 15 s always stops it
	// half-way, and the revert has half as much to move back.
	fillTopic(t, c, "load", 64<<20)

	var interrupted *executor.Operation
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: slowConfig(c.BootstrapServers(), apiURL, 5, "30m")},
			{
				Config:      slowConfig(c.BootstrapServers(), apiURL, 3, "15s"),
				ExpectError: wrapped(`(?s)Scaling interrupted.*the next apply resumes it`),
			},
			{
				PreConfig: func() {
					interrupted = loadOperation(t, c)
					if interrupted == nil || interrupted.Phase != executor.PhaseReassign {
						t.Fatalf("after the interrupted apply the stored operation is %+v; want one in phase reassign", interrupted)
					}
					cordoned, err := cordonedBrokers(context.Background(), c)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(cordoned, interrupted.RemoveBrokers) || !slices.Equal(interrupted.CordonedBrokers, interrupted.RemoveBrokers) {
						t.Fatalf("interrupted drain of %v: brokers %v are cordoned and the operation records %v; want the leaving brokers",
							interrupted.RemoveBrokers, cordoned, interrupted.CordonedBrokers)
					}
				},
				Config: slowConfig(c.BootstrapServers(), apiURL, 5, "30m"),
				Check: func(*terraform.State) error {
					// The interrupted drain is cancelled; when the moves it
					// had finished left the cluster out of balance, the
					// revert then rebalances it, and that operation's
					// record takes the key.
					op := loadOperation(t, c)
					cancelled := op.ID == interrupted.ID && op.Phase == executor.PhaseCancelled
					putBack := op.ID != interrupted.ID && op.Kind == executor.KindRebalance && op.Phase == executor.PhaseCompleted
					if !cancelled && !putBack {
						t.Errorf("operation %s (%s) is %s; want the interrupted %s cancelled, or the rebalance after its cancel completed",
							op.ID, op.Kind, op.Phase, interrupted.ID)
					}
					for _, s := range cordonsSet(t, c) {
						t.Errorf("%s after the cancel", s)
					}
					if rs := reassigning(t, c); len(rs) > 0 {
						t.Errorf("%d reassignment(s) still in flight after the cancel", len(rs))
					}
					assertOnlyBrokers(t, c, []int32{1, 2, 3, 4, 5})
					assertNoThrottles(t, c)
					// Not asserted: that a topic created right after the cancel
					// gets replicas on the leaving brokers again. On Kafka 4.4 here,
					// three runs placed none on them for 30 s after the cancel,
					// although DescribeConfigs shows no cordon and DescribeLogDirs
					// v5 reports IsCordoned=false on both. On a 3-broker cluster a
					// removal reached the controller's placement in 0.7 s to 12.8 s
					// (TestCordonOnRealBroker, on a loaded machine). Open.
					return nil
				},
			},
		},
	})
}
