package executor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// The reassignment runs the plan's moves under the engine's continuous
// schedule (engine.Schedule.Ready): each poll sees which moves Kafka finished,
// removes their throttle entries, and starts every move the schedule
// allows, throttled before it is submitted. A broker no longer waits for
// the slowest move of a group it has no part in.
//
// What is recorded, saved before anything is submitted: Group, the lowest
// group with an unfinished move (every move before it is done), and
// Started, the moves of Group and later submitted so far. Where each
// started move stands is read from Kafka (classify): on resume a started
// move Kafka does not show is submitted again, which Kafka takes as a no-op
// if it had it after all.

// movePlan indexes the plan's moves once per run.
type movePlan struct {
	moves engine.Moves
	group []int // each move's group
	first []int // each group's first move; first[len(groups)] = len(moves)
	// parts lists, per partition, its moves in order.
	parts map[partKey][]int
	sched *engine.Schedule
}

func newMovePlan(p *engine.Plan) *movePlan {
	mp := &movePlan{moves: p.Moves(), parts: map[partKey][]int{}, sched: p.Schedule()}
	for g, gr := range p.Groups {
		mp.first = append(mp.first, len(mp.group))
		for _, s := range gr.Steps {
			for range s.Moves {
				mp.group = append(mp.group, g)
			}
		}
	}
	mp.first = append(mp.first, len(mp.moves))
	for k, m := range mp.moves {
		pk := partKey{m.Topic, m.Partition}
		mp.parts[pk] = append(mp.parts[pk], k)
	}
	return mp
}

// states reads where each move stands. Moves of groups before op.Group are
// done. For each partition, the last of its moves that the cluster
// explains (done, in flight or pending) sets the state: the moves before it
// are done and those after it pending. A move the operation never started
// can only be pending, which keeps a partition that returns to an earlier
// list from reading as further along. submitted are this run's
// submissions: Kafka may not list them yet, and they count as in flight.
// conflicts name the partitions no move of theirs explains; unconfirmed
// are the targets of started moves among them whose partitions read as
// on the move's old and new replicas with no reassignment listed, for
// confirmTargets to ask the controller about.
func (mp *movePlan) states(op *Operation, st clusterState, submitted map[int]bool) (states []engine.MoveState, conflicts []string, unconfirmed []Assignment) {
	states = make([]engine.MoveState, len(mp.moves))
	from := mp.first[min(op.Group, len(mp.first)-1)]
	for k := range from {
		states[k] = engine.MoveDone
	}
	started := make(map[int]bool, len(op.Started))
	for _, k := range op.Started {
		started[k] = true
	}
	seen := map[partKey]bool{}
	for k := from; k < len(mp.moves); k++ {
		m := mp.moves[k]
		pk := partKey{m.Topic, m.Partition}
		if seen[pk] {
			continue
		}
		seen[pk] = true
		var open []int // the partition's moves from Group on
		for _, j := range mp.parts[pk] {
			if j >= from {
				open = append(open, j)
			}
		}
		at, state, reason := -1, engine.MovePending, ""
		var ask *Assignment
		for i := len(open) - 1; i >= 0; i-- {
			j := open[i]
			c := classify(mp.moves[j], st.parts[pk], st.reass[pk], st.confirmed[pk])
			if c.state == moveConflict {
				reason = c.reason // the earliest move's, in the end
				if c.union && ask == nil && (started[j] || submitted[j]) {
					ask = &Assignment{Topic: m.Topic, Partition: m.Partition, Replicas: mp.moves[j].NewReplicas}
				}
				continue
			}
			if c.state != movePending && !started[j] && !submitted[j] {
				// A move never started can only be pending: someone else
				// moved the partition where it leads (or is moving it there).
				if reason == "" {
					reason = fmt.Sprintf("its replicas are %v, where a move of the plan that was never started leads, so someone else moved it", st.parts[pk].Replicas)
				}
				continue
			}
			at = i
			switch c.state {
			case moveDone:
				state = engine.MoveDone
			case moveInFlight:
				state = engine.MoveInFlight
			default:
				state = engine.MovePending
				if submitted[j] {
					state = engine.MoveInFlight
				}
			}
			break
		}
		if at < 0 {
			conflicts = append(conflicts, fmt.Sprintf("%s p%d: %s", m.Topic, m.Partition, reason))
			if ask != nil {
				unconfirmed = append(unconfirmed, *ask)
			}
			continue
		}
		for i, j := range open {
			switch {
			case i < at:
				states[j] = engine.MoveDone
			case i == at:
				states[j] = state
			}
		}
	}
	return states, conflicts, unconfirmed
}

// runMoves runs the plan's moves from op.Group on until every one is done,
// the run's time budget is spent with nothing in flight (pause), or an
// error stops it.
func (e *Executor) runMoves(ctx context.Context, op *Operation) error {
	r := e.newMoveRun(op)
	defer r.dropRelease(ctx)
	conflicted := 0 // consecutive polls that saw a conflict
	for {
		began := e.d.Clock.Now()
		st, err := e.observe(ctx)
		if err != nil {
			return err
		}
		cost := e.d.Clock.Now().Sub(began)
		r.keepConfirmed(st)
		st.confirmed = r.confirmed
		states, conflicts, unconfirmed := r.mp.states(op, st, r.submitted)
		if len(unconfirmed) > 0 {
			got := e.confirmTargets(ctx, op, unconfirmed)
			maps.Copy(r.confirmed, got)
			if len(got) > 0 {
				states, conflicts, _ = r.mp.states(op, st, r.submitted)
			}
		}
		if len(conflicts) > 0 {
			// A conflict counts only when it is still there after a few
			// polls: a broker's metadata can lag the controller for a
			// moment (a topic created just before the plan reads as
			// missing).
			if conflicted++; conflicted >= conflictPolls {
				return e.abandon(ctx, op, conflicts)
			}
			if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
				return err
			}
			continue
		}
		conflicted = 0
		moving, end, err := r.step(ctx, st, states)
		if end {
			return err
		}
		if err := r.tend(ctx, moving); err != nil {
			return err
		}
		if err := e.d.Clock.Sleep(ctx, e.pollWait(began, cost)); err != nil {
			return err
		}
	}
}

// moveRun is what one runMoves call keeps from poll to poll.
type moveRun struct {
	e            *Executor
	op           *Operation
	mp           *movePlan
	maxPerBroker int
	perStep      int
	submitted    map[int]bool // this run's submissions
	ahead        map[int]bool // moves not started whose entries this run added
	// confirmed are the targets the controller confirmed for partitions
	// that brokers still show on the old and new replicas together
	// (confirmTargets): asked once, not at every poll of the lag.
	confirmed map[partKey][]int32
	// releasing is the release of finished moves' entries, running in the
	// background across the poll's wait; it is awaited before any other
	// change to the topics' throttle lists (a removal that empties a list
	// deletes it, and an APPEND landing between its read and its delete
	// would be lost), and before the run returns.
	releasing                func(context.Context) error
	throttled                bool // the moves in flight at the start are throttled
	lastAdjust, lastProgress time.Time
}

// keepConfirmed forgets the confirmations of partitions that no longer
// read as on more replicas than their confirmed target with nothing
// listed: the broker caught up, or the partition moves again.
func (r *moveRun) keepConfirmed(st clusterState) {
	maps.DeleteFunc(r.confirmed, func(pk partKey, target []int32) bool {
		p := st.parts[pk]
		return p == nil || st.reass[pk] != nil || len(p.Replicas) <= len(target)
	})
}

func (e *Executor) newMoveRun(op *Operation) *moveRun {
	maxPerBroker := op.Plan.MaxMovesPerBroker
	if maxPerBroker <= 0 {
		maxPerBroker = op.Options.MaxMovesPerBroker
	}
	perStep := op.Plan.MaxMovesPerStep
	if perStep <= 0 {
		perStep = op.Options.MaxMovesPerStep
	}
	if perStep <= 0 {
		perStep = engine.DefaultMaxMovesPerStep
	}
	if len(op.Started) == 0 && op.StepsSubmitted > 0 {
		// A record from before moves were recorded one by one: its group
		// in progress was submitted whole.
		op.Started = op.running()
	}
	now := e.d.Clock.Now()
	return &moveRun{e: e, op: op, mp: newMovePlan(op.Plan), maxPerBroker: maxPerBroker, perStep: perStep,
		submitted: map[int]bool{}, ahead: map[int]bool{}, confirmed: map[partKey][]int32{}, lastAdjust: now, lastProgress: now}
}

// awaitRelease waits for the release in the background, if any.
func (r *moveRun) awaitRelease(ctx context.Context) error {
	if r.releasing == nil {
		return nil
	}
	rel := r.releasing
	r.releasing = nil
	return rel(ctx)
}

// dropRelease finishes the release still in the background when the run
// ends on an error: the entries stay recorded if the removal did not
// finish, and a later removal of entries already gone changes nothing.
func (r *moveRun) dropRelease(ctx context.Context) {
	if r.releasing != nil {
		_ = r.releasing(context.WithoutCancel(ctx))
	}
}

// step acts on one poll's move states: it counts the moves that finished,
// starts those the schedule allows and releases the finished moves'
// entries. It returns how many moves are in flight, or end (with the run's
// error, nil when it finished or paused) when the run is over.
func (r *moveRun) step(ctx context.Context, st clusterState, states []engine.MoveState) (moving int, end bool, err error) {
	e, op, mp := r.e, r.op, r.mp
	finished, inFlight := r.tally(states)
	if err := e.advanceGroups(ctx, op, mp, states); err != nil {
		return 0, true, err
	}
	if op.Group >= len(op.Plan.Groups) {
		return 0, true, r.finish(ctx)
	}
	if !r.throttled {
		// A resumed run throttles what is in flight again: idempotent,
		// and someone may have removed the entries meanwhile.
		r.throttled = true
		var ms []engine.Move
		for _, k := range inFlight {
			ms = append(ms, mp.moves[k])
		}
		if err := e.throttle(ctx, op, ms); err != nil {
			return 0, true, err
		}
	}

	// Once the run's budget is spent (and it has finished a group),
	// nothing new starts; the moves in flight finish, then it pauses.
	var ready []int
	if spent := e.advanced && e.outOfTime(); !spent {
		ready = mp.sched.Ready(states, r.maxPerBroker)
	} else if len(inFlight) == 0 {
		if err := r.awaitRelease(ctx); err != nil {
			return 0, true, err
		}
		return 0, true, e.pause(ctx, op)
	}
	active, err := r.start(ctx, st, states, inFlight, ready)
	if err != nil {
		return 0, true, err
	}
	// Entries an active move or one throttled ahead shares (the next
	// move of the same partition) stay.
	if len(finished) > 0 {
		if err := r.awaitRelease(ctx); err != nil {
			return 0, true, err
		}
		for k := range r.ahead {
			active = append(active, mp.moves[k])
		}
		r.releasing = e.releaseThrottles(ctx, op, finished, active)
		if err := e.save(ctx, op); err != nil { // the count
			return 0, true, err
		}
	}
	return len(inFlight) + len(ready), false, nil
}

// tally counts the started moves that finished, which lose their throttle
// entries at once, and lists those still in flight.
func (r *moveRun) tally(states []engine.MoveState) (finished []engine.Move, inFlight []int) {
	op, mp := r.op, r.mp
	for _, k := range op.Started {
		switch states[k] {
		case engine.MoveDone:
			if !slices.Contains(op.Finished, k) {
				op.Finished = append(op.Finished, k)
				op.MovesDone++
				op.BytesDone += mp.moves[k].Bytes
				finished = append(finished, mp.moves[k])
			}
		case engine.MoveInFlight:
			inFlight = append(inFlight, k)
		}
	}
	slices.Sort(op.Finished)
	return finished, inFlight
}

// finish ends a run whose moves are all done: what is left of the
// throttle entries (moves another run finished) goes.
func (r *moveRun) finish(ctx context.Context) error {
	e, op := r.e, r.op
	if err := r.awaitRelease(ctx); err != nil {
		return err
	}
	if err := e.d.Kafka.UnthrottleReplicas(ctx, op.ThrottledReplicas); err != nil {
		return fmt.Errorf("removing the replica throttles of operation %s: %w", op.ID, err)
	}
	op.ThrottledReplicas = nil
	op.Started, op.Finished = nil, nil
	return e.save(ctx, op)
}

// start throttles and submits the ready moves, and throttles ahead the
// moves that follow them. It returns the active moves: those in flight
// and those starting now.
func (r *moveRun) start(ctx context.Context, st clusterState, states []engine.MoveState, inFlight, ready []int) ([]engine.Move, error) {
	e, op, mp := r.e, r.op, r.mp
	var active []engine.Move
	var need []int32
	for _, k := range append(slices.Clone(inFlight), ready...) {
		active = append(active, mp.moves[k])
		need = union(need, union(mp.moves[k].OldReplicas, mp.moves[k].NewReplicas))
	}
	slices.Sort(need)
	if err := checkBrokersUp(st.brokers, without(need, op.DeadBrokers), op); err != nil {
		return nil, err
	}
	// A freed slot waits for the next move's submission only: its
	// entries were added while the moves before it copied
	// (throttleAhead), and the finished moves' entries go after it.
	if err := e.throttleStarting(ctx, op, mp, ready, r.ahead, r.awaitRelease); err != nil {
		return nil, err
	}
	for _, k := range ready {
		delete(r.ahead, k)
	}
	if err := e.submit(ctx, op, mp, ready, r.perStep, r.submitted); err != nil {
		return nil, err
	}
	if len(ready) > 0 {
		// Awaited before throttleAhead, not inside the call that adds:
		// throttleAhead leaves out the entries already recorded, and an
		// entry the release is removing is recorded until it is gone.
		if err := r.awaitRelease(ctx); err != nil {
			return nil, err
		}
		if err := e.throttleAhead(ctx, op, mp, states, ready, r.maxPerBroker, r.ahead); err != nil {
			return nil, err
		}
	}
	return active, nil
}

// tend adjusts the throttle and logs the progress, each at its interval.
// moving is how many moves are in flight.
func (r *moveRun) tend(ctx context.Context, moving int) error {
	e, op := r.e, r.op
	if e.d.Advisor != nil && e.d.Clock.Now().Sub(r.lastAdjust) >= e.s.AdjustInterval {
		r.lastAdjust = e.d.Clock.Now()
		if err := e.adjustThrottle(ctx, op); err != nil {
			return err
		}
	}
	e.sample(ctx, op, false)
	// An apply that runs for hours shows only "Still modifying…":
	// the INFO log is where a user follows it, metrics block or not.
	if now := e.d.Clock.Now(); now.Sub(r.lastProgress) >= e.s.ProgressInterval {
		r.lastProgress = now
		f := groupFields(op, op.Plan.Groups[op.Group])
		f["phase"] = string(op.Phase)
		f["moves_in_flight"] = moving
		if op.ThrottleRate > 0 {
			// Here only: the estimate simulates the moves left, which
			// takes a moment on a plan of thousands.
			atThrottle := op.Remaining(op.ThrottleRate).Duration
			f["eta"] = atThrottle.String()
			// Once the copy's pace is known, the re-estimate is the
			// ETA, and the one at the throttle is kept beside it.
			if left, ok := op.projectedLeft(now); ok {
				f["eta"], f["eta_at_throttle"] = left.Round(time.Second).String(), atThrottle.String()
			}
		}
		e.d.Log.Info(ctx, "reassignment progress", f)
	}
	return nil
}

// advanceGroups moves op.Group past every group whose moves are all done
// (each already counted as it finished).
func (e *Executor) advanceGroups(ctx context.Context, op *Operation, mp *movePlan, states []engine.MoveState) error {
	advanced := false
	for op.Group < len(op.Plan.Groups) {
		g := op.Plan.Groups[op.Group]
		for k := mp.first[op.Group]; k < mp.first[op.Group+1]; k++ {
			if states[k] != engine.MoveDone {
				if advanced {
					return e.save(ctx, op)
				}
				return nil
			}
		}
		op.Group++
		next := len(mp.moves)
		if op.Group < len(op.Plan.Groups) {
			next = mp.first[op.Group]
		}
		op.Started = slices.DeleteFunc(op.Started, func(k int) bool { return k < next })
		op.Finished = slices.DeleteFunc(op.Finished, func(k int) bool { return k < next })
		// Steps of the new group already submitted, for those who follow
		// the record: one at least when any of its moves is.
		op.StepsSubmitted = 0
		if slices.ContainsFunc(op.Started, func(k int) bool { return k < mp.first[min(op.Group+1, len(mp.first)-1)] }) {
			op.StepsSubmitted = 1
		}
		e.advanced = true
		advanced = true
		e.d.Log.Info(ctx, "reassignment group done", groupFields(op, g))
	}
	return e.save(ctx, op)
}

// throttle adds the throttle entries of the moves that copy. Only recorded
// entries are ever removed, so the entries about to be added are recorded
// (saved) before they are added: a run killed in between, or cut off by
// its context, leaves them recorded, and removing an entry that never took
// changes nothing. Once it has begun it finishes the call even when ctx
// ends (a timeout, an interrupt).
func (e *Executor) throttle(ctx context.Context, op *Operation, ms []engine.Move) error {
	return e.addThrottles(ctx, op, throttleEntries(ms), len(ms))
}

// addThrottles adds entries for n moves, as throttle does.
func (e *Executor) addThrottles(ctx context.Context, op *Operation, ts []ThrottledReplicas, n int) error {
	if len(ts) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), throttleRecordTimeout)
	defer cancel()
	err := e.d.Kafka.ThrottleReplicas(tctx, ts, func(adding []ThrottledReplicas) error {
		op.ThrottledReplicas = mergeThrottles(op.ThrottledReplicas, adding)
		return e.save(tctx, op)
	})
	if err != nil {
		return fmt.Errorf("throttling the replicas of %d move(s) of operation %s: %w", n, op.ID, err)
	}
	return ctx.Err()
}

// throttleRecordTimeout bounds adding throttle entries and recording them
// once the run's context has ended.
const throttleRecordTimeout = time.Minute

// throttleStarting throttles the ready moves that this run did not
// throttle ahead, once awaitRelease is done, and records them all as
// started.
func (e *Executor) throttleStarting(ctx context.Context, op *Operation, mp *movePlan, ready []int, ahead map[int]bool, awaitRelease func(context.Context) error) error {
	if len(ready) == 0 {
		return nil
	}
	var ms []engine.Move
	begun := map[int]bool{} // groups with a move started already
	for _, k := range op.Started {
		begun[mp.group[k]] = true
	}
	for _, k := range ready {
		if !ahead[k] {
			ms = append(ms, mp.moves[k])
		}
		if g := mp.group[k]; !begun[g] {
			begun[g] = true
			f := groupFields(op, op.Plan.Groups[g])
			f["group"] = fmt.Sprintf("%d/%d", g+1, len(op.Plan.Groups))
			e.d.Log.Info(ctx, "reassignment group starting", f)
		}
	}
	if len(ms) > 0 {
		if err := awaitRelease(ctx); err != nil {
			return err
		}
		if err := e.throttle(ctx, op, ms); err != nil {
			return err
		}
	}
	// Recorded before submitted: a run killed in between leaves moves
	// recorded that Kafka never got, which the next run submits again.
	for _, k := range ready {
		if !slices.Contains(op.Started, k) {
			op.Started = append(op.Started, k)
		}
	}
	slices.Sort(op.Started)
	return e.save(ctx, op)
}

// throttleAhead adds the entries of the moves that start next
// (Schedule.Next) while those just submitted copy, so that a slot that
// frees costs the next move its submission only. Once the release of the
// finished moves' entries is done, never beside it (see runMoves). The
// entries are safe early: a follower entry names a broker that holds no
// replica of the partition yet (its earlier moves are done, so its
// replicas are the move's old ones), and Kafka's leader throttles only
// followers out of the ISR (ReplicaManager.shouldLeaderThrottle), which
// the move would throttle as soon as it started anyway.
func (e *Executor) throttleAhead(ctx context.Context, op *Operation, mp *movePlan, states []engine.MoveState, ready []int, maxPerBroker int, ahead map[int]bool) error {
	var ms []engine.Move
	for _, k := range mp.sched.Next(states, ready, maxPerBroker) {
		if !ahead[k] {
			ahead[k] = true
			ms = append(ms, mp.moves[k])
		}
	}
	return e.addThrottles(ctx, op, subtractThrottles(throttleEntries(ms), op.ThrottledReplicas), len(ms))
}

// submit submits the ready moves, throttled and recorded, in steps of at
// most perStep.
func (e *Executor) submit(ctx context.Context, op *Operation, mp *movePlan, ready []int, perStep int, submitted map[int]bool) error {
	for chunk := range slices.Chunk(ready, perStep) {
		if err := ctx.Err(); err != nil {
			return err
		}
		as := make([]Assignment, len(chunk))
		for i, k := range chunk {
			m := mp.moves[k]
			as[i] = Assignment{Topic: m.Topic, Partition: m.Partition, Replicas: slices.Clone(m.NewReplicas)}
		}
		if err := e.submitCordoned(ctx, op, as); err != nil {
			return fmt.Errorf("submitting %d move(s) of group %d/%d: %w", len(as), mp.group[chunk[0]]+1, len(op.Plan.Groups), err)
		}
		for _, k := range chunk {
			submitted[k] = true
		}
		if slices.ContainsFunc(chunk, func(k int) bool { return mp.group[k] == op.Group }) {
			op.StepsSubmitted++
		}
		if err := e.save(ctx, op); err != nil {
			return err
		}
	}
	return nil
}
