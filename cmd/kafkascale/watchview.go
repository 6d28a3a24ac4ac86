package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// view is how watch shows what it reads: a progress bar on a terminal,
// plain lines in a pipe or a CI log, JSON lines for scripts.
type view interface {
	// none: no operation is recorded.
	none(now time.Time)
	// last: nothing is unfinished; op is the last operation.
	last(op *executor.Operation)
	following(op *executor.Operation)
	// reading shows one reading of an unfinished operation; rate is the
	// copy rate in bytes/s, -1 until it can be measured.
	reading(now time.Time, op *executor.Operation, p executor.Progress, rate float64)
	readFailed(now time.Time, err error)
	// ended shows the last reading, of an operation that ended.
	ended(now time.Time, op *executor.Operation, p executor.Progress, rate float64)
	interrupted()
}

// newView picks the view for out: JSON lines when asked, a progress bar
// when out is a terminal, plain lines otherwise.
func newView(out io.Writer, format outputFormat, interval time.Duration) view {
	if format == outputJSON {
		return &jsonView{out: out}
	}
	f, ok := out.(*os.File)
	return &textView{out: out, bar: ok && term.IsTerminal(int(f.Fd())), interval: interval}
}

// lineEvery is the longest a plain or JSON watch stays silent while the
// figures do not move: a log shows the watch is alive.
const lineEvery = time.Minute

// pacer says when a line is due: when what it shows changed, or lineEvery
// after the last line.
type pacer struct {
	shown string
	at    time.Time
}

func (p *pacer) due(now time.Time, what string) bool {
	if what == p.shown && now.Sub(p.at) < lineEvery {
		return false
	}
	p.shown, p.at = what, now
	return true
}

// textView writes for people: a bar on a terminal, else one plain line
// whenever the figures move. Either way each stage gets a line of its own.
type textView struct {
	out       io.Writer
	bar       bool
	interval  time.Duration
	pb        *progressbar.ProgressBar
	lastStage string
	pace      pacer
}

// line writes a line of its own, clearing the bar first.
func (v *textView) line(format string, args ...any) {
	if v.pb != nil {
		_ = v.pb.Clear()
	}
	fmt.Fprintf(v.out, format+"\n", args...)
}

func (v *textView) none(time.Time) {
	v.line("no operation is recorded on this cluster: nothing to watch")
}

func (v *textView) last(op *executor.Operation) {
	v.line("no unfinished operation; the last one, %s (%s, %s), is %s since %s",
		op.ID, op.Key, op.Kind, op.Phase, formatTime(op.UpdatedAt))
}

func (v *textView) following(op *executor.Operation) {
	v.line("following operation %s (%s, %s), started %s", op.ID, op.Key, op.Kind, formatTime(op.StartedAt))
}

func (v *textView) reading(now time.Time, _ *executor.Operation, p executor.Progress, rate float64) {
	if stage := stageOf(p); stage != v.lastStage {
		v.line("%s  %s", formatTime(now), stage)
		v.lastStage = stage
	}
	if p.Bytes == 0 {
		return // no plan yet: nothing to count
	}
	if !v.bar {
		// The rate moves at every reading; the line is due when the copy
		// does.
		if v.pace.due(now, describe(p, -1)) {
			v.line("%s  %s", formatTime(now), describe(p, rate))
		}
		return
	}
	if v.pb == nil {
		v.pb = progressbar.NewOptions64(p.Bytes,
			progressbar.OptionSetWriter(v.out),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionShowDescriptionAtLineEnd(),
			// With the description set first, a reading renders once:
			// Set64 renders when the percentage moves, and RenderBlank,
			// throttled, only when Set64 did not.
			progressbar.OptionThrottle(min(v.interval/2, 200*time.Millisecond)))
	}
	progressbar.OptionSetDescription(describe(p, rate))(v.pb)
	_ = v.pb.Set64(min(p.BytesDone, p.Bytes))
	_ = v.pb.RenderBlank()
}

func (v *textView) readFailed(_ time.Time, err error) {
	v.line("reading the operation failed, retrying: %v", err)
}

func (v *textView) ended(now time.Time, op *executor.Operation, p executor.Progress, rate float64) {
	v.pace.shown = "" // the last figures always show
	v.reading(now, op, p, rate)
	if v.pb != nil {
		_ = v.pb.Exit()
		fmt.Fprintln(v.out)
	}
	if op.Phase == executor.PhaseCompleted {
		fmt.Fprintf(v.out, "operation %s completed at %s\n", op.ID, formatTime(op.CompletedAt))
	}
}

func (v *textView) interrupted() {
	if v.pb != nil {
		fmt.Fprintln(v.out)
	}
}

// progressJSON is one line of `watch --output json`.
type progressJSON struct {
	// Event is progress (a reading of the running operation), ended (its
	// last reading, or the last operation when none is unfinished),
	// read-error (reading failed; watch retries) or none (no operation
	// is recorded).
	Event string    `json:"event"`
	Time  time.Time `json:"time"`
	// Stage is the text watch prints as the stage: the phase and group.
	Stage string `json:"stage,omitempty"`
	// RateBytesPerSec is the copy rate over the last 10 s of readings;
	// null until the readings span a second.
	RateBytesPerSec *int64 `json:"rate_bytes_per_sec,omitempty"`
	Error           string `json:"error,omitempty"`
	*operationJSON
}

// jsonView writes one JSON object a line, at the pace of plain lines.
type jsonView struct {
	out  io.Writer
	pace pacer
}

func (v *jsonView) emit(l progressJSON) {
	l.Time = l.Time.UTC()
	_ = writeJSON(v.out, l)
}

func (v *jsonView) progress(event string, now time.Time, op *executor.Operation, p executor.Progress, rate float64) {
	o := operationView(op, p)
	l := progressJSON{Event: event, Time: now, Stage: stageOf(p), operationJSON: &o}
	if rate >= 0 {
		r := int64(rate)
		l.RateBytesPerSec = &r
	}
	v.emit(l)
}

func (v *jsonView) none(now time.Time) { v.emit(progressJSON{Event: "none", Time: now}) }

func (v *jsonView) last(op *executor.Operation) {
	v.progress("ended", op.UpdatedAt, op, op.Progress(nil), -1)
}

func (v *jsonView) following(*executor.Operation) {}

func (v *jsonView) reading(now time.Time, op *executor.Operation, p executor.Progress, rate float64) {
	if v.pace.due(now, stageOf(p)+" "+describe(p, -1)) {
		v.progress("progress", now, op, p, rate)
	}
}

func (v *jsonView) readFailed(now time.Time, err error) {
	v.emit(progressJSON{Event: "read-error", Time: now, Error: err.Error()})
}

func (v *jsonView) ended(now time.Time, op *executor.Operation, p executor.Progress, rate float64) {
	v.progress("ended", now, op, p, rate)
}

func (v *jsonView) interrupted() {}
