package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// Deps are the ports an Executor drives.
type Deps struct {
	Kafka Kafka
	// Scaler is needed only by operations that add or remove brokers.
	Scaler Scaler
	// Placer is needed only by operations that create partitions.
	Placer Placer
	Store  Store
	// Advisor adjusts the throttle; nil keeps the initial rate.
	Advisor RateAdvisor
	Clock   Clock
	Log     Logger
	// Lease keeps operations on one cluster from overlapping; every entry
	// point that changes the cluster runs under it (see Exclusive). Nil
	// runs without it (tests of a single executor).
	Lease *Lessee
}

// Settings tune how the executor waits.
type Settings struct {
	// PollInterval is how often a running group is checked (default
	// engine.DefaultPollInterval, which the ETA counts with).
	PollInterval time.Duration
	// AdjustInterval is how often the Advisor is asked (default 30s).
	AdjustInterval time.Duration
	// ProgressInterval is how often a wait logs its progress at INFO,
	// whatever the metrics settings (default 30s).
	ProgressInterval time.Duration
	// MinThrottle and MaxThrottle bound any rate the Advisor proposes.
	MinThrottle, MaxThrottle int64
	// MaxRunDuration is the time budget of one run (the resource's
	// max_apply_duration), counted from New: once it has passed, no new
	// reassignment group is started, provided the run has finished one,
	// so that every run moves data whatever the budget. The group in
	// flight finishes (so nothing of ours is left reassigning between
	// runs), the throttles go, the progress is saved and the call returns
	// without error, with the operation unfinished and PausedAt set: the
	// next call resumes it. Zero is no limit. It is independent of ctx: a
	// ctx that ends first still stops the run with its error, wherever it
	// falls.
	MaxRunDuration time.Duration
}

// Executor runs operations. It is not safe for concurrent use on the same
// operation key; Terraform applies one resource instance at a time.
type Executor struct {
	d Deps
	s Settings
	// started is when this executor was made: MaxRunDuration counts from
	// it, so a wait for the lease counts too, as it does against a run's
	// time limit.
	started time.Time
	// advanced says this executor has finished a reassignment group: a
	// run pauses only after it has, so every run moves data, whatever the
	// budget.
	advanced bool
	// held is the lease this executor holds while inside Exclusive.
	held *Held
}

// New returns an Executor; missing Clock and Log default to the system clock
// and silence.
func New(d Deps, s Settings) *Executor {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.Log == nil {
		d.Log = nopLogger{}
	}
	if s.PollInterval <= 0 {
		s.PollInterval = engine.DefaultPollInterval
	}
	if s.ProgressInterval <= 0 {
		s.ProgressInterval = 30 * time.Second
	}
	if s.AdjustInterval <= 0 {
		s.AdjustInterval = 30 * time.Second
	}
	return &Executor{d: d, s: s, started: d.Clock.Now()}
}

// errPaused ends a run that reached MaxRunDuration between two groups;
// Resume returns nil for it.
var errPaused = errors.New("the run's time budget is spent")

// outOfTime reports whether MaxRunDuration has passed.
func (e *Executor) outOfTime() bool {
	return e.s.MaxRunDuration > 0 && e.d.Clock.Now().Sub(e.started) >= e.s.MaxRunDuration
}

// pause ends a run that spent its budget between two groups: nothing of
// ours is in flight, so every throttle goes (a paused operation may wait
// days for its next run, and the rates are set again when it resumes), the
// cordons stay (the leaving brokers must still take no new replica), and
// the record says where the next run starts.
func (e *Executor) pause(ctx context.Context, op *Operation) error {
	if err := e.clearThrottles(ctx, op); err != nil {
		return err
	}
	op.PausedAt = e.d.Clock.Now().UTC()
	op.LastError = ""
	f := planFields(op)
	f["groups_done"] = op.Group
	f["bytes_done"] = op.BytesDone
	f["max_run_duration"] = e.s.MaxRunDuration.String()
	e.d.Log.Info(ctx, "operation paused: the run's time budget is spent; the next run continues", f)
	if err := e.save(ctx, op); err != nil {
		return err
	}
	return errPaused
}

// Resume drives op from its phase to completion, saving it after every
// change of state. When ctx ends it submits nothing more and returns with
// the saved state truthful: the next Resume continues from there.
//
// A run that reaches MaxRunDuration between two groups returns nil with op
// unfinished and op.PausedAt set.
func (e *Executor) Resume(ctx context.Context, op *Operation) (err error) {
	defer func() {
		if errors.Is(err, errPaused) {
			err = nil
			return
		}
		if err != nil {
			e.recordError(ctx, op, err)
		}
	}()
	op.PausedAt = time.Time{}
	if !op.Done() {
		if err := e.cordon(ctx, op); err != nil {
			return err
		}
	}
	for !op.Done() {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		switch op.Phase {
		case PhaseAddBrokers:
			err = e.addBrokers(ctx, op)
		case PhaseReassign:
			err = e.reassign(ctx, op)
		case PhaseFinish:
			err = e.finish(ctx, op)
		case PhaseRemoveBrokers:
			err = e.removeBrokers(ctx, op)
		default:
			return fmt.Errorf("operation %s is in unknown phase %q; this is a bug in kafkascale", op.ID, op.Phase)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recordError saves why the run stopped, even when ctx has ended, so the
// next apply can tell the user.
func (e *Executor) recordError(ctx context.Context, op *Operation, err error) {
	op.LastError = err.Error()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if serr := e.save(sctx, op); serr != nil {
		e.d.Log.Warn(ctx, "could not record the operation's error", map[string]any{"operation": op.ID, "error": serr.Error()})
	}
}

func (e *Executor) save(ctx context.Context, op *Operation) error {
	op.UpdatedAt = e.d.Clock.Now().UTC()
	if e.held != nil {
		e.held.SetOperation(op.ID)
	}
	if err := e.d.Store.Save(ctx, op); err != nil {
		return fmt.Errorf("saving the progress of operation %s: %w", op.ID, err)
	}
	return nil
}

func (e *Executor) enter(ctx context.Context, op *Operation, p Phase) error {
	op.Phase = p
	op.StepsSubmitted = 0
	if p == PhaseCompleted {
		op.CompletedAt = e.d.Clock.Now().UTC()
		op.LastError = ""
	}
	e.d.Log.Info(ctx, "operation phase", map[string]any{"operation": op.ID, "kind": string(op.Kind), "phase": string(p)})
	return e.save(ctx, op)
}

// reassign runs the plan's groups from op.Group on.
func (e *Executor) reassign(ctx context.Context, op *Operation) error {
	if op.Plan == nil {
		return fmt.Errorf("operation %s has no plan in phase %s; this is a bug in kafkascale", op.ID, op.Phase)
	}
	if len(op.ThrottledBrokers) == 0 {
		op.ThrottledBrokers = without(throttledBrokers(op.Plan), op.DeadBrokers)
	}
	if len(op.Plan.Groups) > op.Group && len(op.ThrottledBrokers) > 0 {
		// Re-set on every run: idempotent, and a resumed run may follow
		// a broker restart or a throttle someone removed.
		if err := e.d.Kafka.SetThrottle(ctx, op.ThrottledBrokers, op.ThrottleRate); err != nil {
			return fmt.Errorf("setting the replication throttle of %d B/s on brokers %v: %w", op.ThrottleRate, op.ThrottledBrokers, err)
		}
	}
	for op.Group < len(op.Plan.Groups) {
		// A group of which nothing is submitted yet waits for the next
		// run once the budget is spent; one already submitted (by a run
		// that was killed) is finished first.
		if op.StepsSubmitted == 0 && e.advanced && e.outOfTime() {
			return e.pause(ctx, op)
		}
		if err := e.runGroup(ctx, op); err != nil {
			return err
		}
	}
	return e.enter(ctx, op, PhaseFinish)
}

// moveState is where one planned move stands in the cluster.
type moveState int

const (
	movePending  moveState = iota // not submitted: replicas are still the old ones
	moveInFlight                  // Kafka is reassigning it towards the plan
	moveDone                      // replicas are the new ones
	moveConflict                  // the partition went somewhere the plan did not send it
)

// conflictPolls is how many polls in a row must see a conflict before the
// operation is abandoned: fewer would take a moment of metadata lag for a
// change made outside kafkascale.
const conflictPolls = 5

type classified struct {
	state  moveState
	reason string
}

func classify(m engine.Move, p *PartitionStatus, r *Reassignment) classified {
	switch {
	case p == nil:
		return classified{moveConflict, "the partition no longer exists"}
	case r != nil && engine.SameMembers(r.target(), m.NewReplicas):
		return classified{state: moveInFlight}
	case r != nil:
		return classified{moveConflict, fmt.Sprintf("it is being reassigned to %v by someone else; the plan sends it to %v", r.target(), m.NewReplicas)}
	case engine.SameMembers(p.Replicas, m.NewReplicas):
		return classified{state: moveDone}
	case engine.SameMembers(p.Replicas, m.OldReplicas):
		// Checked before the union: a move that only removes replicas (a
		// lower replication factor) has its old replicas as the union, and
		// calling it in flight would mean it is never submitted. A drop
		// the controller has finished but this broker's metadata does not
		// show yet reads as pending too: waitGroup waits for it, and a
		// resumed group submits it again, which the controller, already
		// at that target, takes as a no-op.
		return classified{state: movePending}
	case engine.SameMembers(p.Replicas, union(m.OldReplicas, m.NewReplicas)):
		// Metadata shows old and new replicas together while the move
		// runs, and brokers learn the end of a reassignment a moment after
		// the controller stops listing it.
		return classified{state: moveInFlight}
	default:
		return classified{moveConflict, fmt.Sprintf("its replicas are %v; the plan expected %v (before) or %v (after)", p.Replicas, m.OldReplicas, m.NewReplicas)}
	}
}

type partKey struct {
	topic string
	part  int32
}

type clusterState struct {
	parts   map[partKey]*PartitionStatus
	reass   map[partKey]*Reassignment
	brokers []BrokerStatus
}

func (e *Executor) observe(ctx context.Context) (clusterState, error) {
	st := clusterState{parts: map[partKey]*PartitionStatus{}, reass: map[partKey]*Reassignment{}}
	ps, err := e.d.Kafka.Partitions(ctx)
	if err != nil {
		return st, err
	}
	for i := range ps {
		st.parts[partKey{ps[i].Topic, ps[i].Partition}] = &ps[i]
	}
	rs, err := e.d.Kafka.Reassignments(ctx)
	if err != nil {
		return st, err
	}
	for i := range rs {
		st.reass[partKey{rs[i].Topic, rs[i].Partition}] = &rs[i]
	}
	st.brokers, err = e.d.Kafka.Brokers(ctx)
	return st, err
}

// ConflictError says that partitions of the plan were changed outside this
// operation, so the plan cannot go on safely.
type ConflictError struct {
	Operation string
	Conflicts []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("operation %s stopped: %d partition(s) changed outside kafkascale, so its plan is out of date and nothing more was submitted: %s. "+
		"Run apply again to plan anew from the cluster as it is now", e.Operation, len(e.Conflicts), strings.Join(firstN(e.Conflicts, 10), "; "))
}

// BrokerDownError says a broker the running group needs is not available.
type BrokerDownError struct {
	Broker    int32
	Group     int
	Groups    int
	Operation string
}

func (e *BrokerDownError) Error() string {
	return fmt.Sprintf("broker %d went offline during group %d/%d of operation %s; nothing more was submitted. "+
		"Reassignments already submitted stay in Kafka and finish once the broker is back; run apply again then to resume",
		e.Broker, e.Group+1, e.Groups, e.Operation)
}

func (e *Executor) runGroup(ctx context.Context, op *Operation) error {
	g := op.Plan.Groups[op.Group]
	var (
		st        clusterState
		pending   [][]engine.Move // per step, the moves still to submit
		conflicts []string
		open      []engine.Move // moves not done yet
	)
	// A conflict counts only when it is still there after a few polls: a
	// broker's metadata can lag the controller for a moment (a topic
	// created just before the plan reads as missing).
	for polls := 1; ; polls++ {
		var err error
		if st, err = e.observe(ctx); err != nil {
			return err
		}
		pending, conflicts, open = nil, nil, nil
		for _, s := range g.Steps {
			var stepPending []engine.Move
			for _, m := range s.Moves {
				k := partKey{m.Topic, m.Partition}
				c := classify(m, st.parts[k], st.reass[k])
				switch c.state {
				case movePending:
					stepPending = append(stepPending, m)
					open = append(open, m)
				case moveInFlight:
					open = append(open, m)
				case moveConflict:
					conflicts = append(conflicts, fmt.Sprintf("%s p%d: %s", m.Topic, m.Partition, c.reason))
				}
			}
			if len(stepPending) > 0 {
				pending = append(pending, stepPending)
			}
		}
		if len(conflicts) == 0 || polls >= conflictPolls {
			break
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
			return err
		}
	}
	if err := checkBrokersUp(st.brokers, without(groupBrokers(g), op.DeadBrokers), op); err != nil {
		return err
	}
	if len(conflicts) > 0 {
		return e.abandon(ctx, op, conflicts)
	}

	fields := groupFields(op, g)
	e.d.Log.Info(ctx, "reassignment group starting", fields)

	if ts := throttleEntries(open); len(ts) > 0 {
		added, err := e.d.Kafka.ThrottleReplicas(ctx, ts)
		if err != nil {
			return fmt.Errorf("throttling the replicas of group %d/%d: %w", op.Group+1, len(op.Plan.Groups), err)
		}
		op.ThrottledReplicas = mergeThrottles(op.ThrottledReplicas, added)
		if err := e.save(ctx, op); err != nil {
			return err
		}
	}

	for _, step := range pending {
		if err := ctx.Err(); err != nil {
			return err
		}
		as := make([]Assignment, len(step))
		for i, m := range step {
			as[i] = Assignment{Topic: m.Topic, Partition: m.Partition, Replicas: slices.Clone(m.NewReplicas)}
		}
		if err := e.submitCordoned(ctx, op, as); err != nil {
			return fmt.Errorf("submitting step %d of group %d/%d: %w", op.StepsSubmitted+1, op.Group+1, len(op.Plan.Groups), err)
		}
		op.StepsSubmitted++
		if err := e.save(ctx, op); err != nil {
			return err
		}
	}

	if err := e.waitGroup(ctx, op, g, open); err != nil {
		return err
	}

	if err := e.d.Kafka.UnthrottleReplicas(ctx, op.ThrottledReplicas); err != nil {
		return fmt.Errorf("removing the replica throttles of group %d/%d: %w", op.Group+1, len(op.Plan.Groups), err)
	}
	op.ThrottledReplicas = nil
	op.MovesDone += len(g.Moves())
	op.BytesDone += g.Bytes
	op.Group++
	op.StepsSubmitted = 0
	e.advanced = true
	e.d.Log.Info(ctx, "reassignment group done", groupFields(op, g))
	return e.save(ctx, op)
}

// waitGroup polls until every open move of the group is done, adjusting the
// throttle on the way. It never submits anything.
func (e *Executor) waitGroup(ctx context.Context, op *Operation, g engine.Group, open []engine.Move) error {
	lastAdjust, lastProgress := e.d.Clock.Now(), e.d.Clock.Now()
	conflicted := 0 // consecutive polls that saw a conflict
	need := without(groupBrokers(g), op.DeadBrokers)
	released := map[partKey]bool{} // finished moves whose throttles are gone
	for {
		st, err := e.observe(ctx)
		if err != nil {
			return err
		}
		remaining := 0
		var conflicts []string
		var finished []engine.Move
		for _, m := range open {
			k := partKey{m.Topic, m.Partition}
			switch c := classify(m, st.parts[k], st.reass[k]); c.state {
			case moveDone:
				if !released[k] {
					released[k] = true
					finished = append(finished, m)
				}
			case moveConflict:
				conflicts = append(conflicts, fmt.Sprintf("%s p%d: %s", m.Topic, m.Partition, c.reason))
			default:
				remaining++
			}
		}
		if len(conflicts) > 0 {
			if conflicted++; conflicted >= conflictPolls {
				return e.abandon(ctx, op, conflicts)
			}
		} else {
			conflicted = 0
		}
		if remaining == 0 && len(conflicts) == 0 {
			return nil // the group's end removes what is left
		}
		if err := checkBrokersUp(st.brokers, need, op); err != nil {
			return err
		}
		if err := e.releaseThrottles(ctx, op, finished); err != nil {
			return err
		}
		if e.d.Advisor != nil && e.d.Clock.Now().Sub(lastAdjust) >= e.s.AdjustInterval {
			lastAdjust = e.d.Clock.Now()
			if err := e.adjustThrottle(ctx, op); err != nil {
				return err
			}
		}
		// An apply that runs for hours shows only "Still modifying…":
		// the INFO log is where a user follows it, metrics block or not.
		if now := e.d.Clock.Now(); now.Sub(lastProgress) >= e.s.ProgressInterval {
			lastProgress = now
			f := groupFields(op, g)
			f["phase"] = string(op.Phase)
			f["moves_in_flight"] = remaining
			e.d.Log.Info(ctx, "reassignment progress", f)
		}
		if err := e.d.Clock.Sleep(ctx, e.s.PollInterval); err != nil {
			return err
		}
	}
}

func sortedParts(m map[partKey]*PartitionStatus) []partKey {
	keys := make([]partKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b partKey) int {
		if a.topic != b.topic {
			return strings.Compare(a.topic, b.topic)
		}
		return int(a.part - b.part)
	})
	return keys
}

func planFields(op *Operation) map[string]any {
	return map[string]any{
		"operation":          op.ID,
		"groups":             len(op.Plan.Groups),
		"moves":              op.Plan.ReplicaMoves,
		"bytes":              op.Plan.TotalBytes,
		"estimated_duration": time.Duration(op.Plan.EstimatedSeconds * int64(time.Second)).String(),
		"eta":                op.Remaining(op.ThrottleRate).ETA.String(),
	}
}

func groupFields(op *Operation, g engine.Group) map[string]any {
	f := map[string]any{
		"operation":   op.ID,
		"group":       fmt.Sprintf("%d/%d", min(op.Group+1, len(op.Plan.Groups)), len(op.Plan.Groups)),
		"group_moves": len(g.Moves()),
		"group_bytes": g.Bytes,
		// The busiest broker's bytes set the group's copy time.
		"group_busiest_bytes": g.BusiestBrokerBytes,
		"moves_done":          fmt.Sprintf("%d/%d", op.MovesDone, len(op.Plan.Moves())),
		"bytes_done":          fmt.Sprintf("%d/%d", op.BytesDone, op.Plan.TotalBytes),
		"throttle":            op.ThrottleRate,
	}
	if op.ThrottleRate > 0 {
		f["eta"] = op.Remaining(op.ThrottleRate).Duration.String()
	}
	return f
}

func union(a, b []int32) []int32 {
	out := slices.Clone(a)
	for _, x := range b {
		if !contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func sortedKeys(m map[int32]bool) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func ids(bs []engine.Broker) []int32 {
	out := make([]int32, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}
