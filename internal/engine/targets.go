package engine

import (
	"fmt"
	"math/big"
	"slices"
)

// Balance targets.
//
// With even racks, every broker should hold the mean number of replicas,
// rounded down or up. Uneven racks can make that impossible: with racks
// a, b, c, a, b and RF 3, the lone broker of rack c must hold a replica of
// every partition. The targets are therefore computed as the best the racks
// allow: a water-filling over the tree of failure domains (zones, then racks,
// then brokers). Each domain can hold between lo and hi replicas, as the
// spread rule dictates per partition; inside those bounds, the replicas are
// shared in proportion to the number of brokers, which keeps the busiest
// broker as light as it can be and the idlest as full as it can be.

// fillChild is one child of a domain in the water-filling.
type fillChild struct {
	w      int64 // brokers below that may receive replicas
	lo, hi int64 // bounds on the replicas the child may hold
	cur    int64 // replicas it holds now; rounding prefers to keep them
}

// fill shares total over children: t[c] = clamp(λ·w[c], lo[c], hi[c]) with
// the sum equal to total. The caller ensures Σlo ≤ total ≤ Σhi.
func fill(total *big.Rat, ch []fillChild) []*big.Rat {
	clampAt := func(lambda *big.Rat, c fillChild) *big.Rat {
		v := new(big.Rat).Mul(lambda, new(big.Rat).SetInt64(c.w))
		if lo := new(big.Rat).SetInt64(c.lo); v.Cmp(lo) < 0 || c.w == 0 {
			return lo
		}
		if hi := new(big.Rat).SetInt64(c.hi); v.Cmp(hi) > 0 {
			return hi
		}
		return v
	}
	sumAt := func(lambda *big.Rat) *big.Rat {
		s := new(big.Rat)
		for _, c := range ch {
			s.Add(s, clampAt(lambda, c))
		}
		return s
	}
	var bps []*big.Rat
	for _, c := range ch {
		if c.w > 0 {
			bps = append(bps, big.NewRat(c.lo, c.w), big.NewRat(c.hi, c.w))
		}
	}
	out := make([]*big.Rat, len(ch))
	if len(bps) == 0 {
		for i, c := range ch {
			out[i] = new(big.Rat).SetInt64(c.lo)
		}
		return out
	}
	slices.SortFunc(bps, func(a, b *big.Rat) int { return a.Cmp(b) })
	bps = slices.CompactFunc(bps, func(a, b *big.Rat) bool { return a.Cmp(b) == 0 })
	// The last breakpoint at which the sum is still at most total.
	i, j := 0, len(bps)-1
	if sumAt(bps[0]).Cmp(total) >= 0 {
		j = 0
	}
	for i < j {
		m := (i + j + 1) / 2
		if sumAt(bps[m]).Cmp(total) <= 0 {
			i = m
		} else {
			j = m - 1
		}
	}
	lambda := new(big.Rat).Set(bps[i])
	if s := sumAt(lambda); s.Cmp(total) < 0 && i+1 < len(bps) {
		// Between bps[i] and bps[i+1] the sum grows by the free weight.
		var free int64
		for _, c := range ch {
			if c.w > 0 && big.NewRat(c.lo, c.w).Cmp(bps[i]) <= 0 && big.NewRat(c.hi, c.w).Cmp(bps[i+1]) >= 0 {
				free += c.w
			}
		}
		if free > 0 {
			step := new(big.Rat).Sub(total, s)
			step.Quo(step, new(big.Rat).SetInt64(free))
			lambda.Add(lambda, step)
		}
	}
	for k, c := range ch {
		out[k] = clampAt(lambda, c)
	}
	return out
}

// fillInt is fill rounded to whole replicas: each child gets the floor or the
// ceiling of its share, and the ceilings go first to the children that hold
// the most now relative to their share, so that rounding costs no moves.
func fillInt(total int64, ch []fillChild) []int64 {
	shares := fill(new(big.Rat).SetInt64(total), ch)
	out := make([]int64, len(ch))
	var sum int64
	var frac []int
	for k, s := range shares {
		out[k] = ratFloor(s)
		sum += out[k]
		if !s.IsInt() {
			frac = append(frac, k)
		}
	}
	slices.SortStableFunc(frac, func(a, b int) int {
		da := new(big.Rat).Sub(new(big.Rat).SetInt64(ch[a].cur), shares[a])
		db := new(big.Rat).Sub(new(big.Rat).SetInt64(ch[b].cur), shares[b])
		return db.Cmp(da)
	})
	for _, k := range frac[:min(len(frac), int(total-sum))] {
		out[k]++
	}
	return out
}

func ratFloor(r *big.Rat) int64 {
	q := new(big.Int).Quo(r.Num(), r.Denom()) // truncates toward zero
	if r.Sign() < 0 && !r.IsInt() {
		q.Sub(q, big.NewInt(1))
	}
	return q.Int64()
}

func ratCeil(r *big.Rat) int64 {
	f := ratFloor(r)
	if r.IsInt() {
		return f
	}
	return f + 1
}

// domain is a node of the failure-domain tree: a value of one dimension, or
// (at the bottom) a broker.
type domain struct {
	level    int // dimension index; dims for a broker leaf
	broker   int // broker index for leaves
	children []int
	weight   int64
	lo, hi   int64
	cur      int64
}

// targets are the balance targets of the receiving brokers.
type targets struct {
	// replicas is the whole-replica target of every broker: the count the
	// planner aims at, chosen among the balanced counts to need the fewest
	// moves.
	replicas []int
	// rng is the balanced range of every broker: floor and ceiling of its
	// exact share.
	rng []Range
	// share is the exact share of every broker, as a fraction of total.
	share []*big.Rat
	total int64
}

// rfClasses counts the partitions of each replication factor that must be
// placed on receiving brokers.
type rfClasses map[int]int64

// computeTargets runs the water-filling over the receiving brokers.
// cur[b] is broker b's current replica count (used only for rounding).
// It fails when the racks cannot hold a replication factor at all.
func computeTargets(t *topology, receiving []bool, classes rfClasses, cur []int) (targets, error) {
	nb := len(receiving)
	tg := targets{replicas: make([]int, nb), rng: make([]Range, nb), share: make([]*big.Rat, nb)}
	for b := range tg.share {
		tg.share[b] = new(big.Rat)
	}
	rfs := make([]int, 0, len(classes))
	for f := range classes {
		rfs = append(rfs, f)
	}
	slices.Sort(rfs)
	for _, f := range rfs {
		tg.total += int64(f) * classes[f]
	}

	nodes := domainTree(t, receiving, cur)
	if len(nodes[0].children) == 0 {
		if tg.total > 0 {
			return tg, &InfeasibleError{Constraint: ConstraintBrokerCount, Subject: "the cluster",
				Need: 1, Limit: 0, Unit: "brokers", Detail: "no broker can receive replicas"}
		}
		return tg, nil
	}
	if err := boundDomains(nodes, t, classes, rfs); err != nil {
		return tg, err
	}
	total := tg.total
	if total < nodes[0].lo || total > nodes[0].hi {
		return tg, &InfeasibleError{Constraint: ConstraintRackSpread, Subject: "the cluster",
			Need: total, Limit: nodes[0].hi, Unit: "replicas", Detail: "the racks cannot hold every replica spread"}
	}
	fillDomains(nodes, t.dims, tg)
	improveWholeTargets(nodes, t.dims, tg, cur)
	for b := range nb {
		if !receiving[b] {
			continue
		}
		r := Range{Min: int(ratFloor(tg.share[b])), Max: int(ratCeil(tg.share[b]))}
		// The whole target is within the range for even splits; a clamp deep
		// in the tree could round past it, and then the range widens to it.
		r.Min = min(r.Min, tg.replicas[b])
		r.Max = max(r.Max, tg.replicas[b])
		tg.rng[b] = r
	}
	return tg, nil
}

// domainTree builds the tree of the receiving brokers: the root, then one
// level per dimension, then the brokers. Children come after their parent.
func domainTree(t *topology, receiving []bool, cur []int) []domain {
	nodes := []domain{{level: -1}}
	index := make([]map[int32]int, t.dims)
	for d := range index {
		index[d] = map[int32]int{}
	}
	for b := range receiving {
		if !receiving[b] {
			continue
		}
		parent := 0
		for d := range t.dims {
			v := t.val[b][d]
			n, ok := index[d][v]
			if !ok {
				n = len(nodes)
				nodes = append(nodes, domain{level: d})
				index[d][v] = n
				nodes[parent].children = append(nodes[parent].children, n)
			}
			parent = n
		}
		leaf := len(nodes)
		nodes = append(nodes, domain{level: t.dims, broker: b, weight: 1, cur: int64(cur[b])})
		nodes[parent].children = append(nodes[parent].children, leaf)
	}
	return nodes
}

// boundDomains sums the weights and counts of every domain's brokers, and
// sets the fewest and most replicas it can hold with every partition
// spread, from its bounds per replication factor (rfs, sorted; classes
// counts the partitions of each). It fails when a domain or the cluster
// cannot hold a replication factor at all.
func boundDomains(nodes []domain, t *topology, classes rfClasses, rfs []int) error {
	// Bottom up: children come after their parent in nodes, so a reverse
	// walk sees children first.
	nf := len(rfs)
	lo := make([][]int64, len(nodes))
	hi := make([][]int64, len(nodes))
	for n := len(nodes) - 1; n >= 0; n-- {
		lo[n], hi[n] = make([]int64, nf), make([]int64, nf)
		nd := &nodes[n]
		if nd.level == t.dims {
			for k := range rfs {
				hi[n][k] = 1
			}
			continue
		}
		for _, c := range nd.children {
			nd.weight += nodes[c].weight
			nd.cur += nodes[c].cur
			for k := range rfs {
				lo[n][k] += lo[c][k]
				hi[n][k] += hi[c][k]
			}
		}
		if nd.level < 0 {
			continue
		}
		v := int64(t.avail[nd.level])
		for k, f := range rfs {
			f := int64(f)
			if f <= v {
				hi[n][k] = min(hi[n][k], 1)
			} else {
				hi[n][k] = min(hi[n][k], f-v+1)
			}
			if f >= v {
				lo[n][k] = max(lo[n][k], 1)
			}
			if lo[n][k] > hi[n][k] {
				return &InfeasibleError{Constraint: ConstraintRackSpread,
					Subject: fmt.Sprintf("%s %q", t.names[nd.level], t.valName[nd.level][valueOf(nodes, n, t)]),
					Need:    lo[n][k], Limit: hi[n][k], Unit: "replicas per partition",
					Detail: fmt.Sprintf("replication factor %d needs a replica here, but it has too few brokers", f)}
			}
		}
	}
	for k, f := range rfs {
		if hi[0][k] < int64(f) {
			return &InfeasibleError{Constraint: ConstraintBrokerCount, Subject: "the cluster",
				Need: int64(f), Limit: hi[0][k], Unit: "brokers",
				Detail: fmt.Sprintf("replication factor %d cannot be placed on the brokers that can receive replicas", f)}
		}
	}
	for n := range nodes {
		for k := range rfs {
			nodes[n].lo += classes[rfs[k]] * lo[n][k]
			nodes[n].hi += classes[rfs[k]] * hi[n][k]
		}
	}
	return nil
}

// fillDomains water-fills tg.total down the tree: the exact shares, then
// the whole-replica targets.
func fillDomains(nodes []domain, dims int, tg targets) {
	children := func(n int) []fillChild {
		ch := make([]fillChild, len(nodes[n].children))
		for i, c := range nodes[n].children {
			ch[i] = fillChild{w: nodes[c].weight, lo: nodes[c].lo, hi: nodes[c].hi, cur: nodes[c].cur}
		}
		return ch
	}
	var walkReal func(n int, total *big.Rat)
	walkReal = func(n int, total *big.Rat) {
		if nodes[n].level == dims {
			tg.share[nodes[n].broker] = total
			return
		}
		for i, s := range fill(total, children(n)) {
			walkReal(nodes[n].children[i], s)
		}
	}
	var walkInt func(n int, total int64)
	walkInt = func(n int, total int64) {
		if nodes[n].level == dims {
			tg.replicas[nodes[n].broker] = int(total)
			return
		}
		for i, s := range fillInt(total, children(n)) {
			walkInt(nodes[n].children[i], s)
		}
	}
	walkReal(0, new(big.Rat).SetInt64(tg.total))
	walkInt(0, tg.total)
}

// improveWholeTargets trades whole replicas of target between brokers while
// that saves moves. Rounding the shares domain by domain can give a broker
// that holds many replicas the floor of its share and a new broker the
// ceiling, when the other way round would keep a replica in place: both are
// balanced, but only one is the fewest moves. A unit of target goes from a
// broker above its current count to one below it, both staying within the
// floor and ceiling of their shares and every domain within its bounds.
func improveWholeTargets(nodes []domain, dims int, tg targets, cur []int) {
	parent := make([]int, len(nodes))
	leaf := map[int]int{}
	for n := range nodes {
		for _, c := range nodes[n].children {
			parent[c] = n
		}
		if nodes[n].level == dims {
			leaf[nodes[n].broker] = n
		}
	}
	total := make([]int64, len(nodes))
	for b, n := range leaf {
		for ; n != 0; n = parent[n] {
			total[n] += int64(tg.replicas[b])
		}
	}
	floorOf := func(b int) int { return int(ratFloor(tg.share[b])) }
	ceilOf := func(b int) int { return int(ratCeil(tg.share[b])) }
	var brokers []int
	for n := range nodes {
		if nodes[n].level == dims {
			brokers = append(brokers, nodes[n].broker)
		}
	}
	mark := make([]bool, len(nodes))
	shiftOK := func(up, down int) bool {
		clear(mark)
		for n := leaf[down]; n != 0; n = parent[n] {
			mark[n] = true
		}
		for n := leaf[up]; n != 0; n = parent[n] {
			if mark[n] {
				mark[n] = false // shared: unchanged
				continue
			}
			if total[n]+1 > nodes[n].hi {
				return false
			}
		}
		for n := leaf[down]; n != 0; n = parent[n] {
			if mark[n] && total[n]-1 < nodes[n].lo {
				return false
			}
		}
		return true
	}
	for {
		moved := false
		for _, a := range brokers {
			if tg.replicas[a] >= cur[a] || tg.replicas[a] >= ceilOf(a) {
				continue
			}
			for _, b := range brokers {
				if tg.replicas[b] <= cur[b] || tg.replicas[b] <= floorOf(b) || !shiftOK(a, b) {
					continue
				}
				tg.replicas[a]++
				tg.replicas[b]--
				for n := leaf[a]; n != 0; n = parent[n] {
					total[n]++
				}
				for n := leaf[b]; n != 0; n = parent[n] {
					total[n]--
				}
				moved = true
				break
			}
		}
		if !moved {
			return
		}
	}
}

// valueOf finds the dimension value id of a tree node through any broker below it.
func valueOf(nodes []domain, n int, t *topology) int32 {
	d := nodes[n].level
	for nodes[n].level < t.dims {
		n = nodes[n].children[0]
	}
	return t.val[nodes[n].broker][d]
}
