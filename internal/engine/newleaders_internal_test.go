package engine

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestNewLeadersOptimal checks newLeaders' claim against brute force: on
// small random cases, the leaders it chooses cost exactly the least any
// choice costs (newLeaderCosts, summed over each broker's leaderships).
func TestNewLeadersOptimal(t *testing.T) {
	for seed := range int64(400) {
		r := rand.New(rand.NewSource(seed))
		nb := 3 + r.Intn(4)
		var c Cluster
		for k := range nb {
			c.Brokers = append(c.Brokers, Broker{ID: int32(k), Rack: fmt.Sprintf("r%d", r.Intn(3)), Alive: r.Intn(8) > 0})
		}
		var o Options
		for k := range nb {
			if r.Intn(4) == 0 {
				o.DemotedBrokers = append(o.DemotedBrokers, int32(k))
			}
		}
		for p := range r.Intn(12) {
			topic := "t"
			if r.Intn(2) == 0 {
				topic = "other"
			}
			perm := r.Perm(nb)[:1+r.Intn(min(3, nb))]
			reps := make([]int32, len(perm))
			for k, b := range perm {
				reps[k] = int32(b)
			}
			c.Partitions = append(c.Partitions, Partition{Topic: topic, Partition: int32(p), Replicas: reps})
		}
		m, err := buildModel(c, Change{}, o)
		if err != nil {
			t.Fatal(err)
		}
		var recv []int
		for b := range m.bs {
			if m.bs[b].receiving {
				recv = append(recv, b)
			}
		}
		if len(recv) == 0 {
			continue
		}
		replicas := make([]int, nb)
		for i := range m.ps {
			for _, b := range m.orig(i) {
				replicas[b]++
			}
		}
		var sets [][]int
		for range 1 + r.Intn(6) {
			perm := r.Perm(len(recv))[:1+r.Intn(min(3, len(recv)))]
			set := make([]int, len(perm))
			for k, i := range perm {
				set[k] = recv[i]
				replicas[recv[i]]++
			}
			sets = append(sets, set)
		}
		marginal := newLeaderCosts(m, "t", sets, replicas)
		cost := func(pos []int32) leaderCost {
			x := make([]int64, nb)
			var total leaderCost
			for k, set := range sets {
				b := set[pos[k]]
				c := marginal(b, x[b])
				for i := range total {
					total[i] += c[i]
				}
				x[b]++
			}
			return total
		}
		got := newLeaders(m, "t", slices.Clone(sets), replicas)
		// Every choice, as a mixed-radix counter.
		pos := make([]int32, len(sets))
		best := cost(pos)
		for {
			k := 0
			for k < len(sets) && int(pos[k]) == len(sets[k])-1 {
				pos[k] = 0
				k++
			}
			if k == len(sets) {
				break
			}
			pos[k]++
			if c := cost(pos); c.less(best) {
				best = c
			}
		}
		if c := cost(got); c != best {
			t.Fatalf("seed %d: sets %v, demoted %v: newLeaders chose %v, cost %v; the least is %v", seed, sets, o.DemotedBrokers, got, c, best)
		}
	}
}
