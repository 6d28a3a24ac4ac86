package engine

import "slices"

// The continuous schedule.
//
// The groups are what the engine proves disk-safe: with every move of a
// group in flight at once, each broker stays under its limit, counting the
// space the earlier groups' removed replicas held as free. Run one after
// another, they idle every broker until the slowest move of a group ends.
// The continuous schedule keeps that proof and drops the wait. A move of
// group g starts as soon as
//   - the earlier moves of its partition are done;
//   - every broker it touches has fewer than max_moves_per_broker moves in
//     flight;
//   - every broker b it adds a replica to has room, checked when it starts:
//     held(b) + pending(b, g) <= limit(b), where held(b) is what b holds now
//     (its disk before the plan, plus the replicas finished moves added,
//     less those they removed) plus every copy in flight onto it, and
//     pending(b, g) is every copy onto b of the moves of groups up to g not
//     started yet, this one included.
//
// The second half of the check keeps room for the earlier groups: a move
// of a later group starts onto b only if every earlier move onto b could
// still start with no removal ever finishing. Call Q(b, h) = held(b) +
// pending(b, h). Starting a move of group g onto b leaves Q(b, h) at most
// what Q(b, g) was before, for every h, and finishing a move never raises
// it. While no move of a group after the lowest unfinished one, g0, has
// started onto b, Q(b, g0) is at most what the groups proved for group g0
// (the earlier groups are done, the later ones add nothing). So Q(b, g0),
// and held(b) with it, stays under the limit, and when nothing is in
// flight every move of g0 whose partition is ready fits: the schedule never
// stalls where the groups would not. A removed replica's space counts as
// free once its move is done; Kafka deletes its files
// file.delete.delay.ms later, as it does between groups. A broker with no
// known capacity has no limit, as in the groups.

// MoveState is where a planned move stands.
type MoveState uint8

const (
	// MovePending: not started, or started and lost before Kafka took it.
	MovePending MoveState = iota
	// MoveInFlight: Kafka is reassigning it.
	MoveInFlight
	// MoveDone: the partition's replicas are the move's new ones.
	MoveDone
)

// Schedule is a plan's moves indexed once for Ready, which an executor
// calls at every poll of a plan of up to ~10^5 moves.
type Schedule struct {
	moves Moves
	group []int   // each move's group
	prev  []int   // the previous move of the same partition, or -1
	size  []int64 // what each added replica brings: its copy (Plan.replicaBytes)
	freed []int64 // what each removed replica frees: the partition's size
	// adding and touched are each move's brokers, as indices into limit
	// and disk.
	adding, touched [][]int
	sender          []int   // the broker each move copies from, or -1
	limit           []int64 // 0: capacity unknown, no limit
	disk            []int64 // DiskBefore
	inTurn          bool    // Plan.GroupsInTurn
}

// Schedule indexes p's moves for Ready.
func (p *Plan) Schedule() *Schedule {
	s := &Schedule{moves: p.Moves(), inTurn: p.GroupsInTurn}
	index := map[int32]int{}
	broker := func(id int32) int {
		i, ok := index[id]
		if !ok {
			i = len(s.limit)
			index[id] = i
			s.limit = append(s.limit, 0)
			s.disk = append(s.disk, 0)
		}
		return i
	}
	for _, b := range p.Brokers {
		i := broker(b.Broker)
		s.limit[i], s.disk[i] = b.LimitBytes, b.DiskBefore
	}
	type part struct {
		topic string
		p     int32
	}
	last := map[part]int{}
	p.EachMove(func(g, _ int, m Move) {
		k := len(s.group)
		s.group = append(s.group, g)
		pk := part{m.Topic, m.Partition}
		if j, ok := last[pk]; ok {
			s.prev = append(s.prev, j)
		} else {
			s.prev = append(s.prev, -1)
		}
		last[pk] = k
		copied, size := p.replicaBytes(m)
		s.size, s.freed = append(s.size, copied), append(s.freed, size)
		var add, all []int
		for _, b := range m.Adding {
			add = append(add, broker(b))
		}
		all = append(all, add...)
		for _, b := range m.Removing {
			all = append(all, broker(b))
		}
		s.adding = append(s.adding, add)
		s.touched = append(s.touched, all)
		sender := -1
		if len(add) > 0 && len(m.OldReplicas) > 0 {
			sender = broker(m.OldReplicas[0])
		}
		s.sender = append(s.sender, sender)
	})
	return s
}

// Ready returns the moves that may start now under the continuous
// schedule, lowest group first, then within a group those whose sender and
// receivers have the fewest copies in flight, then in plan order. Under
// Plan.GroupsInTurn it returns nothing of a group while a move of an
// earlier one is unfinished. Moves are numbered as
// Plan.Moves lists them (group after group, step after step); states
// gives where each one stands, and maxPerBroker is max_moves_per_broker
// (zero for DefaultMaxMovesPerBroker). What Ready returns counts against
// the brokers' slots and room as if already in flight.
func (s *Schedule) Ready(states []MoveState, maxPerBroker int) []int {
	if maxPerBroker <= 0 {
		maxPerBroker = DefaultMaxMovesPerBroker
	}
	if len(states) != len(s.moves) {
		panic("engine: Ready needs one state per move of the plan")
	}
	nb := len(s.limit)
	held := slices.Clone(s.disk) // used, plus every copy in flight
	inFlight := make([]int, nb)
	// streams counts the copies in flight out of and into each broker,
	// which share its throttle.
	streams := make([]int, nb)
	for k, st := range states {
		switch st {
		case MoveDone:
			for _, b := range s.adding[k] {
				held[b] += s.size[k]
			}
			for _, b := range s.touched[k][len(s.adding[k]):] {
				held[b] -= s.freed[k]
			}
		case MoveInFlight:
			for _, b := range s.adding[k] {
				held[b] += s.size[k]
			}
			for _, b := range s.touched[k] {
				inFlight[b]++
			}
			s.addStreams(streams, k)
		}
	}
	// pending[b]: the copies onto b of the moves not started of the groups
	// up to the one being looked at. A move Ready takes goes from pending
	// to held, which leaves their sum unchanged for every move after it.
	pending := make([]int64, nb)
	var ready, cands []int
	for from, open := 0, false; from < len(s.moves) && (!s.inTurn || !open); {
		to := from
		for to < len(s.moves) && s.group[to] == s.group[from] {
			if states[to] == MovePending {
				for _, b := range s.adding[to] {
					pending[b] += s.size[to]
				}
			}
			to++
		}
		cands = cands[:0]
		for k := from; k < to; k++ {
			if states[k] != MovePending || (s.prev[k] >= 0 && states[s.prev[k]] != MoveDone) {
				continue
			}
			cands = append(cands, k)
		}
		// Within a group, the moves whose brokers copy least first: a
		// broker's throttle is shared by its copies, and a free slot given
		// to a move whose sender is busy copies slowly while another
		// sender idles.
		slices.SortStableFunc(cands, func(a, b int) int { return s.load(streams, a) - s.load(streams, b) })
		for _, k := range cands {
			ok := true
			for _, b := range s.touched[k] {
				ok = ok && inFlight[b] < maxPerBroker
			}
			for _, b := range s.adding[k] {
				ok = ok && (s.limit[b] == 0 || held[b]+pending[b] <= s.limit[b])
			}
			if !ok {
				continue
			}
			for _, b := range s.touched[k] {
				inFlight[b]++
			}
			s.addStreams(streams, k)
			ready = append(ready, k)
		}
		// Groups in turn: nothing of a later group while a move of this
		// one is unfinished.
		open = slices.ContainsFunc(states[from:to], func(st MoveState) bool { return st != MoveDone })
		from = to
	}
	return ready
}

// Next returns the moves Ready would start after ready (what it just
// returned) once their brokers free as many slots again: the moves a
// runner can prepare, throttle entries and all, while ready copy, so that
// a slot that frees costs only the next move's submission. Whether they
// fit on disk is judged as if ready and they were all in flight; Ready
// judges it again when they start.
func (s *Schedule) Next(states []MoveState, ready []int, maxPerBroker int) []int {
	if maxPerBroker <= 0 {
		maxPerBroker = DefaultMaxMovesPerBroker
	}
	after := slices.Clone(states)
	for _, k := range ready {
		after[k] = MoveInFlight
	}
	return s.Ready(after, 2*maxPerBroker)
}

// addStreams counts move k's copies on its sender and receivers.
func (s *Schedule) addStreams(streams []int, k int) {
	if s.sender[k] >= 0 {
		streams[s.sender[k]] += len(s.adding[k])
	}
	for _, b := range s.adding[k] {
		streams[b]++
	}
}

// load is how many copies in flight share move k's brokers.
func (s *Schedule) load(streams []int, k int) int {
	n := 0
	if s.sender[k] >= 0 {
		n += streams[s.sender[k]]
	}
	for _, b := range s.adding[k] {
		n += streams[b]
	}
	return n
}

// replicaBytes is what one replica a move adds brings to its broker (its
// copy) and what one replica it removes frees (the partition's size), as
// the groups counted them: the two differ for a tiered topic only
// (Partition.CopyBytes).
func (p *Plan) replicaBytes(m Move) (copied, size int64) {
	i, found := slices.BinarySearchFunc(p.Target, Partition{Topic: m.Topic, Partition: m.Partition}, comparePartitions)
	if found {
		size = p.Target[i].SizeBytes
	}
	if n := int64(len(m.Adding)); n > 0 {
		copied = m.Bytes / n
		if !found {
			size = copied
		}
	}
	return copied, size
}
