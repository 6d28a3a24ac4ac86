package engine

import (
	"cmp"
	"fmt"
	"math/big"
	"slices"
)

// PlanReassignment plans the change: the target assignment, the moves that
// reach it in groups of steps, and the projections. The input is not
// modified; the same input, in any order, gives the same plan.
//
// Bad input returns an *InputError with every problem; a change that cannot
// be carried out returns an *InfeasibleError naming the constraint, the
// broker or topic, and by how much it fails. Both come back before anything
// runs: the schedule's disk safety is simulated here, group by group.
func PlanReassignment(c Cluster, ch Change, o Options) (*Plan, error) {
	m, err := buildModel(c, ch, o)
	if err != nil {
		return nil, err
	}
	pl := newPlanner(m, len(ch.AddBrokers) == 0 && len(ch.RemoveBrokers) == 0 && len(ch.ReplicationFactor) == 0)
	if err := pl.run(); err != nil {
		return nil, err
	}
	return pl.plan()
}

// planner holds the working assignment while the target is built.
type planner struct {
	*model
	rebalance bool // the empty change: moves may be spent on bytes
	// cur[i] starts as partition i's original list, shared with the
	// model: most partitions never move, and a copy of every list would
	// cost one per partition. own makes it the planner's before a change.
	cur   [][]int
	owned slab[int]
	count []int
	bytes []int64 // partition bytes per broker
	tg    targets
	// byteTarget is each receiving broker's share of the bytes.
	byteTarget []int64
}

func newPlanner(m *model, rebalance bool) *planner {
	pl := &planner{model: m, rebalance: rebalance}
	pl.cur = make([][]int, len(m.ps))
	pl.count = make([]int, len(m.bs))
	pl.bytes = make([]int64, len(m.bs))
	for i, p := range m.ps {
		pl.cur[i] = p.orig
		for _, b := range p.orig {
			pl.count[b]++
			pl.bytes[b] += p.size
		}
	}
	for b := range m.bs {
		// Disk use that no replica explains stays where it is.
		m.bs[b].other = max(0, m.bs[b].UsedBytes-pl.bytes[b])
	}
	return pl
}

func (pl *planner) run() error {
	if err := pl.checkFeasible(); err != nil {
		return err
	}
	pl.dropReplicas()
	if err := pl.computeTargets(); err != nil {
		return err
	}
	if pl.replaceInPlace() {
		return pl.checkFinalDisk()
	}
	if err := pl.addReplicas(); err != nil {
		return err
	}
	if err := pl.fixSpread(); err != nil {
		return err
	}
	pl.balanceCounts()
	pl.repairChains(chainBudget)
	if err := pl.drainRemoved(); err != nil {
		return err
	}
	if pl.rebalance {
		pl.balanceBytes()
	}
	return pl.checkFinalDisk()
}

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
		if p.rf != len(p.orig) {
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
		if pl.topo.deficit(trial, p.rf) > pl.topo.deficit(pl.cur[i], p.rf) {
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

// chainBudget bounds the spread checks that chain repairs may spend, a few
// seconds at most, so that a huge cluster that cannot be balanced still plans.
const chainBudget = 5_000_000

// checkFeasible refuses changes no plan can carry out, before any planning.
func (pl *planner) checkFeasible() error {
	nRecv := 0
	var removed []int32
	for _, b := range pl.bs {
		if b.receiving {
			nRecv++
		}
		if b.removed {
			removed = append(removed, b.ID)
		}
	}
	// The topic with the largest replication factor that does not fit.
	worst := -1
	for i, p := range pl.ps {
		frozen := 0
		for _, b := range p.orig {
			if pl.bs[b].frozen {
				frozen++
			}
		}
		if p.rf > nRecv+frozen && (worst < 0 || p.rf > pl.ps[worst].rf) {
			worst = i
		}
	}
	if worst >= 0 {
		p := pl.ps[worst]
		detail := fmt.Sprintf("%d brokers can receive replicas", nRecv)
		if len(removed) > 0 {
			detail = fmt.Sprintf("after removing brokers %s, %s", idList(removed), detail)
		}
		return &InfeasibleError{Constraint: ConstraintBrokerCount, Subject: fmt.Sprintf("topic %s", p.topic),
			Need: int64(p.rf), Limit: int64(nRecv), Unit: "brokers",
			Detail: detail + fmt.Sprintf("; replication factor %d needs as many", p.rf)}
	}
	for _, p := range pl.ps {
		// Copies come from a live replica; dropping replicas needs none.
		online, copying := false, p.rf > len(p.orig)
		for _, b := range p.orig {
			online = online || pl.bs[b].Alive
			copying = copying || pl.bs[b].removed
		}
		if copying && !online {
			return &InfeasibleError{Constraint: ConstraintOnlineReplica,
				Subject: fmt.Sprintf("%s p%d", p.topic, p.part), Need: 1, Limit: 0, Unit: "online replicas",
				Detail: fmt.Sprintf("every replica %v is on an offline broker, so none can copy its data", pl.brokerIDs(p.orig))}
		}
	}
	// Capacity in total, when every receiving broker's capacity is known.
	var need, room int64
	for i, p := range pl.ps {
		for _, b := range pl.cur[i] {
			if !pl.bs[b].frozen {
				need += p.size
			}
		}
		need += p.size * int64(max(0, p.rf-len(p.orig)))
	}
	known := true
	for _, b := range pl.bs {
		if !b.receiving {
			continue
		}
		if !b.hasLimit {
			known = false
			break
		}
		room += max(0, b.limit-b.other)
	}
	if known && need > room {
		return &InfeasibleError{Constraint: ConstraintDiskCapacity, Subject: "the remaining brokers",
			Need: need, Limit: room, Unit: "bytes",
			Detail: fmt.Sprintf("%d brokers can hold %d bytes of replicas with min_free_disk_percent %g", nRecv, room, pl.o.MinFreeDiskPercent)}
	}
	return nil
}

// dropReplicas lowers replication factors. It drops, in order of preference,
// replicas on removed brokers, then on offline ones, then the replica whose
// loss keeps the partition best spread, on the fullest broker.
func (pl *planner) dropReplicas() {
	for i, p := range pl.ps {
		for len(pl.cur[i]) > p.rf {
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
			pl.cur[i] = slices.Delete(slices.Clone(set), best, best+1)
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func compareKeys(a, b []int64) int {
	for i := range a {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// computeTargets sets the balance targets for the replicas that must live on
// receiving brokers: all but those kept on offline brokers.
func (pl *planner) computeTargets() error {
	// Counted in a slice, then handed over as a map: an update per
	// partition of a map showed at millions of partitions. A factor is at
	// most the broker count.
	perRF := make([]int64, len(pl.bs)+1)
	var treeBytes int64
	for i, p := range pl.ps {
		f := p.rf
		for _, b := range pl.cur[i] {
			if pl.bs[b].frozen {
				f--
			}
		}
		if f > 0 {
			perRF[f]++
			treeBytes += int64(f) * p.size
		}
	}
	classes := rfClasses{}
	for f, n := range perRF {
		if n > 0 {
			classes[f] = n
		}
	}
	receiving := make([]bool, len(pl.bs))
	for b, bi := range pl.bs {
		receiving[b] = bi.receiving
	}
	tg, err := computeTargets(&pl.topo, receiving, classes, pl.count)
	if err != nil {
		return err
	}
	pl.tg = tg
	pl.byteTarget = make([]int64, len(pl.bs))
	if tg.total > 0 {
		for b := range pl.bs {
			if receiving[b] {
				v := new(big.Rat).Mul(tg.share[b], new(big.Rat).SetInt64(treeBytes))
				v.Quo(v, new(big.Rat).SetInt64(tg.total))
				pl.byteTarget[b] = ratFloor(v)
			}
		}
	}
	for b, bi := range pl.bs {
		if bi.frozen {
			// Offline brokers keep what they hold.
			pl.tg.replicas[b] = pl.count[b]
			pl.tg.rng[b] = Range{Min: pl.count[b], Max: pl.count[b]}
			pl.byteTarget[b] = pl.bytes[b]
		}
	}
	return nil
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
	return &InfeasibleError{Constraint: ConstraintDiskCapacity, Subject: fmt.Sprintf("%s p%d", p.topic, p.part),
		Need: p.size, Limit: max(0, most), Unit: "bytes", Detail: detail}
}

// own gives partition i a list of the planner's own, to change in place,
// while it still shares the original list.
func (pl *planner) own(i int) {
	if set, orig := pl.cur[i], pl.ps[i].orig; len(set) > 0 && len(orig) > 0 && &set[0] == &orig[0] {
		pl.cur[i] = pl.owned.clone(set)
	}
}

// changed reports whether partition i's list is no longer the original.
func (pl *planner) changed(i int) bool {
	set, orig := pl.cur[i], pl.ps[i].orig
	return len(set) == 0 || len(orig) == 0 || &set[0] != &orig[0]
}

// move replaces the replica at position k of partition i by broker b.
func (pl *planner) move(i, k, b int) {
	p := pl.ps[i]
	from := pl.cur[i][k]
	pl.count[from]--
	pl.bytes[from] -= p.size
	pl.count[b]++
	pl.bytes[b] += p.size
	pl.own(i)
	pl.cur[i][k] = b
}

// addReplicas raises replication factors.
func (pl *planner) addReplicas() error {
	for i, p := range pl.ps {
		for len(pl.cur[i]) < p.rf {
			b := pl.pickDestination(i, pl.cur[i])
			if b < 0 {
				return pl.noRoom(i, pl.cur[i], "add a replica of")
			}
			pl.cur[i] = append(slices.Clone(pl.cur[i]), b)
			pl.count[b]++
			pl.bytes[b] += p.size
		}
	}
	return nil
}

// fixSpread moves replicas of partitions that are not spread as the racks
// allow. Replicas on removed brokers go first, since they move anyway; then
// replicas that share a value with another, on the fullest broker.
func (pl *planner) fixSpread() error {
	t := &pl.topo
	var fixes []spreadFix
	defer func() { pl.rechooseFixes(fixes) }()
	for i, p := range pl.ps {
		for t.deficit(pl.cur[i], p.rf) > 0 {
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
				pl.warnf("%s p%d: replicas %v are on offline brokers and cannot be spread over racks", p.topic, p.part, pl.brokerIDs(set))
				break
			}
			others := slices.Delete(slices.Clone(set), worst, worst+1)
			b := pl.pickDestination(i, others)
			if b < 0 {
				return pl.noRoom(i, others, "spread")
			}
			before := t.deficit(set, p.rf)
			trial := slices.Clone(set)
			trial[worst] = b
			if t.deficit(trial, p.rf) >= before {
				d := 0
				for ; d < t.dims && t.distinct(set, d, -1, -1) >= t.need(d, p.rf); d++ {
				}
				return &InfeasibleError{Constraint: ConstraintRackSpread, Subject: fmt.Sprintf("%s p%d", p.topic, p.part),
					Need: int64(t.need(d, p.rf)), Limit: int64(t.distinct(set, d, -1, -1)), Unit: t.names[min(d, t.dims-1)] + "s",
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
		if pl.topo.deficit(trial, pl.ps[fx.part].rf) > 0 {
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

// drainRemoved moves what is left on removed brokers once no broker is below
// its target: to the best-spread broker with the fewest replicas over target.
func (pl *planner) drainRemoved() error {
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

// checkFinalDisk refuses a target that leaves a broker over its disk limit.
func (pl *planner) checkFinalDisk() error {
	for b, bi := range pl.bs {
		if !bi.hasLimit || bi.removed {
			continue
		}
		use := bi.other + pl.bytes[b]
		if use > bi.limit && pl.bytes[b] > 0 {
			grew := false
			for i := range pl.ps {
				if slices.Contains(pl.cur[i], b) && !slices.Contains(pl.ps[i].orig, b) {
					grew = true
					break
				}
			}
			if grew {
				return &InfeasibleError{Constraint: ConstraintDiskCapacity, Subject: fmt.Sprintf("broker %d", bi.ID),
					Need: use, Limit: bi.limit, Unit: "bytes",
					Detail: fmt.Sprintf("the target leaves it over capacity %d less min_free_disk_percent %g", bi.CapacityBytes, pl.o.MinFreeDiskPercent)}
			}
			pl.warnf("broker %d will still hold %d bytes, over its limit of %d bytes: the planner does not move replicas for disk space alone", bi.ID, use, bi.limit)
		}
	}
	return nil
}
