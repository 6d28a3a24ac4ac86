package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// The question the executor asks the controller when a broker shows a
// moved partition on its old and new replicas together: Kafka 4.4's guard
// against a change of replication factor (KIP-860) takes a target the
// partition has already without changing anything, takes a target of the
// same replica count as a reassignment, and refuses a target of another
// count, changing nothing.
func TestReassignKeepingReplicationFactorOnRealBroker(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx := context.Background()
	if err := cl.CreateTopic(ctx, "guard", map[int32][]int32{0: {1, 2}, 1: {2, 3}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cl.CreateTopic(ctx, "guard3", map[int32][]int32{0: {1, 2, 3}}, nil); err != nil {
		t.Fatal(err)
	}
	replicas := func(topic string, p int32) []int32 {
		t.Helper()
		md, err := c.Admin().Metadata(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		return md.Topics[topic].Partitions[p].Replicas
	}
	for deadline := time.Now().Add(30 * time.Second); replicas("guard", 1) == nil || replicas("guard3", 0) == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("topics guard and guard3 never showed")
		}
	}
	taken, err := cl.ReassignKeepingReplicationFactor(ctx, []kafka.Assignment{
		{Topic: "guard", Partition: 0, Replicas: []int32{1, 2}},  // has it already
		{Topic: "guard3", Partition: 0, Replicas: []int32{1, 2}}, // has 3 replicas
		{Topic: "guard", Partition: 1, Replicas: []int32{3, 1}},  // same count, elsewhere
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range taken {
		got = append(got, fmt.Sprintf("%s-%d", a.Topic, a.Partition))
	}
	if slices.Sort(got); !slices.Equal(got, []string{"guard-0", "guard-1"}) {
		t.Fatalf("the controller took %v; want [guard-0 guard-1]: guard3-0 has 3 replicas, the target 2", got)
	}
	rs, err := cl.ListReassignments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Topic == "guard3" || (r.Topic == "guard" && r.Partition == 0) {
			t.Errorf("%s p%d is being reassigned to %v: the guard's answer changed it", r.Topic, r.Partition, r.Replicas)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); !engine.SameMembers(replicas("guard", 1), []int32{3, 1}); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("guard p1 is on %v 30 s after the guard took [3 1]", replicas("guard", 1))
		}
	}
	if got := replicas("guard", 0); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("guard p0 is on %v; want [1 2], untouched", got)
	}
	if got := replicas("guard3", 0); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("guard3 p0 is on %v; want [1 2 3], refused", got)
	}
}
