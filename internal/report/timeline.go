package report

import (
	"slices"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// Timeline is a recorded operation over time, from its record's phases and
// progress samples (executor.Operation.Phases and Samples).
type Timeline struct {
	StartedAt time.Time `json:"started_at"`
	// EndedAt is when the operation ended; zero while it runs.
	EndedAt time.Time   `json:"ended_at,omitzero"`
	Phases  []PhaseSpan `json:"phases"`
	Samples []Sample    `json:"samples"`
	// Receivers are the brokers the plan copies onto, by id.
	Receivers []Receiver `json:"receivers"`
}

// PhaseSpan is one phase, from when it began to when the next did (zero
// for the phase the operation is in or ended in).
type PhaseSpan struct {
	Phase   string    `json:"phase"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end,omitzero"`
	Seconds float64   `json:"seconds"`
}

// Sample is one progress sample; Seconds counts from StartedAt.
type Sample struct {
	At      time.Time `json:"at"`
	Seconds float64   `json:"seconds"`
	Phase   string    `json:"phase"`
	// Received is the bytes each receiving broker held, by broker id.
	Received map[int32]int64 `json:"received"`
	// Rates is the bytes/s each receiving broker received since the
	// sample before (none for the first).
	Rates    map[int32]float64 `json:"rates,omitempty"`
	Throttle int64             `json:"throttle"`
	// ETASeconds is what the estimate left at that moment, and
	// PredictedEndSeconds when it said the operation would end.
	ETASeconds          float64 `json:"eta_seconds"`
	PredictedEndSeconds float64 `json:"predicted_end_seconds"`
	// ReEstimatedEndSeconds is when the estimate made again from the
	// copy's pace said the operation would end; 0 before the pace was
	// known.
	ReEstimatedEndSeconds float64 `json:"re_estimated_end_seconds,omitempty"`
}

// Receiver is one receiving broker's copy: what it received, over how
// long, against the throttle.
type Receiver struct {
	Broker int32 `json:"broker"`
	// PlannedBytes is what the plan copies onto it; Bytes what the last
	// sample says it holds.
	PlannedBytes int64 `json:"planned_bytes"`
	Bytes        int64 `json:"bytes"`
	// Seconds runs from the copy's start (the reassign phase) to the
	// first sample that shows Bytes; AverageRate is Bytes over it.
	Seconds     float64 `json:"seconds"`
	AverageRate float64 `json:"average_rate"`
	// PeakRate is the fastest between two samples; Throttle the highest
	// rate in force.
	PeakRate float64 `json:"peak_rate"`
	Throttle int64   `json:"throttle"`
}

// timeline reads op's record over time; nil when it carries none (a
// record from before the timeline).
func timeline(op *executor.Operation) *Timeline {
	if len(op.Phases) == 0 && len(op.Samples) == 0 {
		return nil
	}
	t := &Timeline{StartedAt: op.StartedAt, Phases: []PhaseSpan{}, Samples: []Sample{}, Receivers: []Receiver{}}
	if op.Done() {
		t.EndedAt = op.CompletedAt
		if t.EndedAt.IsZero() {
			t.EndedAt = op.UpdatedAt
		}
	}
	for i, p := range op.Phases {
		span := PhaseSpan{Phase: string(p.Phase), Start: p.At}
		if i+1 < len(op.Phases) {
			span.End = op.Phases[i+1].At
			span.Seconds = span.End.Sub(span.Start).Seconds()
		}
		t.Phases = append(t.Phases, span)
	}
	since := func(at time.Time) float64 { return at.Sub(op.StartedAt).Seconds() }
	for i, s := range op.Samples {
		eta := s.ETA.Seconds()
		out := Sample{At: s.At, Seconds: since(s.At), Phase: string(s.Phase), Received: s.Received, Throttle: s.Throttle,
			ETASeconds: eta, PredictedEndSeconds: since(s.At) + eta}
		if s.Projected > 0 {
			out.ReEstimatedEndSeconds = since(s.At) + s.Projected.Seconds()
		}
		if out.Received == nil {
			out.Received = map[int32]int64{}
		}
		if i > 0 {
			prev := op.Samples[i-1]
			if dt := s.At.Sub(prev.At).Seconds(); dt > 0 {
				out.Rates = map[int32]float64{}
				for b, n := range s.Received {
					out.Rates[b] = float64(n-prev.Received[b]) / dt
				}
			}
		}
		t.Samples = append(t.Samples, out)
	}
	t.Receivers = receivers(op, t.Samples)
	return t
}

// receivers sums each receiving broker's copy over the samples.
func receivers(op *executor.Operation, samples []Sample) []Receiver {
	if op.Plan == nil || len(samples) == 0 {
		return []Receiver{}
	}
	copyStart := op.StartedAt
	for _, p := range op.Phases {
		if p.Phase == executor.PhaseReassign {
			copyStart = p.At
			break
		}
	}
	last := samples[len(samples)-1]
	var out []Receiver
	for b, tr := range op.Plan.Traffic() {
		if tr.BytesIn == 0 {
			continue
		}
		r := Receiver{Broker: b, PlannedBytes: tr.BytesIn, Bytes: last.Received[b]}
		reached := last.At
		for _, s := range samples {
			r.PeakRate = max(r.PeakRate, s.Rates[b])
			r.Throttle = max(r.Throttle, s.Throttle)
			if s.Received[b] >= r.Bytes && s.At.Before(reached) {
				reached = s.At
			}
		}
		if r.Seconds = reached.Sub(copyStart).Seconds(); r.Seconds > 0 {
			r.AverageRate = float64(r.Bytes) / r.Seconds
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Receiver) int { return int(a.Broker - b.Broker) })
	return out
}
