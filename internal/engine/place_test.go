package engine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

func TestPlacePartitionsNewTopic(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(6, "a", "b", "c"), 0)
	// An existing topic loads brokers 1 and 2; the new topic spreads over
	// all brokers anyway, its own count first.
	existing := []engine.Partition{
		{Topic: "old", Partition: 0, Replicas: []int32{1, 2}},
		{Topic: "old", Partition: 1, Replicas: []int32{2, 1}},
	}
	c := engine.Cluster{Brokers: brokers, Partitions: existing}
	o := engine.DefaultOptions()
	placed, err := engine.PlacePartitions(c, "orders", 12, 3, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) != 12 {
		t.Fatalf("placed %d partitions, want 12", len(placed))
	}
	for k, p := range placed {
		if p.Topic != "orders" || p.Partition != int32(k) || len(p.Replicas) != 3 || p.SizeBytes != 0 {
			t.Fatalf("partition %d: %+v", k, p)
		}
	}
	if probs := spreadProblems(brokers, receivingAll(brokers), placed, o.Awareness); len(probs) > 0 {
		t.Fatalf("spread: %v", probs)
	}
	reps, leads := brokerCounts(placed)
	// 36 replicas over 6 brokers, 12 leaders over 6.
	for _, id := range ids(brokers) {
		if reps[id] != 6 || leads[id] != 2 {
			t.Fatalf("broker %d: %d replicas, %d leaders; want 6 and 2 (%v %v)", id, reps[id], leads[id], reps, leads)
		}
	}
	// Deterministic, whatever the input order.
	c2 := engine.Cluster{Brokers: slices.Clone(brokers), Partitions: existing}
	slices.Reverse(c2.Brokers)
	again, err := engine.PlacePartitions(c2, "orders", 12, 3, o)
	if err != nil {
		t.Fatal(err)
	}
	for k := range placed {
		if !slices.Equal(placed[k].Replicas, again[k].Replicas) {
			t.Fatalf("partition %d placed %v, then %v", k, placed[k].Replicas, again[k].Replicas)
		}
	}
}

func TestPlacePartitionsExpansion(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(4, "a", "b"), 0)
	brokers[3].Alive = false // broker 4 is offline: it gets nothing
	c := engine.Cluster{Brokers: brokers, Partitions: []engine.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 2}},
		{Topic: "t", Partition: 1, Replicas: []int32{2, 3}},
	}}
	placed, err := engine.PlacePartitions(c, "t", 6, 0, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) != 4 || placed[0].Partition != 2 || placed[3].Partition != 5 {
		t.Fatalf("placed %+v, want partitions 2..5", placed)
	}
	all := append(slices.Clone(c.Partitions), placed...)
	reps, _ := brokerCounts(all)
	if reps[4] != 0 {
		t.Fatalf("offline broker 4 got %d replicas", reps[4])
	}
	// Rack b has one broker alive, 2, so it holds every partition; rack a's
	// brokers 1 and 3 share the other six replicas.
	for id, want := range map[int32]int{1: 3, 2: 6, 3: 3} {
		if reps[id] != want {
			t.Fatalf("broker %d holds %d of the topic, want %d: %v", id, reps[id], want, reps)
		}
	}
	for _, p := range placed {
		if (p.Replicas[0]%2 == 1) == (p.Replicas[1]%2 == 1) {
			t.Fatalf("%s p%d %v is not spread over racks a and b", p.Topic, p.Partition, p.Replicas)
		}
	}
}

func TestPlacePartitionsBadInput(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(3, ""), 0)
	c := engine.Cluster{Brokers: brokers, Partitions: []engine.Partition{{Topic: "t", Partition: 0, Replicas: []int32{1, 2}}}}
	cases := []struct {
		topic string
		count int
		rf    int
		want  string
	}{
		{"t", 1, 0, "new partition count 1 must be more than its 1 partitions"},
		{"t", 3, 3, "replication factor 3 differs from the topic's 2"},
		{"u", 3, 0, "replication factor 0 is below 1"},
		{"u", 3, 4, "replication factor 4 is more than the 3 brokers"},
		{"", 3, 1, "topic name is empty"},
	}
	for _, tc := range cases {
		_, err := engine.PlacePartitions(c, tc.topic, tc.count, tc.rf, engine.DefaultOptions())
		var in *engine.InputError
		if !errors.As(err, &in) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PlacePartitions(%q, %d, %d): %v; want an input error with %q", tc.topic, tc.count, tc.rf, err, tc.want)
		}
	}
	// Enough brokers, but not enough alive ones.
	brokers[2].Alive = false
	_, err := engine.PlacePartitions(engine.Cluster{Brokers: brokers}, "u", 1, 3, engine.DefaultOptions())
	var inf *engine.InfeasibleError
	if !errors.As(err, &inf) || inf.Need != 3 || inf.Limit != 2 {
		t.Fatalf("want broker count infeasible 3 > 2, got %v", err)
	}
}
