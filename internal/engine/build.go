package engine

import "slices"

// plan turns the planner's target into a Plan: preferred leaders, moves,
// the schedule and its disk simulation, projections and the score.
func (pl *planner) plan() (*Plan, error) {
	m := pl.model
	pl.gatherChanged()
	// Which partitions change members, asked once: the leaders, the moves
	// and their count all need it, and there are millions of partitions.
	moving := make([]bool, len(m.ps))
	for i := range m.ps {
		// A list the planner never changed is the original.
		moving[i] = pl.changed(i) && !SameMembers(m.orig(i), pl.cur[i])
	}
	leaderRng := leaderTargets(m.bs, pl.cur)
	final := pl.leadersFirst(balanceLeaders(m, pl.cur, moving, leaderRng))

	out := &Plan{ThrottleBytesPerSec: m.o.ThrottleBytesPerSec, MaxMovesPerBroker: m.o.MaxMovesPerBroker, MaxMovesPerStep: m.o.MaxMovesPerStep,
		Reorders: []Reorder{}, Groups: []Group{}}
	out.Target = make([]Partition, len(m.ps))
	ids := &idLists{m: m}
	// Counted first, the moves fill one allocation: growing a slice of
	// ~10^5 moves by appending would allocate several times its size.
	nMoves := 0
	for i := range m.ps {
		if moving[i] {
			nMoves += moveCount(m.orig(i), final[i], m.o.MaxReplicaMovesPerPartition)
		}
	}
	moves := make([]sMove, 0, nMoves)
	var moveLists slab[int]
	for i, p := range m.ps {
		out.Target[i] = Partition{Topic: m.topic(i), Partition: p.part, Replicas: ids.of(final[i]), SizeBytes: p.size}
		if p.tier != 0 {
			// Kept, so that a plan made from this target counts the same.
			out.Target[i].CopyBytes, out.Target[i].RemoteBytes = m.copyBytes(&p), m.remoteBytes(&p)
		}
		if !moving[i] {
			if !slices.Equal(m.orig(i), final[i]) {
				out.Reorders = append(out.Reorders, Reorder{Topic: m.topic(i), Partition: p.part,
					OldReplicas: m.brokerIDs(m.orig(i)), NewReplicas: m.brokerIDs(final[i])})
			}
			continue
		}
		moves = partitionMoves(moves, &moveLists, ids, m, i, final[i], m.o.MaxReplicaMovesPerPartition)
		out.RemoteBytes += m.remoteBytes(&p)
	}

	before, after, diskBefore := pl.loads(final)
	sched, err := schedule(m, moves, diskBefore)
	if err != nil {
		return nil, err
	}
	for gi, group := range sched.groups {
		g, added := m.group(group, ids)
		g.Peak, g.BusiestBrokerBytes = sched.peak[gi], sched.busy[gi]
		out.ReplicaMoves += added
		out.TotalBytes += g.Bytes
		out.Groups = append(out.Groups, g)
	}
	out.Brokers = pl.projections(before, after, diskBefore, sched.peakDisk, leaderRng)
	// The estimate simulates the schedule (with the brokers' disk limits,
	// just set), and its copy says whether the groups in turn are faster.
	in := ETAInputs{Throttle: m.o.ThrottleBytesPerSec}
	eta := out.ETA(in)
	if groupsFaster(out, eta) {
		out.GroupsInTurn = true
		eta = out.ETA(in)
	}
	out.EstimatedSeconds = eta.Seconds()
	// The leader ranges depend on the replica sets' members only, which
	// ordering the leaders first did not change.
	out.Score = pl.score(final, leaderRng)
	pl.warnScore(out.Score)
	out.Warnings = slices.Clone(m.warnings)
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	return out, nil
}

// gatherChanged copies the lists of the partitions that changed into one
// allocation, in partition order. They were made in the order the planner
// changed them, which is no order: every pass below over the partitions
// in order read each of them from anywhere in memory, and at Cruise
// Control's scale some ten passes read 195k of them.
func (pl *planner) gatherChanged() {
	n := 0
	for i := range pl.cur {
		if pl.changed(i) {
			n += len(pl.cur[i])
		}
	}
	arena := make([]int, n)
	for i, set := range pl.cur {
		if pl.changed(i) {
			k := copy(arena, set)
			pl.cur[i], arena = arena[:k:k], arena[k:]
		}
	}
}

// leadersFirst returns the final lists: the planner's, reordered in place
// so that the preferred leader (at pos[i] in partition i's list) comes
// first and the others keep their order. The planner is done with them,
// and a copy would cost a list per partition.
func (pl *planner) leadersFirst(pos []int32) [][]int {
	final := pl.cur
	for i, k := range pos {
		if k == 0 {
			continue
		}
		pl.own(i)
		set := final[i]
		leader := set[k]
		copy(set[1:k+1], set[:k])
		set[0] = leader
	}
	return final
}

// idLists renders broker indices as ids. A plan has as many short lists
// as partitions, and more for its moves: they are carved from large
// allocations, not made one by one.
type idLists struct {
	m     *model
	lists slab[int32]
}

func (x *idLists) of(set []int) []int32 {
	out := x.lists.take(len(set))
	for k, b := range set {
		out[k] = x.m.bs[b].ID
	}
	return out
}

// loads counts each broker's replicas, bytes and preferred leaders before
// and after the change, and its disk use before it, warning of brokers
// already over their limit.
func (pl *planner) loads(final [][]int) (before, after []Load, diskBefore []int64) {
	m := pl.model
	nb := len(m.bs)
	diskBefore = make([]int64, nb)
	before = make([]Load, nb)
	after = make([]Load, nb)
	for i, p := range m.ps {
		for k, b := range m.orig(i) {
			before[b].Replicas++
			before[b].Bytes += p.size
			if k == 0 {
				before[b].Leaders++
			}
		}
		for k, b := range final[i] {
			after[b].Replicas++
			after[b].Bytes += p.size
			if k == 0 {
				after[b].Leaders++
			}
		}
	}
	for b := range nb {
		diskBefore[b] = m.bs[b].other + before[b].Bytes
		if bi := m.bs[b]; bi.hasLimit && diskBefore[b] > bi.limit {
			m.warnf("broker %d already holds %d bytes, over its limit of %d bytes (capacity %d less min_free_disk_percent %g)",
				bi.ID, diskBefore[b], bi.limit, bi.CapacityBytes, m.o.MinFreeDiskPercent)
		}
	}
	return before, after, diskBefore
}

// group turns one scheduled group into its steps of at most
// MaxMovesPerStep moves, and counts its bytes and the replicas it adds.
func (m *model) group(group []*sMove, ids *idLists) (g Group, added int) {
	g.Steps = make([]Step, 0, (len(group)+m.o.MaxMovesPerStep-1)/m.o.MaxMovesPerStep)
	for start := 0; start < len(group); start += m.o.MaxMovesPerStep {
		chunk := group[start:min(start+m.o.MaxMovesPerStep, len(group))]
		st := Step{Moves: make([]Move, 0, len(chunk))}
		for _, mv := range chunk {
			move := Move{Topic: m.topic(int(mv.part)), Partition: m.ps[mv.part].part,
				OldReplicas: mv.old, NewReplicas: mv.new,
				Adding: ids.of(mv.adding), Removing: ids.of(mv.remove), Bytes: mv.bytes}
			if len(mv.adding) > 0 {
				move.RemoteBytes = m.remoteBytes(&m.ps[mv.part])
			}
			st.Moves = append(st.Moves, move)
			g.Bytes += mv.bytes
			added += len(mv.adding)
		}
		g.Steps = append(g.Steps, st)
	}
	return g, added
}

// projections is each broker's before and after, its targets and its
// disk use at the start, the end and the peak.
func (pl *planner) projections(before, after []Load, diskBefore, peakDisk []int64, leaderRng []Range) []BrokerProjection {
	var out []BrokerProjection
	for b, bi := range pl.bs {
		bp := BrokerProjection{Broker: bi.ID, Rack: bi.Rack, Alive: bi.Alive, Added: bi.added, Removed: bi.removed,
			Before: before[b], After: after[b], TargetBytes: pl.byteTarget[b],
			DiskBefore: diskBefore[b], DiskAfter: bi.other + after[b].Bytes, PeakDiskBytes: peakDisk[b]}
		if bi.receiving || bi.frozen {
			bp.TargetReplicas = pl.tg.rng[b]
			bp.TargetLeaders = leaderRng[b]
		}
		if bi.frozen {
			bp.TargetLeaders = Range{Min: after[b].Leaders, Max: after[b].Leaders}
		}
		if bi.removed {
			bp.DiskAfter = bi.other
		}
		if bi.hasLimit {
			bp.LimitBytes = bi.limit
		}
		out = append(out, bp)
	}
	return out
}

// warnScore warns of the balance the plan could not reach.
func (pl *planner) warnScore(s Score) {
	m := pl.model
	if s.ReplicasOutOfRange > 0 {
		m.warnf("replica counts are %d replicas outside the balanced ranges (spread %d, the racks allow %d): rack spread or disk limits left no valid move",
			s.ReplicasOutOfRange, s.ReplicaSpread, s.ReplicaBoundSpread)
	}
	if s.LeadersOutOfRange > 0 {
		m.warnf("preferred leaders are %d outside the balanced ranges (spread %d)", s.LeadersOutOfRange, s.LeaderSpread)
	}
	if s.ByteSkewPercent > m.o.MaxDiskSkewPercent {
		m.warnf("byte skew is %.2f%% (broker %d: %d bytes where its share is %d), above max_disk_skew_percent %g (no assignment can beat %.2f%%; the largest partition is %.2f%% of a broker's share)%s",
			s.ByteSkewPercent, s.ByteSkewBroker, s.ByteSkewBytes, s.ByteSkewShare, m.o.MaxDiskSkewPercent, s.ByteSkewFloorPercent, s.LargestPartitionPercent, skewHint(pl.rebalance))
	}
}

func skewHint(rebalance bool) string {
	if rebalance {
		return ""
	}
	return "; a change of brokers or replication factors moves only the replicas it must, so run a rebalance afterwards to even out bytes"
}
