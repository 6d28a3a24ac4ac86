package engine_test

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// scaleOutBound computes, from first principles and without the planner, the
// fewest replica moves that reach a balanced, spread assignment after adding
// brokers to a balanced, spread cluster. Every replica a new broker ends with
// is one move, so the bound is the smallest total the new brokers can end
// with while no old broker exceeds its balanced maximum:
//
//   - when every partition's RF equals the number of racks, each rack holds
//     exactly one replica of every partition (P per rack), so the sum runs
//     rack by rack: max(new_r × ⌊P/n_r⌋, P − old_r × ⌈P/n_r⌉);
//   - when there is one rack, or fewer replicas than equal-sized racks, the
//     racks do not constrain counts and the same holds for the whole
//     cluster with R replicas over n brokers.
func scaleOutBound(c engine.Cluster, ch engine.Change) int {
	type group struct{ old, new int }
	racks := map[string]*group{}
	for _, b := range c.Brokers {
		if racks[b.Rack] == nil {
			racks[b.Rack] = &group{}
		}
		racks[b.Rack].old++
	}
	for _, b := range ch.AddBrokers {
		if racks[b.Rack] == nil {
			racks[b.Rack] = &group{}
		}
		racks[b.Rack].new++
	}
	bound := func(total int, g group) int {
		n := g.old + g.new
		floor, ceil := total/n, (total+n-1)/n
		return max(g.new*floor, total-g.old*ceil)
	}
	rf, replicas := 0, 0
	for _, p := range c.Partitions {
		if rf != 0 && len(p.Replicas) != rf {
			panic("scaleOutBound: mixed replication factors")
		}
		rf = len(p.Replicas)
		replicas += rf
	}
	if rf == len(racks) {
		sum := 0
		for _, g := range racks {
			sum += bound(len(c.Partitions), *g)
		}
		return sum
	}
	sizes := map[int]bool{}
	total := group{}
	for _, g := range racks {
		sizes[g.old+g.new] = true
		total.old += g.old
		total.new += g.new
	}
	if len(racks) == 1 || (rf < len(racks) && len(sizes) == 1) {
		return bound(replicas, total)
	}
	panic("scaleOutBound: no closed form for this layout")
}

// balancedStart rebalances a cluster in place, so that a scale-out starts
// from bytes as balanced as the skew limit asks, as a cluster kept by this
// planner would be. Replica counts stay balanced and spread.
func balancedStart(t testing.TB, brokers []engine.Broker, parts []engine.Partition) engine.Cluster {
	t.Helper()
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	p := mustPlan(t, c, engine.Change{}, engine.DefaultOptions())
	// Bytes balance as far as the size of one partition allows.
	if p.Score.ByteSkewPercent > max(engine.DefaultMaxDiskSkewPercent, p.Score.LargestPartitionPercent) {
		t.Fatalf("the starting cluster's bytes do not balance: %+v", p.Score)
	}
	if p.Score.ReplicasOutOfRange > 0 || p.Score.RackViolations > 0 {
		t.Fatalf("the starting cluster does not balance: %+v", p.Score)
	}
	return engine.Cluster{Brokers: brokers, Partitions: p.Target}
}

func TestScaleOutMovesEqualLowerBound(t *testing.T) {
	zipf := zipfSizes(1.3, 2000)
	uniform := uniformSizes(1 << 30)
	cases := []struct {
		name     string
		oldRacks []string
		newRacks []string
		parts    int
		rf       int
		sizes    sizeFunc
	}{
		{"one rack, uniform", rackList(10, ""), rackList(3, ""), 1000, 3, uniform},
		{"one rack, zipf", rackList(10, ""), rackList(3, ""), 1000, 3, zipf},
		{"three racks rf3, uniform", rackList(12, "a", "b", "c"), rackList(3, "a", "b", "c"), 5000, 3, uniform},
		{"three racks rf3, zipf", rackList(12, "a", "b", "c"), rackList(3, "a", "b", "c"), 5000, 3, zipf},
		{"four racks rf2, zipf", rackList(12, "a", "b", "c", "d"), rackList(4, "a", "b", "c", "d"), 3000, 2, zipf},
		{"three racks rf3, all new in one rack, zipf", rackList(12, "a", "b", "c"), rackList(2, "a"), 3000, 3, zipf},
		// Two racks hold RF 3 as 2+1; a third rack appears, and every
		// partition must now have a replica there: the bound is P.
		{"new third rack, rf3, zipf", rackList(8, "a", "b"), rackList(2, "c"), 2000, 3, zipf},
		{"uneven old racks 34/33/33 + 6/7/7, rf3, zipf", rackList(100, "a", "b", "c"), rackList(20, "b", "c", "a"), 10000, 3, zipf},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(7))
			old := brokersWithRacks(1, tc.oldRacks, 0)
			perTopic := tc.parts / 10
			c := balancedStart(t, old, spreadAssignment(old, topicNames(10), perTopic, tc.rf, tc.sizes, r))
			add := brokersWithRacks(int32(len(old)+1), tc.newRacks, 0)
			ch := engine.Change{AddBrokers: add}
			o := engine.DefaultOptions()
			p := mustPlan(t, c, ch, o)

			want := scaleOutBound(c, ch)
			got := movesCount(c.Partitions, p.Target)
			if got != want || p.ReplicaMoves != want || p.Score.LowerBound != want {
				t.Fatalf("moves: counted %d, plan says %d, plan's bound %d; independent lower bound %d", got, p.ReplicaMoves, p.Score.LowerBound, want)
			}
			newIDs := ids(add)
			p.Moves().Each(func(m engine.Move) {
				for _, b := range m.Adding {
					if !slices.Contains(newIDs, b) {
						t.Fatalf("%s p%d: move adds broker %d, which is not new", m.Topic, m.Partition, b)
					}
				}
			})
			// Sum of the new brokers' final counts is the move count.
			reps, _ := brokerCounts(p.Target)
			sum := 0
			for _, id := range newIDs {
				sum += reps[id]
			}
			if sum != want {
				t.Fatalf("new brokers end with %d replicas, want %d", sum, want)
			}
			receiving := map[int32]bool{}
			for _, b := range append(slices.Clone(old), add...) {
				receiving[b.ID] = true
			}
			if probs := spreadProblems(append(slices.Clone(old), add...), receiving, p.Target, o.Awareness); len(probs) > 0 {
				t.Fatalf("spread: %v", probs[:min(5, len(probs))])
			}
			simulate(t, c, ch, o, p)
			if p.Score.ReplicasOutOfRange != 0 || p.Score.LeadersOutOfRange != 0 {
				t.Fatalf("balance: %+v", p.Score)
			}
			if p.Score.ByteSkewPercent > max(o.MaxDiskSkewPercent, p.Score.ByteSkewFloorPercent) {
				t.Fatalf("byte skew %.2f%% above %g%% (floor %.2f%%)", p.Score.ByteSkewPercent, o.MaxDiskSkewPercent, p.Score.ByteSkewFloorPercent)
			}
			t.Logf("moves %d = bound %d; replicas %d..%d (racks allow spread %d); leaders %d..%d; byte skew %.2f%% (largest partition %.2f%% of a share)",
				got, want, p.Score.ReplicaMin, p.Score.ReplicaMax, p.Score.ReplicaBoundSpread, p.Score.LeaderMin, p.Score.LeaderMax,
				p.Score.ByteSkewPercent, p.Score.LargestPartitionPercent)
		})
	}
}

// A partition that gains two replicas copies them one after the other (one
// replica move in flight per partition), so its second copy waits for its
// first. With partitions of equal size the scale-out gives a second new
// replica only to as few partitions as the count requires.
func TestScaleOutSpreadsNewReplicasOverPartitions(t *testing.T) {
	var c engine.Cluster
	for id := int32(1); id <= 3; id++ {
		c.Brokers = append(c.Brokers, engine.Broker{ID: id, Alive: true, CapacityBytes: 1 << 40})
	}
	for p := range int32(12) {
		c.Partitions = append(c.Partitions, engine.Partition{Topic: "load", Partition: p,
			Replicas: []int32{p%3 + 1, (p+1)%3 + 1, (p+2)%3 + 1}, SizeBytes: 20<<20 + int64(p)})
	}
	ch := engine.Change{AddBrokers: []engine.Broker{{ID: 4, Alive: true, CapacityBytes: 1 << 40}, {ID: 5, Alive: true, CapacityBytes: 1 << 40}}}
	p, err := engine.PlanReassignment(c, ch, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	gained := map[int32]int{}
	for _, m := range p.Moves() {
		gained[m.Partition] += len(m.Adding)
	}
	twice := 0
	for _, n := range gained {
		if n > 1 {
			twice++
		}
	}
	// 36 replicas over 5 brokers: the new ones take 7 each, 14 over 12
	// partitions, so 2 partitions must gain two.
	if p.ReplicaMoves != 14 || twice != 2 {
		t.Errorf("%d replica moves, %d partitions gain two new replicas; want 14 and 2", p.ReplicaMoves, twice)
	}
}
