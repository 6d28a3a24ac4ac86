package engine

import (
	"fmt"
	"slices"
)

// fixSpread moves replicas of partitions that are not spread as the racks
// allow. Replicas on removed brokers go first, since they move anyway; then
// replicas that share a value with another, on the fullest broker.
func (pl *planner) fixSpread() error {
	t := &pl.topo
	var fixes []spreadFix
	defer func() { pl.rechooseFixes(fixes) }()
	for i, p := range pl.ps {
		for t.deficit(pl.cur[i], p.rf()) > 0 {
			set := pl.cur[i]
			// The replica to replace.
			worst := -1
			var worstKey [5]int64
			for k, b := range set {
				if pl.bs[b].frozen {
					continue
				}
				gain := int64(0)
				for d := range t.dims {
					gain = gain*64 + int64(t.distinct(set, d, -1, -1)-t.distinct(set, d, k, -1))
				}
				// Prefer a replica whose loss costs no distinct value, on a
				// broker above its target, whose bytes above its share per
				// replica to give up are nearest this partition's size.
				surplus := pl.count[b] - pl.tg.replicas[b]
				fit := int64(0)
				if surplus > 0 {
					fit = -abs64((pl.bytes[b]-pl.byteTarget[b])/int64(surplus) - p.size)
				}
				key := [5]int64{boolInt(pl.bs[b].removed), -gain, boolInt(surplus > 0), fit, int64(surplus)}
				if worst < 0 || compareKeys(key[:], worstKey[:]) > 0 {
					worst, worstKey = k, key
				}
			}
			if worst < 0 {
				pl.warnf("%s p%d: replicas %v are on offline brokers and cannot be spread over racks", pl.topic(i), p.part, pl.brokerIDs(set))
				break
			}
			others := slices.Delete(slices.Clone(set), worst, worst+1)
			b := pl.pickDestination(i, others)
			if b < 0 {
				return pl.noRoom(i, others, "spread")
			}
			before := t.deficit(set, p.rf())
			trial := slices.Clone(set)
			trial[worst] = b
			if t.deficit(trial, p.rf()) >= before {
				d := 0
				for ; d < t.dims && t.distinct(set, d, -1, -1) >= t.need(d, p.rf()); d++ {
				}
				return &InfeasibleError{Constraint: ConstraintRackSpread, Subject: fmt.Sprintf("%s p%d", pl.topic(i), p.part),
					Need: int64(t.need(d, p.rf())), Limit: int64(t.distinct(set, d, -1, -1)), Unit: t.names[min(d, t.dims-1)] + "s",
					Detail: fmt.Sprintf("replicas %v cannot be spread further", pl.brokerIDs(set))}
			}
			fixes = append(fixes, spreadFix{i, set[worst], b})
			pl.move(i, worst, b)
		}
	}
	return nil
}

// spreadFix records that a replica of part moved from one broker to another
// to spread the partition.
type spreadFix struct{ part, from, to int }

// rechooseFixes revisits the replicas that fixSpread replaced. Each was
// chosen one partition at a time, so a broker can end below its target while
// another that could have given up a replica instead stays above it; the
// count balance would then spend an extra move. A broker below target takes
// back a replica it gave up, and the partition gives up another replica
// instead, along a chain of such exchanges that ends at a broker above its
// target. The moves stay as many, and every partition stays spread.
func (pl *planner) rechooseFixes(fixes []spreadFix) {
	nb := len(pl.bs)
	byFrom := make([][]int, nb)
	for f, fx := range fixes {
		byFrom[fx.from] = append(byFrom[fx.from], f)
	}
	// alternative is the position of w in the partition of fix f such that
	// giving up w instead of the fix's broker keeps the partition spread.
	alternative := func(f, w int) int {
		fx := fixes[f]
		set := pl.cur[fx.part]
		if fx.from == w || slices.Contains(set, fx.from) {
			return -1
		}
		k := slices.Index(set, w)
		if k < 0 || w == fx.to {
			return -1
		}
		trial := slices.Clone(set)
		trial[k] = fx.from
		if pl.topo.deficit(trial, pl.ps[fx.part].rf()) > 0 {
			return -1
		}
		return k
	}
	type hop struct{ from, fix int }
	prev := make([]hop, nb)
	seen := make([]bool, nb)
	under := func(b int) bool { return pl.bs[b].receiving && pl.count[b] < pl.tg.replicas[b] }
	over := func(b int) bool { return pl.bs[b].receiving && pl.count[b] > pl.tg.replicas[b] }
	for s := range nb {
		for under(s) {
			clear(seen)
			seen[s] = true
			queue := []int{s}
			end := -1
			for len(queue) > 0 && end < 0 {
				u := queue[0]
				queue = queue[1:]
				for _, f := range byFrom[u] {
					if fixes[f].from != u {
						continue
					}
					for _, w := range pl.cur[fixes[f].part] {
						if seen[w] || !pl.bs[w].receiving || alternative(f, w) < 0 {
							continue
						}
						seen[w] = true
						prev[w] = hop{u, f}
						if over(w) {
							end = w
							break
						}
						queue = append(queue, w)
					}
					if end >= 0 {
						break
					}
				}
			}
			if end < 0 {
				break
			}
			// Apply from the end: w gives up its replica, and the broker
			// before it on the chain takes its own back.
			ok := true
			for w := end; w != s; {
				h := prev[w]
				k := alternative(h.fix, w)
				if k < 0 {
					ok = false
					break
				}
				pl.move(fixes[h.fix].part, k, h.from)
				fixes[h.fix].from = w
				byFrom[w] = append(byFrom[w], h.fix)
				w = h.from
			}
			if !ok {
				return
			}
		}
	}
}
