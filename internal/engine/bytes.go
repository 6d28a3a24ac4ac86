package engine

import (
	"cmp"
	"slices"
	"sort"
)

// balanceBytes runs only for a rebalance in place: when brokers are added or
// removed, the fewest moves come first and bytes are balanced only through
// the choice of which replicas move. Here, once some broker is further from
// its share of the bytes than max_disk_skew_percent, and then while one is
// further than Options.EvenBytesToPercent (KeptBalanced), it hands a
// replica to the broker furthest below its share, or swaps one with it. Either
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
	bb := &byteBalance{pl: pl, lists: make([][]int, nb)}
	// A cluster within max_disk_skew_percent is left as it is (a balanced
	// cluster plans no change); one beyond it is evened to EvenBytesToPercent.
	if !slices.ContainsFunc(recv, func(b int) bool { return bb.skew(b) > pl.o.MaxDiskSkewPercent }) {
		return
	}
	for i := range pl.ps {
		for _, b := range pl.cur[i] {
			bb.lists[b] = append(bb.lists[b], i)
		}
	}
	for _, b := range recv {
		slices.SortFunc(bb.lists[b], bb.bySize)
	}

	maxSteps := 4 * len(pl.ps)
	for step := 0; step < maxSteps; step++ {
		worst := -1
		for _, b := range recv {
			if bb.over(b) && (worst < 0 || bb.rel(b) > bb.rel(worst)) {
				worst = b
			}
		}
		if worst < 0 {
			return
		}
		if !bb.improve(worst, recv) {
			return
		}
	}
}

// byteBalance is balanceBytes' state: each broker's partitions, by size.
type byteBalance struct {
	pl    *planner
	lists [][]int
}

func (bb *byteBalance) size(i int) int64 { return bb.pl.ps[i].size }

func (bb *byteBalance) bySize(a, b int) int {
	return cmp.Or(cmp.Compare(bb.size(a), bb.size(b)), cmp.Compare(a, b))
}

// dev is how far broker b's bytes are above its share.
func (bb *byteBalance) dev(b int) int64 { return bb.pl.bytes[b] - bb.pl.byteTarget[b] }

// over says whether broker b is further from its share than a rebalance
// leaves it: EvenBytesToPercent when set, else max_disk_skew_percent.
func (bb *byteBalance) over(b int) bool {
	goal := bb.pl.o.EvenBytesToPercent
	if goal <= 0 || goal > bb.pl.o.MaxDiskSkewPercent {
		goal = bb.pl.o.MaxDiskSkewPercent
	}
	return bb.skew(b) > goal
}

// skew is how far broker b's bytes are from its share, in percent of it.
func (bb *byteBalance) skew(b int) float64 {
	return percent(abs64(bb.dev(b)), bb.pl.byteTarget[b])
}

// rel is broker b's deviation relative to its share.
func (bb *byteBalance) rel(b int) float64 {
	return float64(abs64(bb.dev(b))) / float64(bb.pl.byteTarget[b])
}

func (bb *byteBalance) relocate(i, from, to int) {
	k := slices.Index(bb.pl.cur[i], from)
	bb.pl.move(i, k, to)
	at, _ := slices.BinarySearchFunc(bb.lists[from], i, bb.bySize)
	bb.lists[from] = slices.Delete(bb.lists[from], at, at+1)
	at, _ = slices.BinarySearchFunc(bb.lists[to], i, bb.bySize)
	bb.lists[to] = slices.Insert(bb.lists[to], at, i)
}

// spreadMove says whether partition i's replica on from can move to to
// and the partition stay spread.
func (bb *byteBalance) spreadMove(i, from, to int) bool {
	pl := bb.pl
	k := slices.Index(pl.cur[i], from)
	return k >= 0 && !slices.Contains(pl.cur[i], to) && pl.topo.replaceKeepsSpread(pl.cur[i], k, to, pl.ps[i].rf())
}

func (bb *byteBalance) canMove(i, from, to int) bool {
	return bb.spreadMove(i, from, to) && bb.pl.fits(to, bb.pl.ps[i].size)
}

// nearest returns the partition of list (sorted by size) whose size is
// nearest to want within (0, limit) that ok accepts, trying a few on each
// side, or -1.
func (bb *byteBalance) nearest(list []int, want, limit int64, ok func(i int) bool) int {
	at := sort.Search(len(list), func(j int) bool { return bb.size(list[j]) >= want })
	best, bestDist := -1, int64(0)
	for _, dir := range []int{-1, 1} {
		start := at
		if dir < 0 {
			start = at - 1
		}
		for j, tries := start, 0; j >= 0 && j < len(list) && tries < 16; j, tries = j+dir, tries+1 {
			s := bb.size(list[j])
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

// improve hands a replica between worst and one of its partners, or swaps
// one with it, the partner furthest on the other side first. It reports
// whether anything moved.
func (bb *byteBalance) improve(worst int, recv []int) bool {
	pl := bb.pl
	partners := slices.Clone(recv)
	slices.SortFunc(partners, func(a, b int) int {
		if bb.dev(worst) > 0 {
			return cmp.Or(cmp.Compare(bb.dev(a), bb.dev(b)), cmp.Compare(a, b))
		}
		return cmp.Or(cmp.Compare(bb.dev(b), bb.dev(a)), cmp.Compare(a, b))
	})
	for _, other := range partners {
		u, v := worst, other // bytes flow from u to v
		if bb.dev(worst) < 0 {
			u, v = other, worst
		}
		gap := bb.dev(u) - bb.dev(v)
		if gap <= 1 {
			break
		}
		want := gap / 2
		if pl.count[u]-1 >= pl.tg.rng[u].Min && pl.count[v]+1 <= pl.tg.rng[v].Max {
			if i := bb.nearest(bb.lists[u], want, gap, func(i int) bool { return bb.canMove(i, u, v) }); i >= 0 {
				bb.relocate(i, u, v)
				return true
			}
		}
		if p, q := bb.swap(u, v, want, gap); p >= 0 {
			bb.relocate(p, u, v)
			bb.relocate(q, v, u)
			return true
		}
	}
	return false
}

// swap finds p on u and q on v to trade, size(p)-size(q) in (0, gap) and
// nearest want, or p = -1.
func (bb *byteBalance) swap(u, v int, want, gap int64) (p, q int) {
	bestP, bestQ, bestDist := -1, -1, int64(-1)
	// u's disk only shrinks in a swap; v's grows by the difference.
	for _, q := range bb.lists[v] {
		if !bb.spreadMove(q, v, u) {
			continue
		}
		sq := bb.size(q)
		p := bb.nearest(bb.lists[u], sq+want, sq+gap, func(i int) bool {
			return i != q && bb.size(i) > sq && bb.spreadMove(i, u, v) && bb.pl.fits(v, bb.size(i)-sq)
		})
		if p < 0 {
			continue
		}
		d := abs64(bb.size(p) - sq - want)
		if bestDist < 0 || d < bestDist {
			bestP, bestQ, bestDist = p, q, d
		}
		if d == 0 {
			break
		}
	}
	return bestP, bestQ
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
