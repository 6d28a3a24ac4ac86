package engine

import (
	"cmp"
	"math/big"
	"slices"
)

// Preferred leaders are balanced by choosing which replica comes first in each
// replica list; that moves no data. The targets are the water-filling again,
// with each broker able to lead at most the partitions it holds.

// leaderTargets gives each broker's balanced range of preferred leaders for
// the replica sets in sets. Only receiving brokers lead; a partition with no
// receiving replica keeps its first replica and is not counted. A demoted
// broker's range holds only what it must lead: the partitions it alone
// can lead, and at most those whose receiving replicas are all demoted;
// the other brokers share the rest.
func leaderTargets(bs []brokerFacts, sets [][]int) []Range {
	hosted := make([]int64, len(bs))
	// forced counts partitions with a single receiving replica, or a single
	// one not demoted: it must lead.
	forced := make([]int64, len(bs))
	// onlyDemoted counts, per demoted broker, the partitions of several
	// receiving replicas, all demoted: one of them must lead.
	onlyDemoted := make([]int64, len(bs))
	var total, demotedLead int64
	for _, set := range sets {
		n, free, last, lastFree := 0, 0, -1, -1
		for _, b := range set {
			if bs[b].receiving {
				hosted[b]++
				n, last = n+1, b
				if !bs[b].demoted {
					free, lastFree = free+1, b
				}
			}
		}
		switch {
		case n == 0:
			continue
		case n == 1:
			forced[last]++
			if bs[last].demoted {
				demotedLead++
			}
		case free == 1:
			// The only replica not demoted must lead.
			forced[lastFree]++
		case free == 0:
			demotedLead++
			for _, b := range set {
				if bs[b].receiving {
					onlyDemoted[b]++
				}
			}
		}
		total++
	}
	rng := make([]Range, len(bs))
	var ch []fillChild
	var who []int
	for b := range bs {
		switch {
		case !bs[b].receiving:
		case bs[b].demoted:
			rng[b] = Range{Min: int(forced[b]), Max: int(forced[b] + onlyDemoted[b])}
		default:
			ch = append(ch, fillChild{w: 1, lo: forced[b], hi: hosted[b]})
			who = append(who, b)
		}
	}
	if len(ch) == 0 {
		return rng
	}
	for k, s := range fill(new(big.Rat).SetInt64(total-demotedLead), ch) {
		rng[who[k]] = Range{Min: int(ratFloor(s)), Max: int(ratCeil(s))}
	}
	return rng
}

// balanceLeaders returns, for each partition, the position in sets[i] of its
// preferred leader. It starts from the current leader where it stays (or the
// replica that took its place), then hands leadership from brokers above
// their range to replicas below it: first directly, preferring partitions that
// move anyway, then along chains of partitions; last, it hands the ceilings
// of the ranges to the lighter brokers (leadersToLighter). m holds the
// partitions' original replica lists and sizes, sets their current ones;
// moving[i] says whether partition i's members change.
func balanceLeaders(m *model, sets [][]int, moving []bool, rng []Range) []int32 {
	bs, ps := m.bs, m.ps
	lead := make([]int, len(bs))
	// Positions are small, and there is one per partition: int32.
	pos := make([]int32, len(sets))
	for i, set := range sets {
		pos[i] = -1
		if orig := m.orig(i); len(orig) > 0 {
			if k := slices.Index(set, orig[0]); k >= 0 && bs[set[k]].receiving {
				pos[i] = int32(k)
			}
		}
		if pos[i] < 0 && len(set) > 0 && bs[set[0]].receiving {
			pos[i] = 0
		}
		if pos[i] < 0 {
			pos[i] = 0
			for k, b := range set {
				if bs[b].receiving {
					pos[i] = int32(k)
					break
				}
			}
		}
		if len(set) > 0 && bs[set[pos[i]]].receiving {
			lead[set[pos[i]]]++
		}
	}
	// Direct hand-overs. A hand-over from a broker above its minimum to one
	// below its minimum, or from one above its maximum to one below its
	// maximum, improves balance without harming either.
	var room handRoom
	handOver := func(i int) bool {
		set := sets[i]
		if len(set) < 2 {
			return false
		}
		from := set[pos[i]]
		if !bs[from].receiving || !room.gives(lead[from], rng[from]) {
			return false
		}
		best := -1
		for k, b := range set {
			if k == int(pos[i]) || !bs[b].receiving {
				continue
			}
			if best < 0 || lead[b]-rng[b].Max < lead[set[best]]-rng[set[best]].Max ||
				(lead[b]-rng[b].Max == lead[set[best]]-rng[set[best]].Max && b < set[best]) {
				best = k
			}
		}
		if best < 0 {
			return false
		}
		to := set[best]
		ok := (lead[from] > rng[from].Max && lead[to] < rng[to].Max) ||
			(lead[from] > rng[from].Min && lead[to] < rng[to].Min)
		if !ok {
			return false
		}
		lead[from]--
		lead[to]++
		pos[i] = int32(best)
		return true
	}
	// The passes end once no hand-over can succeed, which the counts alone
	// tell: at 933k partitions the last pass over them all found nothing.
	// The counts also tell which leaders may give: most partitions of such
	// a pass are passed over without a look at their other replicas.
	room = leaderRoom(bs, lead, rng)
	for _, onlyMoving := range []bool{true, false} {
		for changed := room.any(); changed; {
			changed = false
			for i := range sets {
				if (!onlyMoving || moving[i]) && handOver(i) {
					changed = true
					if room = leaderRoom(bs, lead, rng); !room.any() {
						break
					}
				}
			}
			changed = changed && room.any()
		}
	}
	g := newLeaderGraph(bs, sets, pos)
	chainLeaders(g, lead, rng)
	if leadersByLoad {
		leadersToLighter(g, ps, lead, rng)
	}
	return pos
}

// handRoom says which direct hand-overs may still succeed: one needs a
// receiving broker above its maximum and one below its maximum, or one
// above its minimum and one below its minimum.
type handRoom struct{ aboveMax, belowMax, aboveMin, belowMin bool }

func leaderRoom(bs []brokerFacts, lead []int, rng []Range) handRoom {
	var h handRoom
	for b := range bs {
		if !bs[b].receiving {
			continue
		}
		h.aboveMax = h.aboveMax || lead[b] > rng[b].Max
		h.belowMax = h.belowMax || lead[b] < rng[b].Max
		h.aboveMin = h.aboveMin || lead[b] > rng[b].Min
		h.belowMin = h.belowMin || lead[b] < rng[b].Min
	}
	return h
}

// any reports whether any hand-over may succeed.
func (h handRoom) any() bool { return (h.aboveMax && h.belowMax) || (h.aboveMin && h.belowMin) }

// gives reports whether a broker leading n, in range r, may hand a
// leadership over to another.
func (h handRoom) gives(n int, r Range) bool {
	return (h.belowMax && n > r.Max) || (h.belowMin && n > r.Min)
}

// chainLeaders fixes what direct hand-overs leave: a broker above its range
// passes one leadership along a chain of partitions to a broker with room,
// and a broker below its range receives one from a broker with some to spare.
// Replica lists often pair brokers in fixed patterns, so the chains matter.
// The search runs on a broker graph (leaderGraph), which the caller builds
// and may search again.
func chainLeaders(g *leaderGraph, lead []int, rng []Range) {
	bs, nb := g.bs, g.nb
	for changed := true; changed; {
		changed = false
		for b := range nb {
			for bs[b].receiving && lead[b] > rng[b].Max {
				// A broker with room in its range takes it; failing that, one
				// at least two below, which evens the load where the replica
				// sets cannot meet the ranges. Either way the sum of range
				// violations, then the sum of squared loads, falls: it ends.
				// A demoted broker is never the one "two below": its range
				// is what it must lead, not a share.
				end := g.path(b, true, func(w int) bool { return lead[w] < rng[w].Max || (!bs[w].demoted && lead[w] <= lead[b]-2) })
				if end < 0 && bs[b].demoted {
					// Better any broker not demoted above its range than
					// a demoted one leading what another can.
					end = g.path(b, true, func(w int) bool { return !bs[w].demoted })
				}
				if end < 0 {
					break
				}
				// Hand over from the end backwards, so each broker on the
				// way gives one before it receives one.
				for w := end; w != b; w = g.prev[w] {
					g.hand(g.prev[w], w)
				}
				lead[b]--
				lead[end]++
				changed = true
			}
		}
		for b := range nb {
			for bs[b].receiving && lead[b] < rng[b].Min {
				giver := g.path(b, false, func(u int) bool { return lead[u] > rng[u].Min || lead[u] >= lead[b]+2 })
				if giver < 0 {
					break
				}
				// prev points from the giver towards b.
				for u := giver; u != b; u = g.prev[u] {
					g.hand(u, g.prev[u])
				}
				lead[giver]--
				lead[b]++
				changed = true
			}
		}
	}
}

// leadersByLoad turns on leadersToLighter; tests turn it off to compare
// plans with and without it.
var leadersByLoad = true

// leadersToLighter decides which brokers get the ceilings of their ranges.
// A broker's range is the floor and the ceiling of its share, and the
// hand-overs above stop as soon as every broker is inside its range: a
// broker that starts with many leaderships (a lone broker of its rack
// takes the leaderships of the replicas it takes over from leaving
// rack-mates) stops at its ceiling. That broker holds the most replicas
// and does the most replication and disk work already; it should lead the
// fewest. So a broker above its minimum passes one leadership, along a
// chain of partitions, to a lighter broker below its maximum that leads
// fewer: the lightest it can reach. Both stay in their ranges and the
// spread does not grow; the moves do not change, as only the order of
// replica lists does.
func leadersToLighter(g *leaderGraph, ps []partitionFacts, lead []int, rng []Range) {
	bs := g.bs
	// Only a broker whose share is not whole can take a ceiling or give
	// one; with none, there is nothing to decide.
	if !slices.ContainsFunc(rng, func(r Range) bool { return r.Min < r.Max }) {
		return
	}
	load := make([]brokerLoad, len(bs))
	for i, set := range g.sets {
		for _, b := range set {
			if bs[b].receiving {
				load[b].replicas++
				load[b].bytes += ps[i].size
			}
		}
	}
	// Heaviest first. The order extends heavier, so every hand-over moves
	// a leadership down it, and the loop ends.
	var order []int
	for b := range bs {
		if bs[b].receiving {
			order = append(order, b)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(-cmp.Compare(load[a].replicas, load[b].replicas), -cmp.Compare(load[a].bytes, load[b].bytes))
	})
	for changed := true; changed; {
		changed = false
		for k, h := range order {
			for lead[h] > rng[h].Min {
				g.reach(h)
				to := -1
				for _, l := range slices.Backward(order[k+1:]) {
					if g.seen[l] && lead[l] < rng[l].Max && lead[l] < lead[h] && load[h].heavier(load[l]) {
						to = l
						break
					}
				}
				if to < 0 {
					break
				}
				for w := to; w != h; w = g.prev[w] {
					g.hand(g.prev[w], w)
				}
				lead[h]--
				lead[to]++
				changed = true
			}
		}
	}
}

// brokerLoad is what makes a broker heavier when leaderships are shared:
// the replicas it holds, then its bytes where they clearly differ
// (compareBytes). Brokers alike in both are equal, and no leadership
// changes hands between them for a difference of a few bytes.
type brokerLoad struct {
	replicas int
	bytes    int64
}

func (a brokerLoad) heavier(b brokerLoad) bool {
	if a.replicas != b.replicas {
		return a.replicas > b.replicas
	}
	return compareBytes(a.bytes, b.bytes) > 0
}

// leaderGraph is the broker graph chainLeaders searches: edge[u*nb+w]
// counts the partitions that u leads and w holds, kept up to date as
// leadership changes hands (in pos).
type leaderGraph struct {
	bs    []brokerFacts
	sets  [][]int
	pos   []int32
	nb    int
	edge  []int32
	ledBy [][]int32 // the partitions each broker leads
	// holds is beside each entry of ledBy the brokers of its partition, as
	// bits (broker index mod 32): hand looks for a partition that holds a
	// given broker, and among a broker's thousands a test of this word
	// passes over all but a few without reading their replica sets, which
	// lie all over memory.
	holds [][]uint32
	// prev is the broker before each on the last path found.
	prev []int
	seen []bool
}

func newLeaderGraph(bs []brokerFacts, sets [][]int, pos []int32) *leaderGraph {
	nb := len(bs)
	g := &leaderGraph{bs: bs, sets: sets, pos: pos, nb: nb, edge: make([]int32, nb*nb), ledBy: make([][]int32, nb), holds: make([][]uint32, nb)}
	// Each broker's partitions share one allocation, sized by a first
	// count: a broker leads ~10^4 partitions at the largest scales, and
	// growing its list by appending would allocate several times that. The
	// chains hand some over, so each list has room to take a few.
	led := make([]int, nb)
	for i, set := range sets {
		if len(set) > 0 {
			led[set[pos[i]]]++
		}
	}
	room := func(n int) int { return n + n/16 + 16 }
	size := 0
	for _, n := range led {
		size += room(n)
	}
	arena, bits := make([]int32, size), make([]uint32, size)
	for b, n := range led {
		g.ledBy[b], arena = arena[:0:room(n)], arena[room(n):]
		g.holds[b], bits = bits[:0:room(n)], bits[room(n):]
	}
	for i, set := range sets {
		if len(set) == 0 {
			continue
		}
		u := set[pos[i]]
		g.ledBy[u] = append(g.ledBy[u], int32(i))
		g.holds[u] = append(g.holds[u], holdBits(set))
		for _, w := range set {
			if w != u {
				g.edge[u*nb+w]++
			}
		}
	}
	g.prev = make([]int, nb)
	g.seen = make([]bool, nb)
	return g
}

// hand moves the leadership of a partition that u leads and w holds to w.
func (g *leaderGraph) hand(u, w int) {
	nb := g.nb
	bit := uint32(1) << (w & 31)
	for k, i := range g.ledBy[u] {
		if g.holds[u][k]&bit == 0 {
			continue
		}
		set := g.sets[i]
		if set[g.pos[i]] != u || !slices.Contains(set, w) {
			continue
		}
		bits := g.holds[u][k]
		g.ledBy[u] = slices.Delete(g.ledBy[u], k, k+1)
		g.holds[u] = slices.Delete(g.holds[u], k, k+1)
		for _, x := range set {
			if x != u {
				g.edge[u*nb+x]--
			}
			if x != w {
				g.edge[w*nb+x]++
			}
		}
		g.pos[i] = int32(slices.Index(set, w))
		g.ledBy[w] = append(g.ledBy[w], i)
		g.holds[w] = append(g.holds[w], bits)
		return
	}
	panic("engine: leader chain edge without a partition")
}

// holdBits is the word of leaderGraph.holds for a replica set.
func holdBits(set []int) uint32 {
	var bits uint32
	for _, b := range set {
		bits |= 1 << (b & 31)
	}
	return bits
}

// reach marks in seen every broker that start can pass a leadership to
// along a chain of partitions; prev leads back from each to start.
func (g *leaderGraph) reach(start int) {
	g.path(start, true, func(int) bool { return false })
}

// path searches from start along edges (forward: u leads what w holds;
// backward: the reverse) for a broker goal accepts, and returns it or -1.
// prev leads back from it to start.
func (g *leaderGraph) path(start int, forward bool, goal func(b int) bool) int {
	nb := g.nb
	clear(g.seen)
	g.seen[start] = true
	queue := []int{start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for w := range nb {
			if g.seen[w] || !g.bs[w].receiving {
				continue
			}
			e := g.edge[u*nb+w]
			if !forward {
				e = g.edge[w*nb+u]
			}
			if e == 0 {
				continue
			}
			g.seen[w] = true
			g.prev[w] = u
			if goal(w) {
				return w
			}
			queue = append(queue, w)
		}
	}
	return -1
}
