package engine

import (
	"slices"
)

// balanceCounts moves replicas from brokers above their target (and from
// removed brokers, whose target is zero) to brokers below it, one move per
// missing replica, which is the fewest moves that balance. Each move keeps
// its partition spread. The partition moved is the one whose size best fits
// what both brokers still need in bytes, so bytes balance without extra moves.
func (pl *planner) balanceCounts() {
	nb := len(pl.bs)
	surplus := func(b int) int {
		bi := &pl.bs[b]
		switch {
		case bi.removed:
			return pl.count[b]
		case bi.receiving:
			return pl.count[b] - pl.tg.replicas[b]
		}
		return 0
	}
	// The sizes in one dense array: the sort and the searches below read
	// them in no particular order, and reading them from the partitions'
	// facts, 64 bytes apart, missed the cache nearly every time.
	sizes := make([]int64, len(pl.ps))
	for i, p := range pl.ps {
		sizes[i] = p.size
	}
	size := func(i int) int64 { return sizes[i] }
	lists := newSrcLists(pl.cur, nb, size, func(b int) bool { return surplus(b) > 0 })
	perSlot := func(need int64, n int) int64 {
		if n <= 0 {
			return 0
		}
		return need / int64(n)
	}
	// A source's figures change only when it gives up a replica.
	sources := newSourceSet(nb)
	update := func(b int) {
		sur := surplus(b)
		sources.set(b, pl.bs[b].removed, sur, perSlot(pl.bytes[b]-pl.byteTarget[b], sur))
	}
	var dests []int
	for b := range nb {
		if lists[b] != nil {
			update(b)
		}
		if pl.bs[b].receiving && pl.count[b] < pl.tg.replicas[b] {
			dests = append(dests, b)
		}
	}
	stuck := make([]bool, nb)
	tried := make([]bool, nb)
	// failed[v*nb+u] records that a short search from u found nothing for v;
	// such pairs are tried last. dead pairs had a full search fail: v only
	// gains replicas and u only loses them, so they stay incompatible.
	failed := make([]bool, nb*nb)
	dead := make([]bool, nb*nb)
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
		clear(tried)
		moved := false
		for pass := 0; pass < 2 && !moved; pass++ {
			limit := 48
			if pass == 1 {
				limit = 0
				clear(tried)
			}
			for !moved {
				u := sources.pick(dv, func(b int) bool {
					return !tried[b] && !dead[v*nb+b] && (pass > 0 || !failed[v*nb+b])
				})
				if u < 0 {
					break
				}
				tried[u] = true
				want := dv
				if !pl.bs[u].removed {
					want = max(0, (sources.shed[u]+dv)/2)
				}
				var k int
				fits := func(i int) bool {
					k = slices.Index(pl.cur[i], u)
					return k >= 0 && !slices.Contains(pl.cur[i], v) && pl.fits(v, pl.ps[i].size) &&
						pl.topo.replaceKeepsSpread(pl.cur[i], k, v, pl.ps[i].rf)
				}
				c := lists[u].closest(want, limit, fits)
				if c >= 0 && pl.changed(lists[u].part(c)) {
					// A partition that already gains a replica gains a
					// second only once the first is copied (one replica
					// in flight per partition): a chain the copy waits on.
					// An unchanged partition of about the same size does
					// as well for the balance.
					miss := func(i int) int64 { return abs64(pl.ps[i].size - want) }
					best := lists[u].part(c)
					near := miss(best) + pl.ps[best].size/100
					if alt := lists[u].closest(want, 16, func(i int) bool {
						return !pl.changed(i) && miss(i) <= near && fits(i)
					}); alt >= 0 {
						c = alt
					}
					k = slices.Index(pl.cur[lists[u].part(c)], u)
				}
				if c < 0 {
					if pass == 0 {
						failed[v*nb+u] = true
					} else {
						dead[v*nb+u] = true
					}
					continue
				}
				i := lists[u].part(c)
				lists[u].remove(c)
				pl.move(i, k, v)
				update(u)
				moved = true
			}
		}
		if !moved {
			stuck[v] = true
		}
	}
}
