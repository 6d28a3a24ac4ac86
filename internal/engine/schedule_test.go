package engine

import (
	"maps"
	"slices"
	"testing"
)

// Twelve equal copies onto two new brokers, 4 and 5, at most 4 moves per
// broker: largest first, with every size equal, each receiver would take
// its copies in partition order, and the partitions here are led by
// broker 1, then 2, then 3, four each. The first group would copy from
// brokers 1 and 2 only, and the second from broker 3 alone, at one
// sender's throttle for both receivers. The groups take each copy's
// sender into account: every group copies from all three.
func TestScheduleMixesTheSenders(t *testing.T) {
	c := Cluster{}
	for id := int32(1); id <= 3; id++ {
		c.Brokers = append(c.Brokers, Broker{ID: id, Alive: true})
	}
	for p := range int32(12) {
		leader := p/4 + 1
		c.Partitions = append(c.Partitions, Partition{Topic: "t", Partition: p, Replicas: []int32{leader, leader%3 + 1}, SizeBytes: 20 << 20})
	}
	ch := Change{AddBrokers: []Broker{{ID: 4, Alive: true}, {ID: 5, Alive: true}}}
	o := DefaultOptions()
	o.MaxMovesPerBroker = 4
	m, err := buildModel(c, ch, o)
	if err != nil {
		t.Fatal(err)
	}
	// Each partition's follower is replaced by broker 4 or 5 in turn.
	var moves []sMove
	for i, p := range m.ps {
		to := m.index[4+int32(i%2)]
		orig := m.orig(i)
		final := []int{orig[0], to}
		moves = append(moves, sMove{part: int32(i), old: m.brokerIDs(orig), new: m.brokerIDs(final), adding: []int{to}, remove: []int{orig[1]},
			leader: int32(orig[0]), bytes: p.size, size: p.size})
	}
	res, err := schedule(m, moves, make([]int64, len(m.bs)))
	if err != nil {
		t.Fatal(err)
	}
	for g, group := range res.groups {
		senders := map[int32]int{}
		for _, mv := range group {
			senders[m.bs[mv.leader].ID]++
		}
		t.Logf("group %d: copies per sender %v", g, senders)
		if len(group) >= 3 && len(senders) < 3 {
			t.Errorf("group %d copies from brokers %v only", g, slices.Sorted(maps.Keys(senders)))
		}
	}
	if len(res.groups) < 2 {
		t.Fatalf("%d groups; 12 moves at 4 per broker take at least 2", len(res.groups))
	}
}
