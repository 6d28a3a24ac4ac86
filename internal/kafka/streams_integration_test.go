package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// A Streams app's sources and internal topics grow in ONE CreatePartitions
// request, placed rack-aware and spread across the brokers, and the call
// returns with every new partition led and in sync.
func TestGrowTogetherInOneRequest(t *testing.T) {
	_, setup := sharedCluster(t)
	ctx := context.Background()
	var topics []string
	for i := range 3 {
		name := fmt.Sprintf("growtogether-%d", i)
		if err := setup.CreateTopic(ctx, name, map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}}, nil); err != nil {
			t.Fatal(err)
		}
		topics = append(topics, name)
	}
	for _, name := range topics {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := setup.AwaitTopicReady(actx, name, 2, 3); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	cl, rc := countingClient(t)
	ex := executor.New(executor.Deps{Kafka: cl.Port(), Placer: cl.Port()}, executor.Settings{})
	w := executor.Work{ID: "streams-test", What: "grow together"}
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := ex.GrowTogether(actx, w, topics, 6); err != nil {
		t.Fatal(err)
	}
	if n := rc.Of("CreatePartitions"); n != 1 {
		t.Errorf("growing %d topics took %d CreatePartitions requests (%s), want 1", len(topics), n, rc)
	}
	got, err := cl.DescribeTopics(ctx, topics)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for _, name := range topics {
		d := got[name]
		if len(d.Partitions) != 6 {
			t.Fatalf("%s has %d partitions, want 6", name, len(d.Partitions))
		}
		for _, p := range d.Partitions[2:] {
			if len(p.Replicas) != 3 || len(p.ISR) != 3 {
				t.Errorf("%s p%d: replicas %v ISR %v, want 3 in sync", name, p.Partition, p.Replicas, p.ISR)
			}
			leaders[p.Replicas[0]]++
		}
	}
	// The engine places leaders by the load of the whole (shared) cluster,
	// so the split is not even; but every broker leads some.
	for b := int32(1); b <= 3; b++ {
		if leaders[b] < 2 {
			t.Errorf("preferred leaders of the 12 new partitions by broker: %v, want every broker to lead at least 2", leaders)
			break
		}
	}
	// Growing again to the same count sends nothing.
	rc.Reset()
	if err := ex.GrowTogether(actx, w, topics, 6); err != nil || rc.Of("CreatePartitions") != 0 {
		t.Errorf("a second growth to the same count: err %v, %d CreatePartitions requests; want none", err, rc.Of("CreatePartitions"))
	}
}
