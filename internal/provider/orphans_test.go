package provider_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// A replication factor change is stopped by its update timeout, leaving its
// throttles on, and then its record is completed by hand (and its
// reassignments cancelled by hand), so no operation of ours will remove
// them. A plain admin client sets throttles of its own: a rate on one of
// the same brokers, and throttled replicas on a topic of its own. The plan
// of an unrelated topic warns about the orphans, its apply removes them,
// and the admin's throttles stay.
func TestAccTopicResource_orphanedThrottlesRemovedByAnUnrelatedApply(t *testing.T) {
	testAccParallel(t)
	c := startSlowReplicationCluster(t)
	cl := topicTestClient(t, c)
	servers := c.BootstrapServers()
	ctx := context.Background()
	rec := &warningRecorder{}
	slow := `
resource "kafkascale_topic" "test" {
  name               = "slow"
  partitions         = 8
  replication_factor = %d
  throttle           = 65536
  timeouts {
    update = "20s"
  }
  lifecycle {
    ignore_changes = [%s]
  }
}
`
	at := func(rf int, ignore string) string {
		return testAccProviderConfig(servers, "") + fmt.Sprintf(slow, rf, ignore)
	}
	withOther := at(2, "replication_factor") + `
resource "kafkascale_topic" "other" {
  name               = "other"
  partitions         = 3
  replication_factor = 2
}
`
	var orphan *executor.Operation
	var theirBroker int32
	const theirRate = 1048576
	const pausedBroker = 3

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: rec.factories(),
		CheckDestroy: func(s *terraform.State) error {
			if err := checkTopicGone(c, t, "slow")(s); err != nil {
				return err
			}
			return checkTopicGone(c, t, "other")(s)
		},
		Steps: []resource.TestStep{
			{
				Config: at(2, ""),
				Check: func(*terraform.State) error {
					fillTopic(t, c, "slow", 16<<20)
					return cl.Operations().Ensure(ctx)
				},
			},
			{
				Config:      at(3, ""),
				ExpectError: wrapped(`(?s)Replication factor change interrupted`),
			},
			{
				PreConfig: func() {
					rec.reset()
					key := "topic/" + c.ClusterID() + "/slow"
					op, err := cl.Operations().Load(ctx, key)
					if err != nil || op == nil || op.Done() || len(op.ThrottledBrokers) == 0 {
						t.Fatalf("after the timeout the operation is %+v (err %v); want it unfinished, holding throttles", op, err)
					}
					orphan = op
					// By hand: cancel what is in flight, and mark the
					// record completed, throttles and all.
					rs, err := cl.ListReassignments(ctx)
					if err != nil {
						t.Fatal(err)
					}
					var cancel []kafka.Assignment
					for _, r := range rs {
						cancel = append(cancel, kafka.Assignment{Topic: r.Topic, Partition: r.Partition})
					}
					if err := cl.CancelReassignments(ctx, cancel); err != nil {
						t.Fatal(err)
					}
					op.Phase = executor.PhaseCompleted
					if err := cl.Operations().Save(ctx, op); err != nil {
						t.Fatal(err)
					}
					// Someone else's throttles, set with a plain admin client.
					theirBroker = op.ThrottledBrokers[0]
					rate := strconv.Itoa(theirRate)
					if _, err := c.Admin().AlterBrokerConfigs(ctx, []kadm.AlterConfig{
						{Op: kadm.SetConfig, Name: kafka.ConfigLeaderThrottleRate, Value: &rate},
						{Op: kadm.SetConfig, Name: kafka.ConfigFollowerThrottleRate, Value: &rate},
					}, theirBroker); err != nil {
						t.Fatal(err)
					}
					all := "*"
					resp, err := c.Admin().CreateTopic(ctx, 2, 2, map[string]*string{kafka.ConfigLeaderThrottledReplicas: &all}, "theirs")
					if err == nil {
						err = resp.Err
					}
					if err != nil {
						t.Fatal(err)
					}
				},
				Config:             withOther,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				PreConfig: func() {
					if err := rec.expect(`^The apply removes replication throttles left behind`,
						`operation `+orphan.ID+` \(topic/[^)]+/slow\): a rate of 65536 B/s on brokers`,
						`throttles set by others are never touched`); err != nil {
						t.Error(err)
					}
				},
				Config: withOther,
				Check: func(*terraform.State) error {
					rates, err := cl.BrokerThrottles(ctx, orphan.ThrottledBrokers)
					if err != nil {
						return err
					}
					for _, b := range orphan.ThrottledBrokers {
						want := [2]int64{}
						if b == theirBroker {
							want = [2]int64{theirRate, theirRate}
						}
						if rates[b] != want {
							t.Errorf("broker %d has rates %v after the apply; want %v", b, rates[b], want)
						}
					}
					topics, err := cl.TopicThrottledReplicas(ctx, []string{"slow", "theirs"})
					if err != nil {
						return err
					}
					if got := topics["slow"]; got != [2]string{} {
						t.Errorf("topic slow still has throttled replicas %q after the apply", got)
					}
					if got := topics["theirs"]; got[0] != "*" {
						t.Errorf("topic theirs has leader throttled replicas %q; the admin's * must stay", got[0])
					}
					op, err := cl.Operations().Load(ctx, "topic/"+c.ClusterID()+"/slow")
					if err != nil {
						return err
					}
					if len(op.ThrottledBrokers)+len(op.ThrottledReplicas) > 0 {
						t.Errorf("the record of %s still lists throttles: %v %v", op.ID, op.ThrottledBrokers, op.ThrottledReplicas)
					}
					left := throttlesSet(t, c)
					left = slices.DeleteFunc(left, func(s string) bool {
						return strings.Contains(s, "theirs") || strings.Contains(s, fmt.Sprintf("broker %d", theirBroker))
					})
					if len(left) > 0 {
						t.Errorf("throttles left besides the admin's: %v", left)
					}
					return nil
				},
			},
			{Config: withOther, PlanOnly: true},
			{
				// A paused operation holds no throttle until its next run;
				// a broker that was down when it paused kept its rate, and
				// the record lists it (make soak, seed 26). As a pause
				// leaves it: a scale-out of a cluster resource this
				// configuration does not have, paused, listing one broker
				// at its rate, which that broker still carries. The next
				// apply of anything removes the rate, and the record stays
				// paused with no throttle listed.
				PreConfig: func() {
					rec.reset()
					paused := &executor.Operation{Key: "cluster/" + c.ClusterID(), ID: "op-paused-by-hand", Kind: executor.KindScaleOut,
						Phase: executor.PhaseReassign, TargetBrokerCount: 4, ThrottleRate: 65536, ThrottledBrokers: []int32{pausedBroker},
						StartedAt: time.Now().UTC(), PausedAt: time.Now().UTC()}
					rate := "65536"
					if _, err := c.Admin().AlterBrokerConfigs(ctx, []kadm.AlterConfig{
						{Op: kadm.SetConfig, Name: kafka.ConfigLeaderThrottleRate, Value: &rate},
						{Op: kadm.SetConfig, Name: kafka.ConfigFollowerThrottleRate, Value: &rate},
					}, pausedBroker); err != nil {
						t.Fatal(err)
					}
					if err := cl.Operations().Save(ctx, paused); err != nil {
						t.Fatal(err)
					}
				},
				Config: strings.Replace(withOther, "partitions         = 3", "partitions         = 4", 1),
				Check: func(*terraform.State) error {
					if err := rec.expect(`^The apply removes replication throttles left behind`, `operation op-paused-by-hand \(cluster/`); err != nil {
						t.Error(err)
					}
					rates, err := cl.BrokerThrottles(ctx, []int32{pausedBroker})
					if err != nil {
						return err
					}
					if rates[pausedBroker] != ([2]int64{}) {
						t.Errorf("broker %d has rates %v after the apply; the paused operation's rate must be gone", pausedBroker, rates[pausedBroker])
					}
					op, err := cl.Operations().Load(ctx, "cluster/"+c.ClusterID())
					if err != nil {
						return err
					}
					if op == nil || !op.Paused() || len(op.ThrottledBrokers) > 0 {
						t.Errorf("the paused record is now %+v; want it still paused, listing no throttle", op)
					}
					return nil
				},
			},
		},
	})
}
