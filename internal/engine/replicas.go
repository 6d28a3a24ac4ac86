package engine

import (
	"fmt"
	"slices"
)

// replaceInPlace carries out a replacement with the fewest moves: when as
// many brokers are added as removed, each added one in the rack of a removed
// one, and no replication factor changes, every replica of a removed broker
// moves onto its successor, in its place in the replica list, and nothing
// else moves. It does so only when every partition stays spread as well as
// before and every successor keeps its disk limit; otherwise it changes
// nothing and reports false, and the general planner runs.
func (pl *planner) replaceInPlace() bool {
	var removed, added []int
	for b, bi := range pl.bs {
		switch {
		case bi.removed:
			removed = append(removed, b)
		case bi.added:
			added = append(added, b)
		}
	}
	if len(removed) == 0 || len(removed) != len(added) || pl.rebalance {
		return false
	}
	for _, p := range pl.ps {
		if p.rf() != int(p.n) {
			return false
		}
	}
	successor := map[int]int{}
	taken := map[int]bool{}
	for _, r := range removed {
		for _, a := range added {
			if !taken[a] && pl.bs[a].Rack == pl.bs[r].Rack {
				successor[r], taken[a] = a, true
				break
			}
		}
		if _, ok := successor[r]; !ok {
			return false
		}
	}
	incoming := map[int]int64{}
	for i, p := range pl.ps {
		trial := slices.Clone(pl.cur[i])
		for k, b := range trial {
			if a, ok := successor[b]; ok {
				trial[k] = a
				incoming[a] += p.size
			}
		}
		if pl.topo.deficit(trial, p.rf()) > pl.topo.deficit(pl.cur[i], p.rf()) {
			return false
		}
	}
	for a, in := range incoming {
		if !pl.fits(a, in) {
			return false
		}
	}
	for i := range pl.ps {
		for k, b := range pl.cur[i] {
			if a, ok := successor[b]; ok {
				pl.move(i, k, a)
			}
		}
	}
	return true
}

// dropReplicas lowers replication factors. It drops, in order of preference,
// replicas on removed brokers, then on offline ones, then the replica whose
// loss keeps the partition best spread, on the fullest broker.
func (pl *planner) dropReplicas() {
	for i, p := range pl.ps {
		for len(pl.cur[i]) > p.rf() {
			set := pl.cur[i]
			best := -1
			var bestKey [4]int64
			for k, b := range set {
				bi := pl.bs[b]
				spread := int64(0)
				for d := range pl.topo.dims {
					spread = spread*64 + int64(pl.topo.distinct(set, d, k, -1))
				}
				key := [4]int64{boolInt(bi.removed), boolInt(bi.frozen), spread, int64(pl.count[b])}
				if best < 0 || compareKeys(key[:], bestKey[:]) > 0 {
					best, bestKey = k, key
				}
			}
			b := set[best]
			pl.count[b]--
			pl.bytes[b] -= p.size
			pl.setList(i, slices.Delete(slices.Clone(set), best, best+1))
		}
	}
}

// fits reports whether broker b can take size more bytes and stay under its
// disk limit once the plan is done.
func (pl *planner) fits(b int, size int64) bool {
	bi := &pl.bs[b]
	return !bi.hasLimit || bi.other+pl.bytes[b]+size <= bi.limit
}

// pickDestination chooses a receiving broker to hold a new replica of
// partition i next to the brokers of set: the best spread first (KIP-708's
// order), then the broker furthest below its replica target, then below its
// byte target, then the lowest id. Brokers the replica would push over their
// disk limit are left out; when that leaves only brokers that spread the
// partition worse than a full one would, there is no room, and it returns -1.
func (pl *planner) pickDestination(i int, set []int) int {
	size := pl.ps[i].size
	best, bestSpread := -1, -1
	var bestKey [3]int64
	for b := range pl.bs {
		if !pl.bs[b].receiving || slices.Contains(set, b) {
			continue
		}
		spread := pl.topo.newValues(set, b)
		bestSpread = max(bestSpread, spread)
		if !pl.fits(b, size) {
			continue
		}
		key := [3]int64{int64(spread), int64(pl.tg.replicas[b] - pl.count[b]), pl.byteTarget[b] - pl.bytes[b]}
		if best < 0 || compareKeys(key[:], bestKey[:]) > 0 {
			best, bestKey = b, key
		}
	}
	if best >= 0 && int(bestKey[0]) < bestSpread {
		return -1
	}
	return best
}

// noRoom explains why no broker could take a replica of partition i next to
// set: the brokers that would spread it best lack the room.
func (pl *planner) noRoom(i int, set []int, what string) error {
	p := pl.ps[i]
	bestSpread := -1
	for b, bi := range pl.bs {
		if bi.receiving && !slices.Contains(set, b) {
			bestSpread = max(bestSpread, pl.topo.newValues(set, b))
		}
	}
	var most int64
	broker := int32(-1)
	for b, bi := range pl.bs {
		if bi.receiving && bi.hasLimit && !slices.Contains(set, b) && pl.topo.newValues(set, b) == bestSpread {
			if free := bi.limit - bi.other - pl.bytes[b]; broker < 0 || free > most {
				most, broker = free, bi.ID
			}
		}
	}
	detail := fmt.Sprintf("no broker that keeps it spread has room to %s it", what)
	if broker >= 0 {
		detail += fmt.Sprintf(" (the most room, on broker %d, is %d bytes under its limit)", broker, max(0, most))
	}
	return &InfeasibleError{Constraint: ConstraintDiskCapacity, Subject: fmt.Sprintf("%s p%d", pl.topic(i), p.part),
		Need: p.size, Limit: max(0, most), Unit: "bytes", Detail: detail}
}

// addReplicas raises replication factors.
func (pl *planner) addReplicas() error {
	for i, p := range pl.ps {
		for len(pl.cur[i]) < p.rf() {
			b := pl.pickDestination(i, pl.cur[i])
			if b < 0 {
				return pl.noRoom(i, pl.cur[i], "add a replica of")
			}
			pl.setList(i, append(slices.Clone(pl.cur[i]), b))
			pl.count[b]++
			pl.bytes[b] += p.size
		}
	}
	return nil
}

// drainRemoved moves what is left on removed brokers once no broker is below
// its target: to the best-spread broker with the fewest replicas over target.
func (pl *planner) drainRemoved() error {
	// With no replica left on a removed broker there is nothing to
	// drain, and the pass over every partition's list, many of them
	// changed and anywhere in memory by now, is not free at millions of
	// partitions.
	left := false
	for b := range pl.bs {
		left = left || (pl.bs[b].removed && pl.count[b] > 0)
	}
	if !left {
		return nil
	}
	for i := range pl.ps {
		for k := 0; k < len(pl.cur[i]); k++ {
			if !pl.bs[pl.cur[i][k]].removed {
				continue
			}
			others := slices.Delete(slices.Clone(pl.cur[i]), k, k+1)
			b := pl.pickDestination(i, others)
			if b < 0 {
				return pl.noRoom(i, others, "move")
			}
			pl.move(i, k, b)
		}
	}
	return nil
}
