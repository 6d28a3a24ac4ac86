package engine

// The continuous schedule.
//
// The groups are what the engine proves disk-safe: with every move of a
// group in flight at once, each broker stays under its limit, counting the
// space the earlier groups' removed replicas held as free. Run one after
// another, they idle every broker until the slowest move of a group ends.
// The continuous schedule keeps that proof and drops the wait. A move
// starts as soon as
//   - the earlier moves of its partition are done;
//   - every broker it adds a replica to is done with the earlier groups: no
//     move of an earlier group that adds to or removes from that broker is
//     unfinished;
//   - every broker it touches has fewer than max_moves_per_broker moves in
//     flight.
//
// While the moves of group g add to a broker, no move of a later group can,
// so the broker holds at most what the groups give it when group g starts
// (everything the earlier groups added, less what they removed, all of it
// finished), plus the copies of group g in flight onto it: the peak the
// groups proved under the limit. A broker a move only removes from needs
// nothing but a free slot, since a removal only frees space. Kafka deletes
// a removed replica's files file.delete.delay.ms after the move, as it does
// between groups.
//
// When nothing is in flight, every move of the lowest unfinished group
// whose partition is ready can start, so the schedule never stalls where
// the groups would not.

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

// Ready returns the moves that may start now under the continuous
// schedule, lowest group first, then in plan order. Moves are numbered as
// Moves lists them (group after group, step after step); states gives
// where each one stands, and maxPerBroker is max_moves_per_broker (zero
// for DefaultMaxMovesPerBroker). What Ready returns counts against the
// brokers' slots as if already in flight.
func (p *Plan) Ready(states []MoveState, maxPerBroker int) []int {
	if maxPerBroker <= 0 {
		maxPerBroker = DefaultMaxMovesPerBroker
	}
	moves := p.Moves()
	if len(states) != len(moves) {
		panic("engine: Ready needs one state per move of the plan")
	}
	group := make([]int, len(moves))
	i := 0
	for g, gr := range p.Groups {
		for _, s := range gr.Steps {
			for range s.Moves {
				group[i] = g
				i++
			}
		}
	}
	// openFrom[b] is the lowest group with an unfinished move that adds
	// to or removes from broker b; inFlight[b] counts b's moves in flight.
	openFrom := map[int32]int{}
	inFlight := map[int32]int{}
	// blocked is a partition with an unfinished move: its later moves wait.
	type part struct {
		topic string
		p     int32
	}
	firstOpen := map[part]int{}
	for k, m := range moves {
		st := states[k]
		if st == MoveDone {
			continue
		}
		if _, ok := firstOpen[part{m.Topic, m.Partition}]; !ok {
			firstOpen[part{m.Topic, m.Partition}] = k
		}
		for _, b := range touched(m) {
			if g, ok := openFrom[b]; !ok || group[k] < g {
				openFrom[b] = group[k]
			}
			if st == MoveInFlight {
				inFlight[b]++
			}
		}
	}
	var ready []int
	for k, m := range moves {
		if states[k] != MovePending || firstOpen[part{m.Topic, m.Partition}] != k {
			continue
		}
		ok := true
		for _, b := range m.Adding {
			if openFrom[b] < group[k] {
				ok = false
				break
			}
		}
		for _, b := range touched(m) {
			if inFlight[b] >= maxPerBroker {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for _, b := range touched(m) {
			inFlight[b]++
		}
		ready = append(ready, k)
	}
	return ready
}

// touched lists the brokers a move adds a replica to or removes one from:
// those max_moves_per_broker counts.
func touched(m Move) []int32 {
	out := make([]int32, 0, len(m.Adding)+len(m.Removing))
	out = append(out, m.Adding...)
	return append(out, m.Removing...)
}
