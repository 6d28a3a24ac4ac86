package engine

// New partitions' preferred leaders. PlacePartitions chooses each new
// partition's replicas first (placeReplicas); newLeaders then chooses
// which of them leads. The choices are the brokers' new-leader counts x,
// and the counts that some choice reaches form an M-convex set (a base
// polyhedron: degree vectors of a bipartite assignment). On such a set a
// separable convex cost is at its minimum as soon as no single exchange
// lowers it: passing one leadership from u to w along a chain of new
// partitions (u leads one that w' holds, w' leads one that w holds, ...).
// So a local search over those chains, the leaderGraph the plans use,
// finds the true optimum of
//
//  1. demoted brokers leading as little as the replicas allow;
//  2. the topic's preferred leaders (its existing ones and the new) as
//     even as the replicas allow: the sum of squares, whose minimum is
//     also the smallest spread;
//  3. the cluster's preferred leaders outside each broker's balanced range
//     (leaderTargets over the cluster with the new partitions) as few as
//     possible;
//  4. then as even as possible (sum of squares);
//  5. then the extra ones on the brokers with fewer replicas, then on the
//     lower ids, so the result is deterministic.
//
// Each criterion is lexicographically above the next, so none is traded
// for a later one.

// placeLeadersByCluster turns on newLeaders; tests turn it off to compare
// with the leaders the placement order alone gives.
var placeLeadersByCluster = true

// leaderCost is one broker's marginal cost of leading one more new
// partition, compared lexicographically.
type leaderCost [6]int64

func (a leaderCost) less(b leaderCost) bool {
	for k := range a {
		if a[k] != b[k] {
			return a[k] < b[k]
		}
	}
	return false
}

func (a leaderCost) minus(b leaderCost) leaderCost {
	for k := range a {
		a[k] -= b[k]
	}
	return a
}

// newLeaders returns, for each of sets (the new partitions of topic, every
// replica on a receiving broker), the position of its preferred leader.
// replicas counts each broker's replicas in the cluster with the new
// partitions.
func newLeaders(m *model, topic string, sets [][]int, replicas []int) []int32 {
	pos := make([]int32, len(sets))
	if len(sets) == 0 {
		return pos
	}
	nb := len(m.bs)
	marginal := newLeaderCosts(m, topic, sets, replicas)
	x := make([]int64, nb) // new leaders per broker
	for _, set := range sets {
		x[set[0]]++
	}
	g := newLeaderGraph(m.bs, sets, pos)
	for changed := true; changed; {
		changed = false
		for u := range nb {
			for x[u] > 0 {
				give := marginal(u, x[u]-1)
				g.reach(u)
				to := -1
				var best leaderCost
				for w := range nb {
					if w == u || !g.seen[w] {
						continue
					}
					if d := marginal(w, x[w]).minus(give); d.less(leaderCost{}) && (to < 0 || d.less(best)) {
						to, best = w, d
					}
				}
				if to < 0 {
					break
				}
				for w := to; w != u; w = g.prev[w] {
					g.hand(g.prev[w], w)
				}
				x[u]--
				x[to]++
				changed = true
			}
		}
	}
	return pos
}

// newLeaderCosts returns the cost of broker b's (k+1)-th leadership of
// the new partitions sets.
func newLeaderCosts(m *model, topic string, sets [][]int, replicas []int) func(b int, k int64) leaderCost {
	nb := len(m.bs)
	topicLead := make([]int64, nb)   // the topic's existing preferred leaders
	clusterLead := make([]int64, nb) // the cluster's
	all := make([][]int, 0, len(m.ps)+len(sets))
	for i := range m.ps {
		orig := m.orig(i)
		all = append(all, orig)
		if len(orig) == 0 || !m.bs[orig[0]].receiving {
			continue
		}
		clusterLead[orig[0]]++
		if m.topic(i) == topic {
			topicLead[orig[0]]++
		}
	}
	rng := leaderTargets(m.bs, append(all, sets...))
	return func(b int, k int64) leaderCost {
		var c leaderCost
		c[1] = 2*(topicLead[b]+k) + 1
		switch l := clusterLead[b] + k; {
		case m.bs[b].demoted:
			// Its range is what it must lead, which the first
			// criterion already keeps it to.
			c[0] = 1
		case l < int64(rng[b].Min):
			c[2] = -1
		case l >= int64(rng[b].Max):
			c[2] = 1
		}
		c[3] = 2*(clusterLead[b]+k) + 1
		c[4] = int64(replicas[b])
		c[5] = int64(b)
		return c
	}
}

// placedReplicaRanges is each receiving broker's balanced range of
// replicas once n new partitions at rf join the cluster, as the plans and
// Score compute it; cur is the replica counts with them, which only round
// the whole targets. It reports false where the racks cannot hold the
// replicas at all.
func placedReplicaRanges(m *model, n, rf int, cur []int) ([]Range, bool) {
	classes := rfClasses{}
	for i, p := range m.ps {
		f := p.rf()
		for _, b := range m.orig(i) {
			if m.bs[b].frozen {
				f--
			}
		}
		if f > 0 {
			classes[f]++
		}
	}
	classes[rf] += int64(n)
	receiving := make([]bool, len(m.bs))
	for b, bi := range m.bs {
		receiving[b] = bi.receiving
	}
	tg, err := computeTargets(&m.topo, receiving, classes, cur)
	if err != nil {
		return nil, false
	}
	return tg.rng, true
}

// placeFigures are what decides between two placements of the same new
// partitions.
type placeFigures struct {
	// demoted counts the new partitions a demoted broker leads.
	demoted int
	// spread is the topic's preferred leaders' spread over the receiving
	// brokers that are not demoted; 0 counts as 1, which is as even as
	// most counts allow.
	spread int
	// replicasOut and leadersOut count the cluster's replicas and
	// preferred leaders outside the brokers' balanced ranges.
	replicasOut, leadersOut int
}

func (p placement) figures(m *model, topic string, repRng []Range) placeFigures {
	nb := len(m.bs)
	topicLead := make([]int, nb)
	lead := make([]int, nb)
	all := make([][]int, 0, len(m.ps)+len(p.sets))
	for i := range m.ps {
		orig := m.orig(i)
		all = append(all, orig)
		if len(orig) > 0 {
			lead[orig[0]]++
			if m.topic(i) == topic {
				topicLead[orig[0]]++
			}
		}
	}
	var f placeFigures
	for k, set := range p.sets {
		b := set[p.pos[k]]
		lead[b]++
		topicLead[b]++
		if m.bs[b].demoted {
			f.demoted++
		}
	}
	leadRng := leaderTargets(m.bs, append(all, p.sets...))
	lo, hi := -1, 0
	for b, bi := range m.bs {
		if !bi.receiving {
			continue
		}
		f.replicasOut += outside(p.replicas[b], repRng[b])
		if bi.demoted {
			continue
		}
		f.leadersOut += outside(lead[b], leadRng[b])
		if lo < 0 || topicLead[b] < lo {
			lo = topicLead[b]
		}
		hi = max(hi, topicLead[b])
	}
	f.spread = max(1, hi-lo)
	return f
}

// better reports whether p, the new partitions placed for replica balance
// alone, does better than q, placed in the order that spreads the topic's
// first replicas: no worse on demoted leaders, on the topic's leader
// spread and on the replicas out of range, and better on the replicas or
// the leaders out of range.
func (p placement) better(q placement, m *model, topic string, repRng []Range) bool {
	a, b := p.figures(m, topic, repRng), q.figures(m, topic, repRng)
	if a.demoted > b.demoted || a.spread > b.spread || a.replicasOut > b.replicasOut {
		return false
	}
	return a.replicasOut < b.replicasOut || a.leadersOut < b.leadersOut
}
