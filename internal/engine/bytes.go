package engine

import (
	"cmp"
	"slices"
	"sort"
)

// balanceBytes runs only for a rebalance in place: when brokers are added or
// removed, the fewest moves come first and bytes are balanced only through
// the choice of which replicas move. Here, while some broker is further from
// its share of the bytes than max_disk_skew_percent, it hands a replica to
// the broker furthest below its share, or swaps one replica with it. Either
// keeps replica counts within their ranges and partitions spread, and
// strictly lowers the sum of squared deviations, so the loop ends.
func (pl *planner) balanceBytes() {
	nb := len(pl.bs)
	var recv []int
	for b := range nb {
		if pl.bs[b].receiving && pl.byteTarget[b] > 0 {
			recv = append(recv, b)
		}
	}
	if len(recv) < 2 {
		return
	}
	size := func(i int) int64 { return pl.ps[i].size }
	bySize := func(a, b int) int { return cmp.Or(cmp.Compare(size(a), size(b)), cmp.Compare(a, b)) }
	lists := make([][]int, nb)
	for i := range pl.ps {
		for _, b := range pl.cur[i] {
			lists[b] = append(lists[b], i)
		}
	}
	for _, b := range recv {
		slices.SortFunc(lists[b], bySize)
	}
	dev := func(b int) int64 { return pl.bytes[b] - pl.byteTarget[b] }
	over := func(b int) bool {
		d := dev(b)
		if d < 0 {
			d = -d
		}
		return percent(d, pl.byteTarget[b]) > pl.o.MaxDiskSkewPercent
	}
	rel := func(b int) float64 { return float64(abs64(dev(b))) / float64(pl.byteTarget[b]) }
	relocate := func(i, from, to int) {
		k := slices.Index(pl.cur[i], from)
		pl.move(i, k, to)
		at, _ := slices.BinarySearchFunc(lists[from], i, bySize)
		lists[from] = slices.Delete(lists[from], at, at+1)
		at, _ = slices.BinarySearchFunc(lists[to], i, bySize)
		lists[to] = slices.Insert(lists[to], at, i)
	}
	spreadMove := func(i, from, to int) bool {
		k := slices.Index(pl.cur[i], from)
		return k >= 0 && !slices.Contains(pl.cur[i], to) && pl.topo.replaceKeepsSpread(pl.cur[i], k, to, pl.ps[i].rf)
	}
	canMove := func(i, from, to int) bool { return spreadMove(i, from, to) && pl.fits(to, pl.ps[i].size) }
	// nearest returns the partition of list (sorted by size) whose size is
	// nearest to want within (0, limit) that ok accepts, trying a few on
	// each side, or -1.
	nearest := func(list []int, want, limit int64, ok func(i int) bool) int {
		at := sort.Search(len(list), func(j int) bool { return size(list[j]) >= want })
		best, bestDist := -1, int64(0)
		for _, dir := range []int{-1, 1} {
			start := at
			if dir < 0 {
				start = at - 1
			}
			for j, tries := start, 0; j >= 0 && j < len(list) && tries < 16; j, tries = j+dir, tries+1 {
				s := size(list[j])
				if s <= 0 || s >= limit {
					continue
				}
				d := s - want
				if d < 0 {
					d = -d
				}
				if best >= 0 && d >= bestDist {
					break
				}
				if ok(list[j]) {
					best, bestDist = list[j], d
					break
				}
			}
		}
		return best
	}

	maxSteps := 4 * len(pl.ps)
	for step := 0; step < maxSteps; step++ {
		worst := -1
		for _, b := range recv {
			if over(b) && (worst < 0 || rel(b) > rel(worst)) {
				worst = b
			}
		}
		if worst < 0 {
			return
		}
		// Partners in order: furthest on the other side first.
		partners := slices.Clone(recv)
		slices.SortFunc(partners, func(a, b int) int {
			if dev(worst) > 0 {
				return cmp.Or(cmp.Compare(dev(a), dev(b)), cmp.Compare(a, b))
			}
			return cmp.Or(cmp.Compare(dev(b), dev(a)), cmp.Compare(a, b))
		})
		improved := false
		for _, other := range partners {
			u, v := worst, other // bytes flow from u to v
			if dev(worst) < 0 {
				u, v = other, worst
			}
			gap := dev(u) - dev(v)
			if gap <= 1 {
				break
			}
			want := gap / 2
			if pl.count[u]-1 >= pl.tg.rng[u].Min && pl.count[v]+1 <= pl.tg.rng[v].Max {
				if i := nearest(lists[u], want, gap, func(i int) bool { return canMove(i, u, v) }); i >= 0 {
					relocate(i, u, v)
					improved = true
					break
				}
			}
			// Swap: p from u to v, q from v to u, size(p)-size(q) in (0, gap).
			bestP, bestQ, bestDist := -1, -1, int64(-1)
			// u's disk only shrinks in a swap; v's grows by the difference.
			for _, q := range lists[v] {
				if !spreadMove(q, v, u) {
					continue
				}
				sq := size(q)
				p := nearest(lists[u], sq+want, sq+gap, func(i int) bool {
					return i != q && size(i) > sq && spreadMove(i, u, v) && pl.fits(v, size(i)-sq)
				})
				if p < 0 {
					continue
				}
				d := abs64(size(p) - sq - want)
				if bestDist < 0 || d < bestDist {
					bestP, bestQ, bestDist = p, q, d
				}
				if d == 0 {
					break
				}
			}
			if bestP >= 0 {
				relocate(bestP, u, v)
				relocate(bestQ, v, u)
				improved = true
				break
			}
		}
		if !improved {
			return
		}
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
