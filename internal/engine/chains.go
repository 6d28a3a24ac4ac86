package engine

import "slices"

// repairChains balances what balanceCounts leaves. balanceCounts moves a
// replica only straight from a broker above its target to one below, and that
// can get stuck: the only broker below target may be in a rack that none of
// the surplus replicas may enter. A chain still works: the surplus broker
// passes a replica to a broker at target, which passes another on, until one
// lands on a broker below target. Replicas that arrived during planning are
// passed on first: passing one on changes where it lands, not how many
// replicas move.
//
// Three kinds of chain run in turn until none is left:
//   - from a broker above its whole target (or a removed one) to one below;
//   - from a broker above its balanced range (or a removed one) to one with
//     room in its range or at least two replicas fewer;
//   - to a broker below its range from one above its minimum or with at
//     least two replicas more.
//
// Racks can make the ranges unreachable (brokers that only pass replicas
// among themselves); the last two kinds then spread the excess as evenly as
// the racks allow. Each chain lowers the distance to the targets, or the sum
// of range violations, or failing both the sum of squared counts, so the
// repairs end. budget bounds the spread checks they may spend in all, so that
// a huge cluster that cannot be balanced does not make planning slow.
func (pl *planner) repairChains(budget int) {
	nb := len(pl.bs)
	rng := pl.tg.rng
	removed := func(b int) bool { return pl.bs[b].removed && pl.count[b] > 0 }
	recv := func(b int) bool { return pl.bs[b].receiving }
	for {
		progress := false
		for pl.chain(&budget, func(b int) bool { return removed(b) || (recv(b) && pl.count[b] > pl.tg.replicas[b]) },
			func(_, b int) bool { return pl.count[b] < pl.tg.replicas[b] }) {
			progress = true
		}
		for pl.chain(&budget, func(b int) bool { return removed(b) || (recv(b) && pl.count[b] > rng[b].Max) },
			func(src, b int) bool { return pl.count[b] < rng[b].Max || pl.count[b] <= pl.count[src]-2 }) {
			progress = true
		}
		for v := range nb {
			for recv(v) && pl.count[v] < rng[v].Min && pl.chain(&budget,
				func(b int) bool {
					return removed(b) || (recv(b) && b != v && (pl.count[b] > rng[b].Min || pl.count[b] >= pl.count[v]+2))
				},
				func(_, b int) bool { return b == v }) {
				progress = true
			}
		}
		if !progress || budget < 0 {
			return
		}
	}
}

// chain searches, from every broker source accepts at once, for a sequence
// of single-replica moves, each keeping its partition spread and on disk, that
// ends on a broker goal accepts (given the chain's first broker). It prefers
// chains that add the fewest moves to the plan: passing on a replica that
// arrived during planning costs none, putting one back where it was costs one
// less, moving one from where it always was costs one more. The search is
// Dial's algorithm over brokers with each hop weighing its cost plus one, so
// short chains win ties. It applies the best chain and reports whether it
// found one.
func (pl *planner) chain(budget *int, source func(b int) bool, goal func(src, b int) bool) bool {
	nb := len(pl.bs)
	type hop struct{ from, part int }
	prev := make([]hop, nb)
	origin := make([]int, nb)
	dist := make([]int, nb)
	done := make([]bool, nb)
	buckets := make([][]int, 2*nb+2)
	for b := range nb {
		dist[b] = -1
		if source(b) {
			dist[b] = 0
			origin[b] = b
			buckets[0] = append(buckets[0], b)
		}
	}
	if len(buckets[0]) == 0 {
		return false
	}
	hosted := make([][]int, nb)
	for i, set := range pl.cur {
		for _, b := range set {
			hosted[b] = append(hosted[b], i)
		}
	}
	end := -1
	for d := 0; d < len(buckets) && end < 0; d++ {
		for len(buckets[d]) > 0 && end < 0 {
			w := buckets[d][0]
			buckets[d] = buckets[d][1:]
			if done[w] || dist[w] != d {
				continue
			}
			done[w] = true
			if d > 0 && goal(origin[w], w) {
				end = w
				break
			}
			for _, i := range hosted[w] {
				set := pl.cur[i]
				orig := pl.orig(i)
				k := slices.Index(set, w)
				leave := 0
				if !slices.Contains(orig, w) {
					leave = 1
				}
				for b := range nb {
					if done[b] || !pl.bs[b].receiving || slices.Contains(set, b) {
						continue
					}
					arrive := 0
					if !slices.Contains(orig, b) {
						arrive = 1
					}
					nd := d + 1 + arrive - leave
					if dist[b] >= 0 && dist[b] <= nd {
						continue
					}
					if *budget--; *budget < 0 {
						return false
					}
					if !pl.fits(b, pl.ps[i].size) || !pl.topo.replaceKeepsSpread(set, k, b, pl.ps[i].rf()) {
						continue
					}
					dist[b] = nd
					prev[b] = hop{w, i}
					origin[b] = origin[w]
					buckets[nd] = append(buckets[nd], b)
				}
			}
		}
	}
	if end < 0 {
		return false
	}
	// Check the whole chain first: a partition may appear on it twice.
	type step struct{ part, k, to int }
	var steps []step
	trial := map[int][]int{}
	for b := end; b != origin[end]; b = prev[b].from {
		h := prev[b]
		set, ok := trial[h.part]
		if !ok {
			set = slices.Clone(pl.cur[h.part])
		}
		k := slices.Index(set, h.from)
		if k < 0 || slices.Contains(set, b) || !pl.topo.replaceKeepsSpread(set, k, b, pl.ps[h.part].rf()) {
			return false
		}
		set[k] = b
		trial[h.part] = set
		steps = append(steps, step{h.part, k, b})
	}
	for _, s := range steps {
		pl.move(s.part, s.k, s.to)
	}
	return true
}
