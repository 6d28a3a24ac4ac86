package engine

import "slices"

// balanceCounts moves replicas from brokers above their target (and from
// removed brokers, whose target is zero) to brokers below it, one move per
// missing replica, which is the fewest moves that balance. Each move keeps
// its partition spread. The partition moved is the one whose size best fits
// what both brokers still need in bytes, so bytes balance without extra moves.
func (pl *planner) balanceCounts() {
	nb := len(pl.bs)
	cb := newCountBalance(pl)
	var dests []int
	for b := range nb {
		if cb.lists[b] != nil {
			cb.update(b)
		}
		if pl.bs[b].receiving && pl.count[b] < pl.tg.replicas[b] {
			dests = append(dests, b)
		}
	}
	stuck := make([]bool, nb)
	for {
		// The destination furthest below target, then below its bytes.
		v := -1
		var vNeed int
		var vBytes int64
		dests = slices.DeleteFunc(dests, func(b int) bool { return stuck[b] || pl.count[b] >= pl.tg.replicas[b] })
		for _, b := range dests {
			need, bytes := pl.tg.replicas[b]-pl.count[b], pl.byteTarget[b]-pl.bytes[b]
			if v < 0 || need > vNeed || (need == vNeed && bytes > vBytes) {
				v, vNeed, vBytes = b, need, bytes
			}
		}
		if v < 0 {
			return
		}
		dv := max(0, perSlot(pl.byteTarget[v]-pl.bytes[v], pl.tg.replicas[v]-pl.count[v]))
		if !cb.moveTo(v, dv) {
			stuck[v] = true
		}
	}
}

// countBalance is balanceCounts' state: the sources' partitions and
// figures, and what the searches for each destination learnt.
type countBalance struct {
	pl      *planner
	lists   []*srcList
	sources *sourceSet
	// tried marks the sources tried for the current destination.
	tried []bool
	// failed[v*nb+u] records that a short search from u found nothing for v;
	// such pairs are tried last. dead pairs had a full search fail: v only
	// gains replicas and u only loses them, so they stay incompatible.
	failed, dead []bool
}

func newCountBalance(pl *planner) *countBalance {
	nb := len(pl.bs)
	cb := &countBalance{pl: pl, sources: newSourceSet(nb), tried: make([]bool, nb),
		failed: make([]bool, nb*nb), dead: make([]bool, nb*nb)}
	// The sizes in one dense array: the sort and the searches below read
	// them in no particular order, and reading them from the partitions'
	// facts, far apart, missed the cache nearly every time.
	sizes := make([]int64, len(pl.ps))
	for i, p := range pl.ps {
		sizes[i] = p.size
	}
	cb.lists = newSrcLists(pl.cur, nb, sizes, func(b int) bool { return cb.surplus(b) > 0 })
	return cb
}

// surplus is how many replicas broker b has above its target.
func (cb *countBalance) surplus(b int) int {
	pl := cb.pl
	bi := &pl.bs[b]
	switch {
	case bi.removed:
		return pl.count[b]
	case bi.receiving:
		return pl.count[b] - pl.tg.replicas[b]
	}
	return 0
}

// update records source b's figures, which change only when it gives up
// a replica.
func (cb *countBalance) update(b int) {
	pl := cb.pl
	sur := cb.surplus(b)
	cb.sources.set(b, pl.bs[b].removed, sur, perSlot(pl.bytes[b]-pl.byteTarget[b], sur))
}

// perSlot is need shared over n slots, zero without any.
func perSlot(need int64, n int) int64 {
	if n <= 0 {
		return 0
	}
	return need / int64(n)
}

// moveTo moves one replica to destination v, which needs dv bytes per
// missing replica, from the best source that has a partition for it: a
// short search of each source first, then a full one. It reports whether
// a replica moved.
func (cb *countBalance) moveTo(v int, dv int64) bool {
	pl := cb.pl
	nb := len(pl.bs)
	clear(cb.tried)
	for pass := range 2 {
		limit := 48
		if pass == 1 {
			limit = 0
			clear(cb.tried)
		}
		for {
			u := cb.sources.pick(dv, func(b int) bool {
				return !cb.tried[b] && !cb.dead[v*nb+b] && (pass > 0 || !cb.failed[v*nb+b])
			})
			if u < 0 {
				break
			}
			cb.tried[u] = true
			want := dv
			if !pl.bs[u].removed {
				want = max(0, (cb.sources.shed[u]+dv)/2)
			}
			c, k := cb.closest(u, v, want, limit)
			if c < 0 {
				if pass == 0 {
					cb.failed[v*nb+u] = true
				} else {
					cb.dead[v*nb+u] = true
				}
				continue
			}
			i := cb.lists[u].part(c)
			cb.lists[u].remove(c)
			pl.move(i, k, v)
			cb.update(u)
			return true
		}
	}
	return false
}

// closest finds, in source u's list, the partition whose size is nearest
// want that can move its replica on u to v and stay spread, looking at
// limit entries at most (0: all). It returns the entry, or -1, and the
// replica's position in the partition's list.
func (cb *countBalance) closest(u, v int, want int64, limit int) (c, k int) {
	pl, list := cb.pl, cb.lists[u]
	fits := func(i int) bool {
		k = slices.Index(pl.cur[i], u)
		return k >= 0 && !slices.Contains(pl.cur[i], v) && pl.fits(v, pl.ps[i].size) &&
			pl.topo.replaceKeepsSpread(pl.cur[i], k, v, pl.ps[i].rf())
	}
	c = list.closest(want, limit, fits)
	if c >= 0 && pl.changed(list.part(c)) {
		// A partition that already gains a replica gains a
		// second only once the first is copied (one replica
		// in flight per partition): a chain the copy waits on.
		// An unchanged partition of about the same size does
		// as well for the balance.
		miss := func(i int) int64 { return abs64(pl.ps[i].size - want) }
		best := list.part(c)
		near := miss(best) + pl.ps[best].size/100
		if alt := list.closest(want, 16, func(i int) bool {
			return !pl.changed(i) && miss(i) <= near && fits(i)
		}); alt >= 0 {
			c = alt
		}
		k = slices.Index(pl.cur[list.part(c)], u)
	}
	return c, k
}
