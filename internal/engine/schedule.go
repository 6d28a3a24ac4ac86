package engine

import (
	"cmp"
	"fmt"
	"slices"
)

// sMove is a move while it is being scheduled.
type sMove struct {
	// Indices are int32, and kept together: a plan at millions of
	// replicas has ~10^5 moves.
	part int32
	seq  int32 // its place among the partition's moves
	// slot numbers the partition among those that move, for the schedule's
	// counters: a few partitions of a cluster of millions.
	slot   int32
	leader int32 // the broker that sends the data: the old list's first online replica
	// old and new are the replica lists as broker ids, rendered as the
	// moves are made, in partition order: only the plan's moves read
	// them, and rendered group by group they were read from anywhere in
	// memory.
	old    []int32
	new    []int32
	adding []int
	remove []int
	bytes  int64
	// size is the partition's: the schedule reads it for every move it
	// tries, and the partitions' facts are far apart in memory. A removed
	// replica frees size; an added one takes copied, less for a tiered
	// topic (Partition.CopyBytes).
	size   int64
	copied int64
	taken  bool
}

// partitionMoves splits one partition's change from orig to final into moves
// of at most perMove replicas each. Dropped replicas go first (they free
// space and copy nothing), then replacements, paired so that every
// intermediate replica set stays as well spread as it can, then additions.
// The last move's list is final, with its preferred leader first. The moves
// are appended to dst; their short lists come from lists, their lists of
// ids from ids.
func partitionMoves(dst []sMove, lists *slab[int], ids *idLists, m *model, i int, final []int, perMove int) []sMove {
	p := m.ps[i]
	orig, copied := m.orig(i), m.copyBytes(&p)
	removing := missing(lists, orig, final)
	adding := missing(lists, final, orig)
	if len(removing) == 0 && len(adding) == 0 {
		return dst
	}
	if len(removing) <= perMove && len(adding) <= perMove {
		// The common case: one move does it.
		return append(dst, sMove{part: int32(i), old: ids.of(orig), new: ids.of(final), adding: adding, remove: removing,
			leader: int32(firstAlive(m, orig)), bytes: copied * int64(len(adding)), size: p.size, copied: copied})
	}
	t := &m.topo
	type change struct{ from, to int } // -1 for none
	// cur is the list as the changes so far leave it; trial is scratch for
	// the candidates. Replica lists are a handful long, so these start on
	// the stack: a scale-out splits the change of many partitions.
	var curBuf, trialBuf [8]int
	var changeBuf [8]change
	changes := changeBuf[:0]
	cur := append(curBuf[:0], orig...)
	trial := trialBuf[:0]
	// A replica on a removed broker goes first, one on a dead removed
	// broker before any, then the one whose change keeps the best spread.
	// Kafka refuses a reassignment whose target lists a cordoned broker
	// (KIP-1066), even one that already holds the replica, and a leaving
	// broker is cordoned for the whole drain: an intermediate list that
	// kept it would be refused (or, for a cluster operation, need its
	// cordon lifted) although the change can do without it (soak seed 10:
	// a replication factor decrease around a drain submitted [1 2] on its
	// way from [3 1 2] to [5 1], 2 leaving). And a target that keeps a
	// dead replica never completes: it cannot join the ISR.
	removedLast := func(r int) int {
		switch b := m.bs[r]; {
		case b.removed && !b.Alive:
			return 0
		case b.removed:
			return 1
		}
		return 2
	}
	for len(removing) > len(adding) {
		// Drop the replica whose loss keeps the best spread.
		best, bestKey := 0, [2]int{-1, -1}
		for k, r := range removing {
			trial = slices.DeleteFunc(append(trial[:0], cur...), func(b int) bool { return b == r })
			key := [2]int{removedLast(r), t.deficit(trial, len(trial))}
			if bestKey[0] < 0 || key[0] < bestKey[0] || key[0] == bestKey[0] && key[1] < bestKey[1] {
				best, bestKey = k, key
			}
		}
		r := removing[best]
		changes = append(changes, change{r, -1})
		cur = slices.DeleteFunc(cur, func(b int) bool { return b == r })
		removing = slices.Delete(removing, best, best+1)
	}
	for len(removing) > 0 {
		bestR, bestA, bestKey := 0, 0, [2]int{-1, -1}
		for kr, r := range removing {
			at := slices.Index(cur, r)
			for ka, a := range adding[:len(removing)] {
				trial = append(trial[:0], cur...)
				trial[at] = a
				key := [2]int{removedLast(r), t.deficit(trial, p.rf())}
				if bestKey[0] < 0 || key[0] < bestKey[0] || key[0] == bestKey[0] && key[1] < bestKey[1] {
					bestR, bestA, bestKey = kr, ka, key
				}
			}
		}
		r, a := removing[bestR], adding[bestA]
		changes = append(changes, change{r, a})
		cur[slices.Index(cur, r)] = a
		removing = slices.Delete(removing, bestR, bestR+1)
		adding = slices.Delete(adding, bestA, bestA+1)
	}
	for _, a := range adding {
		changes = append(changes, change{-1, a})
	}

	out := dst
	list := orig
	for start := 0; start < len(changes); start += perMove {
		chunk := changes[start:min(start+perMove, len(changes))]
		mv := sMove{part: int32(i), seq: int32(len(out) - len(dst)), old: ids.of(list)}
		step := append(trial[:0], list...)
		for _, c := range chunk {
			switch {
			case c.from >= 0 && c.to >= 0:
				step[slices.Index(step, c.from)] = c.to
			case c.from >= 0:
				step = slices.DeleteFunc(step, func(b int) bool { return b == c.from })
			default:
				step = append(step, c.to)
			}
		}
		next := final
		if start+perMove < len(changes) {
			next = lists.clone(step)
		}
		// Adding and removing follow the lists' order, as Kafka reports them.
		mv.adding = missing(lists, next, list)
		mv.remove = missing(lists, list, next)
		mv.new = ids.of(next)
		mv.bytes = copied * int64(len(mv.adding))
		mv.size, mv.copied = p.size, copied
		mv.leader = int32(firstAlive(m, list))
		out = append(out, mv)
		list = next
	}
	return out
}

// moveCount is how many moves partitionMoves makes of the change from orig
// to final: one per perMove replaced, added or dropped replicas.
func moveCount(orig, final []int, perMove int) int {
	changes := max(countMissing(orig, final), countMissing(final, orig))
	return (changes + perMove - 1) / perMove
}

// countMissing is how many elements of a b lacks.
func countMissing(a, b []int) int {
	n := 0
	for _, x := range a {
		if !slices.Contains(b, x) {
			n++
		}
	}
	return n
}

// missing returns, from lists, the elements of a that b lacks, in a's order.
func missing(lists *slab[int], a, b []int) []int {
	out := lists.take(countMissing(a, b))[:0]
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// firstAlive is the broker that sends a move's data: the first online
// replica of the old list, the likely leader. -1 if none is online.
func firstAlive(m *model, list []int) int {
	for _, b := range list {
		if m.bs[b].Alive {
			return b
		}
	}
	return -1
}

// scheduleResult is the schedule with its disk simulation.
type scheduleResult struct {
	groups [][]*sMove
	peak   [][]BrokerBytes
	busy   []int64
	// peakDisk is each broker's highest use at any group.
	peakDisk []int64
}

// schedule forms groups: every move of a group is in flight at once, so each
// receiving broker must hold, under its limit, what it had when the group
// began plus every copy arriving in the group; the removed copies free their
// space only when the group ends. At most maxPerBroker moves touch a broker
// in a group, and a partition moves at most once per group, its moves in
// order. Within those limits a group takes as much as it can, the largest
// moves first, so that groups copy similar amounts and finish together.
// moves holds each partition's moves next to each other, in their order.
func schedule(m *model, moves []sMove, disk []int64) (scheduleResult, error) {
	res := scheduleResult{peakDisk: slices.Clone(disk)}
	gr := newGrouper(m, moves, disk)
	for total := len(moves); gr.scheduled < total; gr.g++ {
		gr.fill()
		if len(gr.group) == 0 {
			return res, blockedError(m, gr.queues, gr.nextSeq, gr.usage, gr.g)
		}
		gr.record(&res)
	}
	return res, nil
}

// grouper is schedule's state: the queues of moves not yet taken, where
// each moving partition stands, the disk use as of the current group's
// start, and what the current group, g, takes from each broker.
type grouper struct {
	m      *model
	maxPer int
	usage  []int64
	// queues holds the moves by the broker they copy to, largest first;
	// drops the drop-only moves.
	queues [][]*sMove
	drops  []*sMove
	// Per moving partition (sMove.slot): the sequence of its next move,
	// and the last group that took one of its moves.
	nextSeq   []int32
	lastGroup []int32
	scheduled int // the moves taken
	g         int
	group     []*sMove
	// taken holds every group's moves, one after another: each move is
	// taken once, so one allocation holds them all, and group is the
	// part after the moves scheduled before it.
	taken []*sMove
	// Per broker, in group g.
	touches   []int
	inflight  []int64
	outflight []int64
	freed     []int64
	touched   []bool
}

func newGrouper(m *model, moves []sMove, disk []int64) *grouper {
	nb := len(m.bs)
	gr := &grouper{m: m, maxPer: m.o.MaxMovesPerBroker, usage: slices.Clone(disk)}

	// Per moving partition; a partition's moves are consecutive until
	// queueOrder below reorders them.
	slots := 0
	for k := range moves {
		if k == 0 || moves[k].part != moves[k-1].part {
			slots++
		}
		moves[k].slot = int32(slots - 1)
	}
	start := queueOrder(moves, nb)
	gr.queues = make([][]*sMove, nb)
	all := make([]*sMove, len(moves))
	for k := range moves {
		all[k] = &moves[k]
	}
	for b := range nb {
		gr.queues[b] = all[start[b]:start[b+1]:start[b+1]]
	}
	gr.drops = all[start[nb]:]
	gr.taken = make([]*sMove, len(moves))

	gr.nextSeq = make([]int32, slots)
	gr.lastGroup = make([]int32, slots)
	for i := range gr.lastGroup {
		gr.lastGroup[i] = -1
	}
	gr.touches = make([]int, nb)
	gr.inflight = make([]int64, nb)
	gr.outflight = make([]int64, nb)
	gr.freed = make([]int64, nb)
	gr.touched = make([]bool, nb)
	return gr
}

// queueOrder reorders moves in place into the schedule's queues, one after
// another: the moves that copy to broker 0, to broker 1, and so on, then
// the drop-only moves. Each queue is in order of bytes, largest first,
// then of partition and sequence, which is the moves' own order: one radix
// sort of all moves, dealt out in that order, sorts every queue. Queue b
// is moves[start[b]:start[b+1]]; the drops start at start[nb].
//
// The moves are laid out, not only pointed at in that order: the
// schedule reads each queue from its head many times over, and at
// Cruise Control's scale the moves in partition order put every read
// of the next move in a queue on another cache line, far from the last.
func queueOrder(moves []sMove, nb int) (start []int32) {
	queue := func(mv *sMove) int {
		if len(mv.adding) == 0 {
			return nb
		}
		return mv.adding[0]
	}
	start = make([]int32, nb+2)
	for k := range moves {
		start[queue(&moves[k])+1]++
	}
	for q := range nb + 1 {
		start[q+1] += start[q]
	}
	var most int64
	for k := range moves {
		most = max(most, moves[k].bytes)
	}
	// at[j] is the move that goes to place j.
	next := slices.Clone(start[:nb+1])
	at := make([]int32, len(moves))
	for _, k := range radixOrder(len(moves), func(k int) uint64 { return uint64(most - moves[k].bytes) }) {
		q := queue(&moves[k])
		at[next[q]] = k
		next[q]++
	}
	permute(moves, at)
	return start[:nb+1]
}

// permute puts moves[at[j]] at place j for every j, in place, one cycle of
// the permutation at a time; at is spent (set to -1).
func permute(moves []sMove, at []int32) {
	for j := range at {
		if at[j] < 0 {
			continue
		}
		held := moves[j]
		cur := j
		for {
			src := int(at[cur])
			at[cur] = -1
			if src == j {
				moves[cur] = held
				break
			}
			moves[cur] = moves[src]
			cur = src
		}
	}
}

// ready says whether mv is its partition's next move, and its partition
// has no move in group g yet.
func (gr *grouper) ready(mv *sMove) bool {
	return gr.nextSeq[mv.slot] == mv.seq && int(gr.lastGroup[mv.slot]) < gr.g
}

// fits says whether group g can take mv within every broker's move limit
// and every receiver's disk limit.
func (gr *grouper) fits(mv *sMove) bool {
	for _, b := range mv.adding {
		if gr.touches[b] >= gr.maxPer {
			return false
		}
		bi := &gr.m.bs[b]
		if bi.hasLimit && gr.usage[b]+gr.inflight[b]+mv.copied > bi.limit {
			return false
		}
	}
	for _, b := range mv.remove {
		if gr.touches[b] >= gr.maxPer {
			return false
		}
	}
	return true
}

func (gr *grouper) take(mv *sMove) {
	mv.taken = true
	gr.nextSeq[mv.slot]++
	gr.lastGroup[mv.slot] = int32(gr.g)
	for _, b := range mv.adding {
		gr.touches[b]++
		gr.inflight[b] += mv.copied
		gr.touched[b] = true
	}
	for _, b := range mv.remove {
		gr.touches[b]++
		gr.freed[b] += mv.size
		gr.touched[b] = true
	}
	if mv.leader >= 0 {
		gr.outflight[mv.leader] += mv.bytes
	}
	gr.group = append(gr.group, mv)
	gr.scheduled++
}

// fill forms group g: every drop-only move that fits, then a round robin
// over receiving brokers, one move each per pass, so that every broker's
// queue advances.
func (gr *grouper) fill() {
	clear(gr.touches)
	clear(gr.inflight)
	clear(gr.outflight)
	clear(gr.freed)
	clear(gr.touched)
	gr.group = gr.taken[gr.scheduled:gr.scheduled]
	for _, mv := range gr.drops {
		if !mv.taken && gr.ready(mv) && gr.fits(mv) {
			gr.take(mv)
		}
	}
	for progress := true; progress; {
		progress = false
		for b := range gr.queues {
			if gr.touches[b] >= gr.maxPer {
				continue
			}
			q := gr.queues[b]
			i := 0
			for i < len(q) && (q[i].taken || !gr.ready(q[i]) || !gr.fits(q[i])) {
				i++
			}
			if i < len(q) {
				gr.take(leastSent(q[i], q[i+1:], gr.ready, gr.fits, gr.outflight))
				progress = true
			}
			gr.queues[b] = dropTaken(q, i+1)
		}
	}
}

// dropTaken removes the taken moves from q[:end], which the scan for a
// move to take has just read, keeping the order of the rest. leastSent
// takes moves from further down a queue than its head, so a queue fills
// with holes: at Cruise Control's scale the scans read some 15 million
// taken moves per plan before holes were dropped. The untaken moves slide
// towards end, so that q shrinks from the front, where the scans begin.
func dropTaken(q []*sMove, end int) []*sMove {
	end = min(end, len(q))
	w := end
	for j := end - 1; j >= 0; j-- {
		if !q[j].taken {
			w--
			q[w] = q[j]
		}
	}
	return q[w:]
}

// record adds group g, its disk peaks and its busiest broker's bytes to
// res, and moves the disk use on to the group's end.
func (gr *grouper) record(res *scheduleResult) {
	m := gr.m
	peak := make([]BrokerBytes, 0, count(gr.touched, true))
	var busy int64
	for b := range m.bs {
		if !gr.touched[b] && gr.outflight[b] == 0 {
			continue
		}
		busy = max(busy, gr.inflight[b], gr.outflight[b])
		if !gr.touched[b] {
			continue
		}
		top := gr.usage[b] + gr.inflight[b]
		res.peakDisk[b] = max(res.peakDisk[b], top)
		bb := BrokerBytes{Broker: m.bs[b].ID, Bytes: top}
		if m.bs[b].hasLimit {
			bb.LimitBytes = m.bs[b].limit
		}
		peak = append(peak, bb)
		gr.usage[b] = top - gr.freed[b]
	}
	slices.SortFunc(gr.group, func(a, b *sMove) int {
		// Partition indices follow topic and partition: m.ps is sorted.
		return cmp.Or(cmp.Compare(a.part, b.part), cmp.Compare(a.seq, b.seq))
	})
	res.groups = append(res.groups, slices.Clip(gr.group))
	res.peak = append(res.peak, peak)
	res.busy = append(res.busy, busy)
}

// leastSent picks the move a receiving broker takes next: mv, the largest
// that can go, or one about as large in the rest of its queue (largest
// first) whose sender sends the least so far in the group. A sender's
// throttle is shared by every copy it feeds, so a group whose copies come
// from a few senders leaves the others idle and holds its receivers below
// their throttle; the continuous schedule cannot make that up, since the
// receivers' slots are taken until the group's moves end. About as large
// is within 1%, so that the groups' sizes, and the disk bound they prove,
// barely change; at most senderChoices moves are looked at.
func leastSent(mv *sMove, rest []*sMove, ready, fits func(*sMove) bool, outflight []int64) *sMove {
	if mv.leader < 0 {
		return mv
	}
	best := mv
	seen := 0
	for _, alt := range rest {
		if alt.bytes*100 < mv.bytes*99 || seen == senderChoices {
			break
		}
		if alt.taken || !ready(alt) || !fits(alt) {
			continue
		}
		seen++
		if alt.leader >= 0 && outflight[alt.leader] < outflight[best.leader] {
			best = alt
		}
	}
	return best
}

// senderChoices bounds the moves leastSent compares per pick, which keeps
// the schedule linear in the moves.
const senderChoices = 16

// blockedError explains why no move could start: the first move waiting has
// no room on its destination.
func blockedError(m *model, queues [][]*sMove, nextSeq []int32, usage []int64, g int) error {
	for _, q := range queues {
		for _, mv := range q {
			if mv.taken || nextSeq[mv.slot] != mv.seq {
				continue
			}
			p := m.ps[mv.part]
			for _, b := range mv.adding {
				bi := &m.bs[b]
				if bi.hasLimit && usage[b]+mv.copied > bi.limit {
					return &InfeasibleError{Constraint: ConstraintDiskCapacity, Subject: fmt.Sprintf("broker %d", bi.ID),
						Need: usage[b] + mv.copied, Limit: bi.limit, Unit: "bytes",
						Detail: fmt.Sprintf("at group %d, copying %s p%d (%d bytes) onto it while it holds %d bytes breaks min_free_disk_percent %g of capacity %d, and no other move can free room first",
							g+1, m.topic(int(mv.part)), p.part, mv.copied, usage[b], m.o.MinFreeDiskPercent, bi.CapacityBytes)}
				}
			}
		}
	}
	return fmt.Errorf("engine: scheduling stalled at group %d with moves left; this is a bug, please report it", g+1)
}
