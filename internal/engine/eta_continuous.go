package engine

import (
	"math"
	"slices"
)

// The ETA of the continuous schedule (Schedule.Ready).
//
// Without the barrier between groups there is no closed form: a move
// starts when its partition, its brokers' slots and their room allow, and
// shares its brokers with whatever else runs then. The estimate
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
//     which spend GroupSettleTime (throttling, submitting) before copying,
//     and a move of a partition with segments in remote storage
//     TieredStartTime more. A move that only drops replicas is done after
//     GroupSettleTime.
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
	sched        *Schedule
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
	s := &contSim{sched: p.Schedule(), moves: moves, states: states, copied: copied, maxPerBroker: maxPerBroker, capacity: 1, dt: dt, broker: map[int32]int{}}
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
	r := &simRun{s: s, growth: growth, overheads: overheads,
		states: slices.Clone(s.states), moves: make([]simMove, len(s.moves)), saturated: make([]bool, len(s.ids)),
		first: true, inCount: make([]int, len(s.ids)), outCount: make([]int, len(s.ids)), rates: make([]float64, 0)}
	if overheads {
		r.settle = MoveSettleTime.Seconds() * s.capacity
	}
	for k, st := range r.states {
		switch st {
		case MoveInFlight:
			r.start(k, false)
			r.left++
		case MovePending:
			r.left++
		}
	}
	for r.left > 0 {
		r.retire()
		// A poll: without the overheads, at every instant a move finishes.
		if !overheads || r.nextPoll-r.t <= eps {
			if r.poll() {
				// What just started may be done already.
				continue
			}
			if r.left == 0 {
				break
			}
		}
		if len(r.active) == 0 {
			break // nothing in flight and nothing ready: Ready never stalls
		}
		h := r.nextEvent()
		if math.IsInf(h, 1) {
			break // nothing runs and no poll comes: cannot happen
		}
		r.advance(h)
	}
	var out []int32
	for i, sat := range r.saturated {
		if sat {
			out = append(out, s.ids[i])
		}
	}
	return r.last, out
}

// simRun is one run of a contSim: where every move and stream stands at
// time t.
type simRun struct {
	s                 *contSim
	growth, overheads bool
	states            []MoveState
	moves             []simMove
	streams           []stream
	active            []int // the moves started and not seen done, in start order
	saturated         []bool
	settle            float64 // the per-move work of a stream, in bytes
	left              int     // the moves not done
	t, last, nextPoll float64
	first             bool // no poll yet
	// Scratch for nextEvent.
	inCount, outCount []int
	rates             []float64
}

// start starts move k's streams; fresh when it starts now rather than
// being in flight already.
func (r *simRun) start(k int, fresh bool) {
	m := r.s.moves[k]
	mv := &r.moves[k]
	if fresh && r.overheads {
		mv.wait = GroupSettleTime.Seconds()
		if m.RemoteBytes > 0 {
			mv.wait += TieredStartTime.Seconds()
		}
	}
	n := float64(len(m.Adding))
	for _, b := range m.Adding {
		st := stream{move: k, from: -1, to: r.s.broker[b], settle: r.settle}
		if len(m.OldReplicas) > 0 {
			st.from = r.s.broker[m.OldReplicas[0]]
		}
		if r.s.throttled {
			st.copy = max(float64(m.Bytes)-r.s.copied[k], 0) / n
			if r.growth {
				st.growth = m.GrowthBytesPerSec
			}
		}
		r.streams = append(r.streams, st)
		mv.open++
	}
	r.active = append(r.active, k)
}

// retire drops the streams that ended their last phase, and marks
// finished the moves whose streams all did.
func (r *simRun) retire() {
	kept := r.streams[:0]
	for _, st := range r.streams {
		if r.moves[st.move].wait > 0 {
			kept = append(kept, st)
			continue
		}
		if st.copy <= 0 && st.settle <= 0 {
			r.moves[st.move].open--
			continue
		}
		kept = append(kept, st)
	}
	r.streams = kept
	for _, k := range r.active {
		if mv := &r.moves[k]; !mv.finished && mv.wait <= 0 && mv.open == 0 {
			mv.finished = true
			r.last = r.t
		}
	}
}

// poll sees the finished moves done and, when one was (or at the first
// poll), starts what the schedule allows. It reports whether any move
// started.
func (r *simRun) poll() bool {
	released := false
	kept := r.active[:0]
	for _, k := range r.active {
		if r.moves[k].finished {
			r.states[k] = MoveDone
			r.left--
			released = true
			continue
		}
		kept = append(kept, k)
	}
	r.active = kept
	if r.overheads {
		r.last = r.t
		for r.nextPoll-r.t <= eps {
			r.nextPoll += r.s.dt
		}
	}
	if !released && !r.first {
		return false
	}
	r.first = false
	ready := r.s.sched.Ready(r.states, r.s.maxPerBroker)
	for _, k := range ready {
		r.states[k] = MoveInFlight
		r.start(k, true)
	}
	return len(ready) > 0
}

// nextEvent sets each stream's rate and returns the time to the next
// event: a stream ending its phase, a move done with its start, or the
// next poll.
func (r *simRun) nextEvent() float64 {
	// Locals: this runs once per event, over every stream.
	moves, streams, inCount, outCount := r.moves, r.streams, r.inCount, r.outCount
	capacity := r.s.capacity
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
	if r.overheads {
		h = r.nextPoll - r.t
	}
	rates := r.rates[:0]
	for _, st := range streams {
		rate := 0.0
		if moves[st.move].wait <= 0 {
			rate = capacity / float64(inCount[st.to])
			work := st.settle
			if st.copy > 0 {
				work = st.copy
				if st.from >= 0 {
					rate = min(rate, capacity/float64(outCount[st.from]))
				}
				if st.growth > 0 {
					if st.growth*100 >= rate*saturation {
						r.saturated[st.to] = true
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
	r.rates = rates
	for _, k := range r.active {
		if w := moves[k].wait; w > 0 {
			h = min(h, w)
		}
	}
	return h
}

// advance runs every stream and every move's start for h seconds at the
// rates nextEvent set.
func (r *simRun) advance(h float64) {
	r.t += h
	streams, rates := r.streams, r.rates
	for i := range streams {
		st := &streams[i]
		rate := rates[i]
		if rate == 0 {
			continue
		}
		if st.copy > 0 {
			if st.copy -= rate * h; st.copy <= rate*eps {
				st.copy = 0
			}
		} else if st.settle -= rate * h; st.settle <= rate*eps {
			st.settle = 0
		}
	}
	for _, k := range r.active {
		if mv := &r.moves[k]; mv.wait > 0 {
			if mv.wait -= h; mv.wait <= eps {
				mv.wait = 0
			}
		}
	}
}

// groupsFaster says whether p copies faster with its groups run in turn
// than under the continuous schedule, whose estimate (RemainingETA's, for
// the whole plan) is cont: the engine's model of the copy, without writes
// or per-move costs, against EstimateGroups. Usually the continuous
// schedule wins, since nothing waits for the slowest move of a group. But
// it is greedy: a free slot goes to the first move that may start, whose
// sender or receiver can be one the groups kept apart, and on a few plans
// that costs more than the barriers (up to 18% on the random plans of the
// property tests). Plans that RemainingETA does not simulate (more than
// groupsCheckMoves moves, for the planner's time) run continuously.
func groupsFaster(p *Plan, cont ETA) bool {
	if !p.simulated(p.ThrottleBytesPerSec) || len(p.Groups) < 2 {
		return false
	}
	g := EstimateGroups(p.Groups, ETAInputs{Throttle: p.ThrottleBytesPerSec})
	return g.Copying*100 < cont.Copying*(100-inTurnMarginPercent)
}

// inTurnMarginPercent is how much faster the groups in turn must be for
// the plan to run them: the models are close, not exact, and the
// continuous schedule is the one a slow move does not hold up.
const inTurnMarginPercent = 5

// groupsCheckMoves bounds the plans groupsFaster and RemainingETA
// simulate: about a quarter of a second each at most.
const groupsCheckMoves = 5000

// simulated says whether RemainingETA simulates p's schedule at the
// throttle: a continuous plan of up to groupsCheckMoves moves.
func (p *Plan) simulated(throttle int64) bool {
	return !p.GroupsInTurn && throttle > 0 && p.moveCount() <= groupsCheckMoves
}

// moveCount is how many moves p has.
func (p *Plan) moveCount() int {
	n := 0
	for _, g := range p.Groups {
		for _, s := range g.Steps {
			n += len(s.Moves)
		}
	}
	return n
}
