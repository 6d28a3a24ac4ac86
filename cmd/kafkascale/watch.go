package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// source is what watch reads: the operations topic and the replica sizes
// on the live cluster.
type source interface {
	Operations(ctx context.Context) ([]*executor.Operation, error)
	ReplicaSizes(ctx context.Context, rs []executor.Replica) (map[executor.Replica]int64, error)
}

type clientSource struct {
	feed *kafka.OperationFeed
	port *kafka.Port
}

func (s clientSource) Operations(ctx context.Context) ([]*executor.Operation, error) {
	return s.feed.Poll(ctx)
}

func (s clientSource) ReplicaSizes(ctx context.Context, rs []executor.Replica) (map[executor.Replica]int64, error) {
	return s.port.ReplicaSizes(ctx, rs)
}

// readFailureLimit is how long reads may fail in a row before watch gives
// up: long enough for a broker restart, short enough not to hang forever
// on a cluster that is gone.
const readFailureLimit = 2 * time.Minute

type watcher struct {
	src      source
	view     view
	interval time.Duration
	now      func() time.Time
}

// pick chooses the operation to follow: the unfinished one (the one whose
// id or key is sel, when given). With none it returns the last one (nil
// when there is none).
func pick(ops []*executor.Operation, sel string) (op *executor.Operation, unfinished bool, err error) {
	var open []*executor.Operation
	var last *executor.Operation
	for _, o := range ops {
		if sel != "" && o.Key != sel && o.ID != sel {
			continue
		}
		if !o.Done() {
			open = append(open, o)
		}
		if last == nil || o.UpdatedAt.After(last.UpdatedAt) {
			last = o
		}
	}
	switch {
	case len(open) == 1:
		return open[0], true, nil
	case len(open) > 1:
		var which []string
		for _, o := range open {
			which = append(which, fmt.Sprintf("%s (%s, %s)", o.Key, o.ID, o.Kind))
		}
		return nil, false, fmt.Errorf("%d operations are unfinished; choose one by its key or id: %s", len(open), joinComma(which))
	case sel != "" && last == nil:
		return nil, false, unknownOperation(ops, sel)
	}
	return last, false, nil
}

// outcome is the exit status of an operation that ended.
func outcome(op *executor.Operation) error {
	if op.Phase == executor.PhaseCompleted {
		return nil
	}
	msg := fmt.Sprintf("operation %s (%s) was %s", op.ID, op.Key, op.Phase)
	if op.LastError != "" {
		msg += ": " + op.LastError
	}
	return &exitError{code: 1, msg: msg}
}

func (w *watcher) run(ctx context.Context, sel string) error {
	ops, err := w.src.Operations(ctx)
	if err != nil {
		return err
	}
	op, unfinished, err := pick(ops, sel)
	if err != nil {
		return err
	}
	if op == nil {
		w.view.none(w.now())
		return nil
	}
	if !unfinished {
		w.view.last(op)
		return outcome(op)
	}
	return w.follow(ctx, op)
}

// follow shows op's progress until it ends.
func (w *watcher) follow(ctx context.Context, op *executor.Operation) error {
	w.view.following(op)
	var (
		rate    rateMeter
		failing time.Time // when reads started to fail, zero while they work
	)
	for {
		var sizes map[executor.Replica]int64
		if copying := op.Copying(); len(copying) > 0 {
			rs := make([]executor.Replica, 0, len(copying))
			for r := range copying {
				rs = append(rs, r)
			}
			// Without the sizes the record's figures still hold; the
			// copy of the running group shows again on the next read.
			sizes, _ = w.src.ReplicaSizes(ctx, rs)
		}
		p := op.Progress(sizes)
		now := w.now()
		r := rate.add(now, p.BytesDone)
		if op.Done() {
			w.view.ended(now, op, p, r)
			return outcome(op)
		}
		w.view.reading(now, op, p, r)

		select {
		case <-ctx.Done():
			w.view.interrupted()
			return &exitError{code: 130, msg: "stopped watching; the operation goes on"}
		case <-time.After(w.interval):
		}

		ops, err := w.src.Operations(ctx)
		if err != nil {
			if failing.IsZero() {
				failing = w.now()
				w.view.readFailed(failing, err)
			}
			if w.now().Sub(failing) > readFailureLimit {
				return fmt.Errorf("gave up after %s of failed reads: %w", readFailureLimit, err)
			}
			continue
		}
		failing = time.Time{}
		next := findKey(ops, op.Key)
		switch {
		case next == nil:
			return &exitError{code: 1, msg: fmt.Sprintf("operation %s (%s) is no longer recorded: its record was deleted", op.ID, op.Key)}
		case next.ID != op.ID:
			// The followed one ended unseen between two reads: a new
			// operation under the same key cancelled or followed it.
			return &exitError{code: 1, msg: fmt.Sprintf("operation %s (%s) was replaced by operation %s (%s); its outcome was not seen", op.ID, op.Key, next.ID, next.Phase)}
		}
		op = next
	}
}

func findKey(ops []*executor.Operation, key string) *executor.Operation {
	for _, o := range ops {
		if o.Key == key {
			return o
		}
	}
	return nil
}

// stageOf names the phase and group, printed on its own line whenever it
// changes, so that a log keeps the story the bar overwrites.
func stageOf(p executor.Progress) string {
	switch {
	case p.Phase == executor.PhaseReassign && p.Groups > 0:
		return fmt.Sprintf("%s: group %d/%d", p.Phase, p.Group, p.Groups)
	case p.Phase == executor.PhaseAddBrokers:
		return "add-brokers: waiting for the new brokers to register; the plan is made once they have"
	default:
		return string(p.Phase)
	}
}

// describe is the text beside the bar: bytes, rate, group and ETA.
func describe(p executor.Progress, rate float64) string {
	r := "- B/s"
	if rate >= 0 {
		r = formatBytes(int64(rate)) + "/s"
	}
	eta := "-"
	switch {
	case p.Projected > 0:
		// The re-estimate from the pace the copy has kept, as of its
		// last sample (a steady figure between samples).
		eta = p.Projected.Round(time.Second).String() + " (at the pace seen)"
	case p.ETA > 0:
		eta = p.ETA.Round(time.Second).String()
	}
	return fmt.Sprintf("%s/%s  %s  group %s  ETA %s", formatBytes(p.BytesDone), formatBytes(p.Bytes), r, groupOf(p), eta)
}

// rateMeter measures the copy rate over the last rateWindow of readings
// (taken since watch started, so a watch started midway shows no jump).
type rateMeter struct {
	samples []rateSample
}

type rateSample struct {
	at    time.Time
	bytes int64
}

const rateWindow = 10 * time.Second

// add records a reading and returns the rate in bytes/s, or -1 until the
// readings span a second.
func (m *rateMeter) add(at time.Time, bytes int64) float64 {
	m.samples = append(m.samples, rateSample{at, bytes})
	for len(m.samples) > 2 && at.Sub(m.samples[1].at) >= rateWindow {
		m.samples = m.samples[1:]
	}
	first := m.samples[0]
	d := at.Sub(first.at)
	if d < time.Second {
		return -1
	}
	return max(float64(bytes-first.bytes), 0) / d.Seconds()
}
