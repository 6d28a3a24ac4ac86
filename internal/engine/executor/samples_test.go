package executor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// A scale-out records when each phase began and samples of its copy: the
// bytes each receiving broker holds rise to what the plan copies onto it,
// the ETA falls to zero, and the record stays bounded.
func TestScaleRecordsPhasesAndSamples(t *testing.T) {
	r := newRig(t, 3, 12)
	// Each move takes 20 polls of 1s: many samples at one per 2s.
	r.f.reassignPolls = 20
	ex := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock},
		executor.Settings{PollInterval: time.Second, SampleInterval: 2 * time.Second})
	op, err := ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	var phases []executor.Phase
	for i, p := range op.Phases {
		phases = append(phases, p.Phase)
		if i > 0 && p.At.Before(op.Phases[i-1].At) {
			t.Errorf("phase %s begins at %s, before the phase before it (%s)", p.Phase, p.At, op.Phases[i-1].At)
		}
	}
	if want := fmt.Sprint([]executor.Phase{executor.PhaseAddBrokers, executor.PhaseReassign, executor.PhaseFinish, executor.PhaseCompleted}); fmt.Sprint(phases) != want {
		t.Fatalf("phases %v, want %s", phases, want)
	}
	if len(op.Samples) < 10 {
		t.Fatalf("%d samples of a copy of %d groups; want one every 2s", len(op.Samples), len(op.Plan.Groups))
	}
	traffic := op.Plan.Traffic()
	prev := map[int32]int64{}
	for i, s := range op.Samples {
		for b, n := range s.Received {
			if n < prev[b] {
				t.Errorf("sample %d: broker %d holds %d bytes, fewer than the %d of the sample before", i, b, n, prev[b])
			}
			if n > traffic[b].BytesIn {
				t.Errorf("sample %d: broker %d holds %d bytes, more than the %d the plan copies onto it", i, b, n, traffic[b].BytesIn)
			}
			prev[b] = n
		}
	}
	last := op.Samples[len(op.Samples)-1]
	for b, tr := range traffic {
		if tr.BytesIn > 0 && last.Received[b] != tr.BytesIn {
			t.Errorf("last sample: broker %d received %d bytes, want the plan's %d", b, last.Received[b], tr.BytesIn)
		}
	}
	if last.Phase != executor.PhaseCompleted || last.ETA != 0 {
		t.Errorf("last sample: phase %s, ETA %s; want completed, 0", last.Phase, last.ETA)
	}
	for _, s := range op.Samples[:2] {
		if s.ETA <= 0 {
			t.Errorf("a sample of a running operation has no ETA: %+v", s)
		}
	}
}

// The samples are thinned, not cut: past MaxProgressSamples the record
// still holds the first and the newest, and spans the whole operation.
func TestSamplesAreBounded(t *testing.T) {
	r := newRig(t, 3, 12)
	r.f.reassignPolls = 200
	ex := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock},
		executor.Settings{PollInterval: time.Second, SampleInterval: time.Second})
	op, err := ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(op.Samples); n > executor.MaxProgressSamples || n < executor.MaxProgressSamples/2 {
		t.Fatalf("%d samples; want between %d and %d", n, executor.MaxProgressSamples/2, executor.MaxProgressSamples)
	}
	first, last := op.Samples[0], op.Samples[len(op.Samples)-1]
	if first.Phase != executor.PhaseAddBrokers || last.Phase != executor.PhaseCompleted {
		t.Fatalf("samples run from %s to %s; want the whole operation", first.Phase, last.Phase)
	}
	b, err := executor.EncodeOperation(op)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples over %s, record %d bytes", len(op.Samples), last.At.Sub(first.At), len(b))
}

// A record from before the timeline reads as one without it.
func TestRecordWithoutTimelineReads(t *testing.T) {
	old := `{"version":1,"key":"cluster/x","id":"op-1","kind":"scale-out","phase":"completed","options":{},"group":0,"steps_submitted":0,"throttle_rate":0,"moves_done":0,"bytes_done":0,"started_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`
	op, err := executor.DecodeOperation([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if op.Phases != nil || op.Samples != nil {
		t.Fatalf("an old record read with a timeline: %+v %+v", op.Phases, op.Samples)
	}
}

// The copy runs at a fifth of the pace the throttle promises (each move
// takes 20 polls where its bytes at the throttle take about one second):
// the estimate at the throttle stays far off, and the re-estimate from the
// pace seen, from the first sample with a tenth of the bytes done, puts
// the finish within 15 % of the real one, counted on the time that was
// left at that first sample.
func TestReEstimateFollowsThePaceSeen(t *testing.T) {
	r := newRig(t, 3, 12)
	r.f.reassignPolls = 20
	log := &logRecorder{clock: r.clock}
	ex := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock, Log: log},
		executor.Settings{PollInterval: time.Second, SampleInterval: 2 * time.Second, ProgressInterval: 5 * time.Second})
	op, err := ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	// The progress lines give the re-estimate as eta once it is known,
	// and the estimate at the throttle beside it.
	reEstimated := 0
	for _, l := range log.lines {
		if l.msg == "reassignment progress" && l.fields["eta_at_throttle"] != nil && l.fields["eta"] != l.fields["eta_at_throttle"] {
			reEstimated++
		}
	}
	if reEstimated == 0 {
		t.Errorf("no progress line gives a re-estimate as eta beside eta_at_throttle")
	}
	end := op.UpdatedAt
	var tenth time.Time
	checked, farAtThrottle := 0, 0
	for i, s := range op.Samples {
		if s.Phase != executor.PhaseReassign || s.Done*10 < op.Plan.TotalBytes {
			continue
		}
		if tenth.IsZero() {
			tenth = s.At
		}
		if s.Projected <= 0 {
			t.Errorf("sample %d at %s: %d of %d bytes done and no re-estimate", i, s.At.Format(time.TimeOnly), s.Done, op.Plan.TotalBytes)
			continue
		}
		checked++
		off := s.At.Add(s.Projected).Sub(end)
		if frac := off.Seconds() / end.Sub(tenth).Seconds(); frac > 0.15 || frac < -0.15 {
			t.Errorf("sample %d at %s (%d of %d bytes done): re-estimate %s puts the finish %s from the real one, %+.0f%% of the %s left at a tenth done",
				i, s.At.Format(time.TimeOnly), s.Done, op.Plan.TotalBytes, s.Projected, off, 100*frac, end.Sub(tenth))
		}
		if s.ETA.Seconds() < 0.5*end.Sub(s.At).Seconds() {
			farAtThrottle++
		}
	}
	if checked < 5 {
		t.Fatalf("%d samples with a re-estimate past a tenth of the bytes; want at least 5", checked)
	}
	if farAtThrottle == 0 {
		t.Errorf("the estimate at the throttle was never off by half: the test's copy is not slower than the throttle promises")
	}
}
