package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// Topics is needed only by the changes of a topic's configs and its
	// deletion.
	Topics TopicAdmin
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
	// MinPollInterval, when set, lets a running reassignment be polled
	// sooner than PollInterval on a cluster where a poll is cheap: every
	// pollCostFactor times what the last poll took, between the two. A
	// move that finishes waits for the next poll to free its slots, so on
	// a small cluster a fixed second is most of a small move's time; on
	// one of a million partitions the poll itself takes that long. Zero
	// polls every PollInterval.
	MinPollInterval time.Duration
	// AdjustInterval is how often the Advisor is asked (default 30s).
	AdjustInterval time.Duration
	// ProgressInterval is how often a wait logs its progress at INFO,
	// whatever the metrics settings (default 30s).
	ProgressInterval time.Duration
	// SampleInterval is how often a running copy is sampled into the
	// operation's record (Operation.Samples; default
	// DefaultSampleInterval).
	SampleInterval time.Duration
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
	// ClearLeftThrottles asks every operation that succeeds (Scale,
	// CreateTopic, UpdateTopic, GrowTogether) to remove, as its last
	// step, the throttles finished or paused operations left behind
	// (ClearOrphanedThrottles); LeftThrottles says what it removed. A
	// caller that has just found none leaves it off, and saves the read.
	ClearLeftThrottles bool
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
	// othersCordon memoises othersCordoned by key: under the lease no run
	// of another operation changes its cordon, so one read serves every
	// submission of this executor's run.
	othersCordon map[string][]int32
	// lastSample is when the copy was last sampled, and sampleCost what
	// that took (sample).
	lastSample time.Time
	sampleCost time.Duration
	// left is what clearLeftThrottles did, once per Executor.
	left struct {
		done    bool
		removed []OrphanedThrottle
		err     error
	}
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
	if s.MinPollInterval <= 0 || s.MinPollInterval > s.PollInterval {
		s.MinPollInterval = s.PollInterval
	}
	if s.ProgressInterval <= 0 {
		s.ProgressInterval = 30 * time.Second
	}
	if s.AdjustInterval <= 0 {
		s.AdjustInterval = 30 * time.Second
	}
	if s.SampleInterval <= 0 {
		s.SampleInterval = DefaultSampleInterval
	}
	return &Executor{d: d, s: s, started: d.Clock.Now()}
}

// DefaultMinPollInterval is the MinPollInterval the provider runs with.
const DefaultMinPollInterval = 100 * time.Millisecond

// pollCostFactor keeps the polls of a running reassignment to about a
// fifth of the time or less (see Settings.MinPollInterval).
const pollCostFactor = 4

// pollWait is how long to wait after a poll that began at began and whose
// reading of the cluster took cost: the interval the cost allows, less
// what the poll has taken so far (its reads, starts and releases).
func (e *Executor) pollWait(began time.Time, cost time.Duration) time.Duration {
	interval := min(max(pollCostFactor*cost, e.s.MinPollInterval), e.s.PollInterval)
	return max(interval-e.d.Clock.Now().Sub(began), 0)
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

// ensureStore makes the store of operations (Ensurer) before an operation
// that records itself plans anything: its own topic's partitions are then
// part of the cluster the plan balances.
func (e *Executor) ensureStore(ctx context.Context) error {
	if en, ok := e.d.Store.(Ensurer); ok {
		if err := en.Ensure(ctx); err != nil {
			return fmt.Errorf("making the store of operations: %w", err)
		}
	}
	return nil
}

func (e *Executor) save(ctx context.Context, op *Operation) error {
	op.UpdatedAt = e.d.Clock.Now().UTC()
	if op.notePhase(op.UpdatedAt) {
		e.sample(ctx, op, true)
	}
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
