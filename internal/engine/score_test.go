package engine_test

import (
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// roundRobin places every partition afresh over brokers, as a tool that
// ignores the current assignment would (kafka-reassign-partitions'
// --generate does much the same): partition i starts at broker i mod n.
func roundRobin(parts []engine.Partition, brokers []int32) []engine.Partition {
	out := make([]engine.Partition, len(parts))
	for i, p := range parts {
		reps := make([]int32, len(p.Replicas))
		for j := range reps {
			reps[j] = brokers[(i+j)%len(brokers)]
		}
		out[i] = engine.Partition{Topic: p.Topic, Partition: p.Partition, Replicas: reps, SizeBytes: p.SizeBytes}
	}
	return out
}

// An assignment made by another tool is scored with the same yardsticks as
// the planner's own: moves, the lower bound, balance, rack spread.
func TestScoreForeignAssignment(t *testing.T) {
	old := brokersWithRacks(1, rackList(6, ""), 0)
	c := balancedStart(t, old, spreadAssignment(old, topicNames(4), 30, 3, uniformSizes(1000), rand.New(rand.NewSource(4))))
	add := brokersWithRacks(7, rackList(2, ""), 0)
	ch := engine.Change{AddBrokers: add}
	o := engine.DefaultOptions()

	plan := mustPlan(t, c, ch, o)
	foreign := roundRobin(c.Partitions, []int32{1, 2, 3, 4, 5, 6, 7, 8})
	s, err := engine.ScoreAssignment(c, ch, foreign, o)
	if err != nil {
		t.Fatal(err)
	}
	// 360 replicas over 8 brokers: 45 each; the new brokers must receive 90.
	if s.LowerBound != 90 || plan.Score.LowerBound != 90 || plan.ReplicaMoves != 90 {
		t.Fatalf("bound %d (plan's %d), plan moves %d; want 90", s.LowerBound, plan.Score.LowerBound, plan.ReplicaMoves)
	}
	if got := movesCount(c.Partitions, foreign); s.Moves != got || s.MovedBytes != int64(got)*1000 {
		t.Fatalf("score counts %d moves (%d bytes), the assignment needs %d", s.Moves, s.MovedBytes, got)
	}
	if s.Moves <= 90 || s.MoveRatio != float64(s.Moves)/90 {
		t.Fatalf("round robin: %d moves, ratio %v", s.Moves, s.MoveRatio)
	}
	// Round robin is balanced too: 45 replicas and 15 leaders each.
	if s.ReplicaMin != 45 || s.ReplicaMax != 45 || s.LeaderSpread != 0 || !s.Balanced() {
		t.Fatalf("round robin score %+v", s)
	}
	t.Logf("planner: %d moves; round robin: %d moves, ratio %.2f", plan.ReplicaMoves, s.Moves, s.MoveRatio)

	// With racks, the same round robin breaks spread; the score says so.
	racked := brokersWithRacks(1, rackList(6, "a", "b"), 0)
	addRacked := brokersWithRacks(7, rackList(2, "a", "b"), 0)
	cr := balancedStart(t, racked, spreadAssignment(racked, topicNames(4), 30, 2, uniformSizes(1000), rand.New(rand.NewSource(4))))
	// Brokers 1, 3, 5, 7 are rack a: pairs (1,3) share a rack.
	bad := roundRobin(cr.Partitions, []int32{1, 3, 5, 7, 2, 4, 6, 8})
	sr, err := engine.ScoreAssignment(cr, engine.Change{AddBrokers: addRacked}, bad, o)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, p := range bad {
		if p.Replicas[0]%2 == p.Replicas[1]%2 {
			want++
		}
	}
	if sr.RackViolations != want || want == 0 || sr.Balanced() {
		t.Fatalf("rack violations %d, counted %d", sr.RackViolations, want)
	}
}

func TestScoreRejectsIncompleteAssignments(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(3, ""), 0)
	parts := []engine.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 2}},
		{Topic: "t", Partition: 1, Replicas: []int32{2, 3}},
	}
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	cases := []struct {
		name string
		a    []engine.Partition
		want string
	}{
		{"missing", parts[:1], "t p1: is missing from the assignment"},
		{"wrong rf", []engine.Partition{parts[0], {Topic: "t", Partition: 1, Replicas: []int32{2}}}, "t p1: has 1 replicas; its replication factor is 2"},
		{"unknown broker", []engine.Partition{parts[0], {Topic: "t", Partition: 1, Replicas: []int32{2, 9}}}, "t p1: replica on unknown broker 9"},
		{"unknown partition", append(parts, engine.Partition{Topic: "u", Partition: 0, Replicas: []int32{1, 2}}), "u p0: is not in the cluster"},
	}
	for _, tc := range cases {
		_, err := engine.ScoreAssignment(c, engine.Change{}, tc.a, engine.DefaultOptions())
		var in *engine.InputError
		if !errors.As(err, &in) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}
