package executor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// logRecorder keeps every INFO line with the fake clock's time.
type logRecorder struct {
	mu    sync.Mutex
	clock *fakeClock
	lines []loggedLine
}

type loggedLine struct {
	at     time.Time
	msg    string
	fields map[string]any
}

func (l *logRecorder) Info(_ context.Context, msg string, f map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, loggedLine{at: l.clock.Now(), msg: msg, fields: f})
}

func (l *logRecorder) Warn(context.Context, string, map[string]any) {}

// A long wait logs its progress at INFO at least every 30s, with no
// metrics (no Advisor) at all: phase, group, moves and bytes done, the
// throttle and the ETA.
func TestWaitLogsProgressEveryThirtySecondsWithoutMetrics(t *testing.T) {
	r := newRig(t, 3, 12)
	// Each move takes 100 polls of 1s: about 100s of fake time per group.
	r.f.reassignPolls = 100
	log := &logRecorder{clock: r.clock}
	ex := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock, Log: log},
		executor.Settings{PollInterval: time.Second})
	if _, err := ex.Scale(context.Background(), scaleReq(5)); err != nil {
		t.Fatal(err)
	}
	var progress []loggedLine
	for _, l := range log.lines {
		if l.msg == "reassignment progress" {
			progress = append(progress, l)
		}
	}
	if len(progress) < 3 {
		t.Fatalf("%d progress lines over the waits; want one every 30s", len(progress))
	}
	for i := 1; i < len(progress); i++ {
		if gap := progress[i].at.Sub(progress[i-1].at); gap > 31*time.Second && progress[i].fields["group"] == progress[i-1].fields["group"] {
			t.Errorf("progress lines %d and %d of group %v are %s apart; want at most 30s", i-1, i, progress[i].fields["group"], gap)
		}
	}
	for _, k := range []string{"phase", "group", "moves_done", "bytes_done", "throttle", "eta", "moves_in_flight"} {
		if _, ok := progress[0].fields[k]; !ok {
			t.Errorf("progress line %v has no %q", progress[0].fields, k)
		}
	}
}
