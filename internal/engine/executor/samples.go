package executor

import (
	"context"
	"slices"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// The operation's timeline, kept in its record for `kafkascale report`: when
// each phase began, and samples of the copy (bytes each receiving broker
// holds, the throttle and the ETA at that moment). Both are bounded: the
// record is rewritten at every step of an operation that may run for days.

// PhaseStart is when an operation entered a phase.
type PhaseStart struct {
	Phase Phase     `json:"phase"`
	At    time.Time `json:"at"`
}

// ProgressSample is how far an operation's copy had come at one moment.
type ProgressSample struct {
	At    time.Time `json:"at"`
	Phase Phase     `json:"phase"`
	// Received is, per broker the plan copies onto, the bytes it holds of
	// the replicas it gains: those of the moves done, counted as
	// Plan.Traffic counts them, and what the copies in flight hold so far
	// (when the cluster can say), each up to its planned size.
	Received map[int32]int64 `json:"received,omitempty"`
	// Throttle is the replication throttle in force, bytes/s per broker.
	Throttle int64 `json:"throttle"`
	// ETA is what was left at that moment at Throttle (Remaining).
	ETA time.Duration `json:"eta"`
	// Copy is the part of ETA that goes at the copy's pace: copying,
	// catching up and settling the groups left.
	Copy time.Duration `json:"copy,omitempty"`
	// Projected is the re-estimate of what was left at that moment: Copy
	// at the pace the copy kept up to then (projectETA), the rest as ETA
	// counts it. Zero until the pace is known.
	Projected time.Duration `json:"projected,omitempty"`
	// Done is the bytes done then, as Progress counts BytesDone.
	Done int64 `json:"done,omitempty"`
}

// Shown is what was shown as left at that moment (progress lines,
// kafkascale watch): the re-estimate once the pace is known, else the
// estimate at the throttle.
func (s ProgressSample) Shown() time.Duration {
	if s.Projected > 0 {
		return s.Projected
	}
	return s.ETA
}

// MaxProgressSamples bounds Samples: past it every other older sample
// goes, so the timeline covers the whole operation at a coarser grain.
const MaxProgressSamples = 240

// maxPhaseStarts bounds Phases: an operation enters each phase once, but
// a record may be resumed and cancelled in ways not foreseen.
const maxPhaseStarts = 32

// DefaultSampleInterval is how often a running copy is sampled unless
// Settings.SampleInterval says otherwise.
const DefaultSampleInterval = 10 * time.Second

// ReplicaSizer is what the Kafka port may also offer: the size of each
// replica's log on its broker (a replica not there yet is absent). With it
// a sample counts the copies in flight; without it, the moves done only.
type ReplicaSizer interface {
	ReplicaSizes(ctx context.Context, rs []Replica) (map[Replica]int64, error)
}

// notePhase records when op entered its phase, the first time it is saved
// in it, and reports whether it did.
func (op *Operation) notePhase(at time.Time) bool {
	if n := len(op.Phases); n > 0 && op.Phases[n-1].Phase == op.Phase {
		return false
	}
	op.Phases = append(op.Phases, PhaseStart{Phase: op.Phase, At: at})
	if n := len(op.Phases); n > maxPhaseStarts {
		op.Phases = slices.Delete(op.Phases, 1, n-maxPhaseStarts+1)
	}
	return true
}

// maxSampleEntries bounds the brokers counted over all Samples: a
// rebalance in place of hundreds of brokers receives on every one of them.
const maxSampleEntries = 24_000

// addSample appends s, thinning the older samples once there are more
// than MaxProgressSamples, or more than maxSampleEntries brokers in them:
// the first and the newest stay.
func (op *Operation) addSample(s ProgressSample) {
	op.Samples = append(op.Samples, s)
	for len(op.Samples) > 2 && (len(op.Samples) > MaxProgressSamples || sampleEntries(op.Samples) > maxSampleEntries) {
		kept := op.Samples[:1]
		for i := 1; i < len(op.Samples)-1; i++ {
			if i%2 == 0 {
				kept = append(kept, op.Samples[i])
			}
		}
		op.Samples = append(kept, op.Samples[len(op.Samples)-1])
	}
}

func sampleEntries(ss []ProgressSample) int {
	n := 0
	for _, s := range ss {
		n += len(s.Received)
	}
	return n
}

// received is the bytes each receiving broker holds of the replicas it
// gains: the moves done, plus sizes of the copies in flight (Copying) up
// to their planned size.
func (op *Operation) received(sizes map[Replica]int64) map[int32]int64 {
	if op.Plan == nil {
		return nil
	}
	out := map[int32]int64{}
	states, _ := op.moveStates(0)
	for k, m := range op.Plan.Moves() {
		if states[k] != engine.MoveDone || len(m.Adding) == 0 {
			continue
		}
		for _, b := range m.Adding {
			out[b] += m.Bytes / int64(len(m.Adding))
		}
	}
	for r, planned := range op.Copying() {
		out[r.Broker] += min(max(sizes[r], 0), planned)
	}
	return out
}

// sample records how far op's copy has come now. A phase change samples
// at once; within the copy, at most every SampleInterval, and never more
// often than a sample costs (the ETA simulates the moves left, a moment
// on a plan of thousands).
func (e *Executor) sample(ctx context.Context, op *Operation, force bool) {
	now := e.d.Clock.Now()
	if !force && now.Sub(e.lastSample) < max(e.s.SampleInterval, pollCostFactor*e.sampleCost) {
		return
	}
	e.lastSample = now
	var sizes map[Replica]int64
	if rs, ok := e.d.Kafka.(ReplicaSizer); ok && op.Phase == PhaseReassign {
		if copying := op.Copying(); len(copying) > 0 {
			want := make([]Replica, 0, len(copying))
			for r := range copying {
				want = append(want, r)
			}
			// A failed read costs the sample its copies in flight only.
			sizes, _ = rs.ReplicaSizes(ctx, want)
		}
	}
	p, parts := op.progress(sizes)
	s := ProgressSample{At: now.UTC(), Phase: op.Phase, Received: op.received(sizes), Throttle: op.ThrottleRate, ETA: p.ETA, Done: p.BytesDone}
	switch {
	case op.Plan == nil && op.ThrottleRate > 0 && !op.Done():
		// Brokers still to add: Progress has no plan to estimate, the
		// brokers' timings do.
		s.ETA = op.Remaining(op.ThrottleRate).Duration
	case p.ETA > 0 && op.Phase == PhaseReassign:
		s.Copy = parts.Copying + parts.CatchingUp + parts.Settling
		s.Projected = projectETA(op.Samples, s, e.s.SampleInterval, e.s.PollInterval)
	}
	op.addSample(s)
	e.sampleCost = e.d.Clock.Now().Sub(now)
}

// Pace: the estimate at the throttle assumes that each group's busiest
// broker receives at the throttle. It may not: many copies onto one
// receiver share it unevenly, a follower's fetches wait on a busy leader,
// and a small cluster's settle times vary. So once the copy has run a
// while, the estimate is made again from the pace it kept: the seconds of
// estimated copy it got through per second of wall time.

// minPaceShare is how much of the estimated copy must be behind before
// its pace is trusted: less is mostly the first group's start.
const minPaceShare = 0.05

// paceDeadZone: a copy up to this many poll intervals behind or ahead of
// its estimate says nothing of its pace. The estimate moves in steps of the
// poll interval (a move counts as done at the poll that sees it), and a
// group's start costs the copy a moment the estimate does not count. On real
// copies (make bench-eta) the first seconds ran up to 3 s late and the rest
// kept the throttle's pace; taking that lateness for the pace of the whole
// copy put the re-estimate at a tenth done 40 to 70 % over, where the
// estimate at the throttle was within 13 %. Beyond the dead zone the pace is
// what the copy kept, less the zone's seconds.
const paceDeadZone = 3

// maxSampleGap: two samples further apart than this many sample
// intervals have a stopped apply between them (the copy went on without
// it, or did not), so their pair says nothing of the pace.
const maxSampleGap = 5

// projectETA re-estimates cur, the sample being taken, from the samples of
// the copy before it: cur.Copy at the pace kept over every pair of
// consecutive samples (a change of throttle in between is scaled out; see
// paceDeadZone for poll), plus the rest of cur.ETA (verification, leader
// election, brokers to remove), which the copy's pace does not change. It
// is 0 while too little of the copy is behind to tell its pace.
func projectETA(before []ProgressSample, cur ProgressSample, interval, poll time.Duration) time.Duration {
	var series []ProgressSample
	for _, s := range before {
		if s.Phase == PhaseReassign && s.Copy > 0 && s.Throttle > 0 {
			series = append(series, s)
		}
	}
	series = append(series, cur)
	// A copy whose bytes cannot be read while in flight, and a group's
	// settling, show no progress until a move ends. The pace is taken up
	// to the last sample that showed some (moved), and the time since
	// then counts as spent at that pace.
	moved := len(series) - 1
	for moved > 0 && series[moved-1].Copy == cur.Copy && series[moved-1].Throttle == cur.Throttle {
		moved--
	}
	var done, spent, most float64
	for i := 1; i <= moved; i++ {
		a, b := series[i-1], series[i]
		most = max(most, a.Copy.Seconds())
		dt := b.At.Sub(a.At)
		if dt <= 0 || dt > maxSampleGap*interval {
			continue
		}
		// b's copy left, in seconds at a's throttle.
		left := b.Copy.Seconds() * float64(b.Throttle) / float64(a.Throttle)
		done += a.Copy.Seconds() - left
		spent += dt.Seconds()
	}
	if spent <= 0 || done < minPaceShare*most {
		return 0
	}
	// spent-done is how far the wall clock is behind the estimate's
	// seconds done (ahead when negative): up to the zone, that is not pace.
	zone := paceDeadZone * poll.Seconds()
	spent -= min(max(spent-done, -zone), zone)
	pace := 1.0
	if spent > 0 {
		pace = min(max(done/spent, 0.05), 20)
	}
	copyLeft := max(time.Duration(float64(cur.Copy)/pace)-cur.At.Sub(series[moved].At), 0)
	return copyLeft + cur.ETA - cur.Copy
}
