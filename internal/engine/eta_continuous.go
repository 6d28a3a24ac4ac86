package engine

import (
	"maps"
	"math"
	"slices"
)

// The ETA of the continuous schedule (Plan.Ready).
//
// Without the barrier between groups there is no closed form: a move
// starts when the moves before it on its brokers and its partition are
// done, and shares its brokers with whatever else runs then. The estimate
// runs the executor on a model of the cluster instead, as a fluid
// simulation:
//
//   - each added replica of a move is a stream of Bytes/len(Adding) bytes
//     from the sender (the old list's first replica) into the receiving
//     broker;
//   - every broker receives and sends at most the throttle, shared equally
//     among the streams copying into (out of) it; a stream copies at the
//     smaller of its two shares;
//   - a stream then passes MoveSettleTime × throttle more "bytes" through
//     its receiver's inbound share: the receiver's work per move, which was
//     measured serial per receiving broker;
//   - while it copies, a stream's remaining bytes grow at its partition's
//     write rate; a rate of saturation% or more of the stream's share
//     counts as progress at the rest of the share, and flags the receiver;
//   - the executor polls every poll interval: it releases the moves whose
//     streams have all finished, calls Ready and starts what it returns,
//     which spend GroupSettleTime (throttling, submitting) before copying.
//     A move that only drops replicas is done after GroupSettleTime.
//
// Time advances from one event to the next (a stream ending a phase, a move
// done with its start, a poll), so the copy is exact between polls. The
// parts come from three runs: Copying from one with the copy alone, moves
// released the moment they finish; CatchingUp is what the writes add to
// that; Settling what the start, the per-move work and the polls add to
// that.

// maxTicks is about the most polls the simulation runs: past it the poll
// interval is stretched so that the estimate's cost stays bounded. A
// coarser poll only delays the releases, which Settling counts.
const maxTicks = 2000

// EstimateContinuous estimates what is left of p under the continuous
// schedule. states gives where each move stands (nil: nothing started);
// copied, when not nil, gives the bytes an in-flight move has already copied
// (indexed like states). maxPerBroker is max_moves_per_broker.
//
// The simulation polls every in.PollInterval, unless the groups' estimate
// (EstimateGroups, an upper bound in practice) would make that more than
// maxTicks polls: then at that estimate over maxTicks.
func EstimateContinuous(p *Plan, states []MoveState, copied []int64, maxPerBroker int, in ETAInputs) ETA {
	moves := p.Moves()
	if states == nil {
		states = make([]MoveState, len(moves))
	}
	if len(states) != len(moves) {
		panic("engine: EstimateContinuous needs one state per move of the plan")
	}
	e := brokerETA(in)
	var open []Group
	k := 0
	for _, g := range p.Groups {
		unfinished := false
		for _, s := range g.Steps {
			for range s.Moves {
				unfinished = unfinished || states[k] != MoveDone
				k++
			}
		}
		if unfinished {
			open = append(open, g)
		}
	}
	e.Groups = len(open)
	done := make([]float64, len(moves))
	for k, m := range moves {
		if states[k] == MoveDone {
			continue
		}
		if states[k] == MoveInFlight && k < len(copied) {
			done[k] = float64(min(max(copied[k], 0), m.Bytes))
		}
		e.Bytes += m.Bytes - int64(done[k])
		if in.Throttle > 0 && m.GrowthBytesPerSec > 0 && len(m.Adding) > 0 {
			e.GrowthBytesPerSec += m.GrowthBytesPerSec
		}
	}
	if len(open) > 0 {
		bound := in
		bound.CopiedInFirstGroup = 0
		upper := EstimateGroups(open, bound)
		dt := pollInterval(in).Seconds()
		if u := (upper.Copying + upper.CatchingUp + upper.Settling).Seconds(); u/dt > maxTicks {
			dt = u / maxTicks
		}
		s := newContSim(p, moves, states, done, maxPerBroker, in.Throttle, dt)
		copying, _ := s.run(false, false)
		growing, saturated := copying, []int32(nil)
		if e.GrowthBytesPerSec > 0 {
			// Without writes this run is the one before.
			growing, saturated = s.run(true, false)
		}
		all, _ := s.run(true, true)
		e.Copying = seconds(copying)
		e.CatchingUp = seconds(max(growing-copying, 0))
		e.Settling = seconds(max(all-growing, 0))
		e.Saturated = saturated
	}
	finishETA(&e, in, len(open) > 0)
	return e
}

// contSim is the model the continuous estimate runs: the moves left and the
// cluster's brokers.
type contSim struct {
	p            *Plan
	moves        []Move
	states       []MoveState
	copied       []float64
	maxPerBroker int
	// capacity is each broker's inbound and outbound throttle; without
	// a throttle, 1/s with nothing to copy, so that only the per-move work
	// (MoveSettleTime of it) takes time.
	capacity  float64
	throttled bool
	dt        float64
	// broker maps a broker id to its index in ids.
	broker map[int32]int
	ids    []int32
}

func newContSim(p *Plan, moves []Move, states []MoveState, copied []float64, maxPerBroker int, throttle int64, dt float64) *contSim {
	s := &contSim{p: p, moves: moves, states: states, copied: copied, maxPerBroker: maxPerBroker, capacity: 1, dt: dt, broker: map[int32]int{}}
	if throttle > 0 {
		s.capacity, s.throttled = float64(throttle), true
	}
	for _, m := range moves {
		s.ids = append(s.ids, m.Adding...)
		if len(m.OldReplicas) > 0 {
			s.ids = append(s.ids, m.OldReplicas[0])
		}
	}
	slices.Sort(s.ids)
	s.ids = slices.Compact(s.ids)
	for i, b := range s.ids {
		s.broker[b] = i
	}
	return s
}

// stream is one added replica being copied: from the sender (-1 for
// none) into to, copy bytes and then settle "bytes" left.
type stream struct {
	move, from, to int
	copy, settle   float64
	growth         float64
}

// simMove is a started move: wait is what is left of its start, open
// counts its streams not finished.
type simMove struct {
	wait     float64
	open     int
	finished bool
}

// eps is how close, in seconds, two instants are to count as one.
const eps = 1e-9

// run simulates the executor from the states, with the writes to the
// moving partitions (growth) and the start, per-move work and polls
// (overheads) or without them. It returns when the last move is done (seen
// done, with the overheads) in seconds, and the brokers the writes
// saturated.
func (s *contSim) run(growth, overheads bool) (float64, []int32) {
	states := slices.Clone(s.states)
	moves := make([]simMove, len(s.moves))
	var streams []stream
	var active []int // the moves started and not seen done, in start order
	saturated := make([]bool, len(s.ids))
	settle := 0.0
	if overheads {
		settle = MoveSettleTime.Seconds() * s.capacity
	}
	start := func(k int, fresh bool) {
		m := s.moves[k]
		mv := &moves[k]
		if fresh && overheads {
			mv.wait = GroupSettleTime.Seconds()
		}
		n := float64(len(m.Adding))
		for _, b := range m.Adding {
			st := stream{move: k, from: -1, to: s.broker[b], settle: settle}
			if len(m.OldReplicas) > 0 {
				st.from = s.broker[m.OldReplicas[0]]
			}
			if s.throttled {
				st.copy = max(float64(m.Bytes)-s.copied[k], 0) / n
				if growth {
					st.growth = m.GrowthBytesPerSec
				}
			}
			streams = append(streams, st)
			mv.open++
		}
		active = append(active, k)
	}
	left := 0
	for k, st := range states {
		switch st {
		case MoveInFlight:
			start(k, false)
			left++
		case MovePending:
			left++
		}
	}

	var view readyView
	t, last := 0.0, 0.0
	nextPoll := 0.0
	first := true
	inCount := make([]int, len(s.ids))
	outCount := make([]int, len(s.ids))
	rates := make([]float64, 0)
	for left > 0 {
		// Streams that ended a phase, and moves whose streams all did.
		kept := streams[:0]
		for _, st := range streams {
			if moves[st.move].wait > 0 {
				kept = append(kept, st)
				continue
			}
			if st.copy <= 0 && st.settle <= 0 {
				moves[st.move].open--
				continue
			}
			kept = append(kept, st)
		}
		streams = kept
		for _, k := range active {
			if mv := &moves[k]; !mv.finished && mv.wait <= 0 && mv.open == 0 {
				mv.finished = true
				last = t
			}
		}
		// A poll: without the overheads, at every instant a move finishes.
		if !overheads || nextPoll-t <= eps {
			released := false
			kept := active[:0]
			for _, k := range active {
				if moves[k].finished {
					states[k] = MoveDone
					left--
					released = true
					continue
				}
				kept = append(kept, k)
			}
			active = kept
			if overheads {
				last = t
				for nextPoll-t <= eps {
					nextPoll += s.dt
				}
			}
			if released || first {
				first = false
				ready := view.ready(s.p, s.moves, states, s.maxPerBroker)
				for _, k := range ready {
					states[k] = MoveInFlight
					start(k, true)
				}
				if len(ready) > 0 {
					// What just started may be done already.
					continue
				}
			}
			if left == 0 {
				break
			}
		}
		if len(active) == 0 {
			break // nothing in flight and nothing ready: Ready never stalls
		}
		// The next event: a stream ending its phase, a move done with its
		// start, or the next poll.
		clear(inCount)
		clear(outCount)
		for _, st := range streams {
			if moves[st.move].wait > 0 {
				continue
			}
			inCount[st.to]++
			if st.copy > 0 && st.from >= 0 {
				outCount[st.from]++
			}
		}
		h := math.Inf(1)
		if overheads {
			h = nextPoll - t
		}
		rates = rates[:0]
		for _, st := range streams {
			rate := 0.0
			if moves[st.move].wait <= 0 {
				rate = s.capacity / float64(inCount[st.to])
				work := st.settle
				if st.copy > 0 {
					work = st.copy
					if st.from >= 0 {
						rate = min(rate, s.capacity/float64(outCount[st.from]))
					}
					if st.growth > 0 {
						if st.growth*100 >= rate*saturation {
							saturated[st.to] = true
							rate = rate * (100 - saturation) / 100
						} else {
							rate -= st.growth
						}
					}
				}
				h = min(h, work/rate)
			}
			rates = append(rates, rate)
		}
		for _, k := range active {
			if w := moves[k].wait; w > 0 {
				h = min(h, w)
			}
		}
		if math.IsInf(h, 1) {
			break // nothing runs and no poll comes: cannot happen
		}
		t += h
		for i := range streams {
			st := &streams[i]
			if rates[i] == 0 {
				continue
			}
			if st.copy > 0 {
				if st.copy -= rates[i] * h; st.copy <= rates[i]*eps {
					st.copy = 0
				}
			} else if st.settle -= rates[i] * h; st.settle <= rates[i]*eps {
				st.settle = 0
			}
		}
		for _, k := range active {
			if mv := &moves[k]; mv.wait > 0 {
				if mv.wait -= h; mv.wait <= eps {
					mv.wait = 0
				}
			}
		}
	}
	var out []int32
	for i, sat := range saturated {
		if sat {
			out = append(out, s.ids[i])
		}
	}
	return last, out
}

// readyView calls Plan.Ready on a copy of the plan with only the moves
// that can change its answer, which is the same, and costs what is left of
// the moves rather than the whole plan:
//   - the moves done, which Ready skips, are left out;
//   - so are the pending moves of the groups after cut, when every broker
//     they add a replica to is touched by an unfinished move of a group up
//     to cut: such a move waits for that broker (Ready's second rule), and
//     being later than those moves it lowers no broker's first group. The
//     moves in flight stay, since they hold slots, and no pending move
//     that adds nothing is left out: the cut comes after the last of them.
//
// Every group is kept, empty or not, so that the numbers agree. The copy
// is made again once half of its moves are done, or once the moves up to
// cut no longer touch every broker the left-out moves add to.
type readyView struct {
	plan   Plan
	index  []int // the copy's moves, as indices into the whole plan's
	states []MoveState
	done   int
	// cut is the last group whose pending moves are in the copy;
	// receivers the brokers the pending moves after it add to.
	cut       int
	receivers []int32
	groups    []int // each move's group
}

func (v *readyView) ready(p *Plan, moves []Move, states []MoveState, maxPerBroker int) []int {
	if v.index == nil || v.done*2 > len(v.index) || !v.covered(moves, states) {
		v.build(p, moves, states)
	}
	v.done = 0
	for i, k := range v.index {
		v.states[i] = states[k]
		if states[k] == MoveDone {
			v.done++
		}
	}
	ready := v.plan.Ready(v.states, maxPerBroker)
	for i, r := range ready {
		ready[i] = v.index[r]
	}
	return ready
}

// covered reports whether the unfinished moves of the copy up to cut
// still touch every broker in receivers.
func (v *readyView) covered(moves []Move, states []MoveState) bool {
	if len(v.receivers) == 0 {
		return true
	}
	seen := map[int32]bool{}
	for _, k := range v.index {
		if v.groups[k] > v.cut || states[k] == MoveDone {
			continue
		}
		for _, b := range touched(moves[k]) {
			seen[b] = true
		}
	}
	for _, b := range v.receivers {
		if !seen[b] {
			return false
		}
	}
	return true
}

// build makes the copy of p (whose moves are moves) for states.
func (v *readyView) build(p *Plan, moves []Move, states []MoveState) {
	if v.groups == nil {
		v.groups = make([]int, 0, len(moves))
		for g, gr := range p.Groups {
			for _, s := range gr.Steps {
				for range s.Moves {
					v.groups = append(v.groups, g)
				}
			}
		}
	}
	// The cut: the first group at whose end the unfinished moves so far
	// touch every broker a later pending move adds to, and not before
	// any pending move that adds nothing. lastAdd is the last group in
	// which a pending move adds to a broker.
	lastAdd := map[int32]int{}
	lastDropOnly := -1 // the last group with a pending move that adds nothing
	left := 0
	for k, m := range moves {
		if states[k] != MoveDone {
			left++
		}
		if states[k] != MovePending {
			continue
		}
		if len(m.Adding) == 0 {
			lastDropOnly = v.groups[k]
		}
		for _, b := range m.Adding {
			lastAdd[b] = v.groups[k]
		}
	}
	receivers := slices.Sorted(maps.Keys(lastAdd))
	// A cut that holds holds at any later group too; the copy takes at
	// least √(moves left) of them, so that it is made again about every
	// √n moves (O(n) each) and Ready costs O(√n) a call.
	v.cut = len(p.Groups) - 1
	touchedSoFar := map[int32]bool{}
	kept := 0
	k := 0
	for g := range p.Groups {
		for ; k < len(moves) && v.groups[k] == g; k++ {
			if states[k] != MoveDone {
				kept++
				for _, b := range touched(moves[k]) {
					touchedSoFar[b] = true
				}
			}
		}
		if g < lastDropOnly || kept*kept < left {
			continue
		}
		all := true
		for _, b := range receivers {
			if lastAdd[b] > g && !touchedSoFar[b] {
				all = false
				break
			}
		}
		if all {
			v.cut = g
			break
		}
	}
	v.receivers = v.receivers[:0]
	for _, b := range receivers {
		if lastAdd[b] > v.cut {
			v.receivers = append(v.receivers, b)
		}
	}
	v.plan = Plan{Groups: make([]Group, len(p.Groups))}
	v.index = []int{}
	byGroup := make([][]Move, len(p.Groups))
	for k, m := range moves {
		g := v.groups[k]
		if states[k] == MoveDone || (g > v.cut && states[k] == MovePending) {
			continue
		}
		byGroup[g] = append(byGroup[g], m)
		v.index = append(v.index, k)
	}
	for g, ms := range byGroup {
		v.plan.Groups[g].Steps = []Step{{Moves: ms}}
	}
	v.states = make([]MoveState, len(v.index))
}
