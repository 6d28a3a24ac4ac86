package kafka

import (
	"slices"
	"testing"
)

// Each partition is settled on one view, whichever side of the Metadata
// request its move started or ended on; the topic keeps one replication
// factor throughout.
func TestReconcileMovesReadsEveryPartitionFromOneView(t *testing.T) {
	moving := func(p int32, replicas, adding, removing []int32) Reassignment {
		return Reassignment{Topic: "t", Partition: p, Replicas: replicas, Adding: adding, Removing: removing}
	}
	out := map[string]TopicDescription{"t": {Name: "t", Partitions: []PartitionState{
		{Partition: 0, Replicas: []int32{1, 2}},    // started after Metadata: read before it
		{Partition: 1, Replicas: []int32{1, 2, 3}}, // ended after Metadata: read during it
		{Partition: 2, Replicas: []int32{1, 3}},    // ended before Metadata: read done
		{Partition: 3, Replicas: []int32{2, 3}},    // never moved
		{Partition: 4, Replicas: []int32{3, 1, 2}}, // moving throughout
	}}}
	before := []Reassignment{
		moving(1, []int32{1, 2, 3}, []int32{3}, []int32{2}),
		moving(2, []int32{1, 2, 3}, []int32{3}, []int32{2}),
		moving(4, []int32{3, 1, 2}, []int32{2}, []int32{1}),
		{Topic: "other", Partition: 0, Replicas: []int32{1, 2}, Adding: []int32{2}},
	}
	after := []Reassignment{
		moving(0, []int32{1, 2, 3}, []int32{3}, []int32{2}),
		moving(4, []int32{3, 1, 2}, []int32{2}, []int32{1}),
	}
	reconcileMoves(out, before, after)
	want := []struct{ replicas, adding []int32 }{
		{[]int32{1, 2, 3}, []int32{3}},
		{[]int32{1, 2, 3}, []int32{3}},
		{[]int32{1, 3}, nil},
		{[]int32{2, 3}, nil},
		{[]int32{3, 1, 2}, []int32{2}},
	}
	for i, p := range out["t"].Partitions {
		if !slices.Equal(p.Replicas, want[i].replicas) || !slices.Equal(p.Adding, want[i].adding) {
			t.Errorf("p%d reads replicas %v adding %v; want %v adding %v", i, p.Replicas, p.Adding, want[i].replicas, want[i].adding)
		}
	}
	if rfs := out["t"].ReplicationFactors(); !slices.Equal(rfs, []int{2}) {
		t.Errorf("replication factors %v, want [2]", rfs)
	}
	if _, ok := out["other"]; ok {
		t.Errorf("a topic that was not read was added: %+v", out["other"])
	}
}
