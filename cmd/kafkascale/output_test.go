package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// The JSON list parses, keeps the text list's order and figures, and ends
// with the throttle the abandoned operation left.
func TestWriteOperationsJSON(t *testing.T) {
	var b bytes.Buffer
	if err := writeOperationsJSON(&b, []*executor.Operation{completed(), abandoned(), running()}); err != nil {
		t.Fatal(err)
	}
	var got operationsJSON
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	var ids []string
	for _, o := range got.Operations {
		ids = append(ids, o.ID)
	}
	if strings.Join(ids, " ") != "op-running op-done op-abandoned" {
		t.Fatalf("order %v, want the unfinished one first, then the most recent", ids)
	}
	r := got.Operations[0]
	if r.Key != "cluster/abc" || r.Kind != "scale-out" || r.Phase != "reassign" || r.Done || r.Group != 2 || r.Groups != 3 ||
		r.MovesDone != 2 || r.Moves != 6 || r.BytesDone != 40*mib || r.Bytes != 120*mib || r.CompletedAt != nil ||
		!r.StartedAt.Equal(t0) || r.ETASeconds <= 0 {
		t.Errorf("the running operation: %+v", r)
	}
	if d := got.Operations[1]; !d.Done || d.CompletedAt == nil || !d.CompletedAt.Equal(t0.Add(-50*time.Minute)) {
		t.Errorf("the completed operation: %+v", d)
	}
	if a := got.Operations[2]; a.LastError != "operation op-abandoned stopped: 1 partition(s) changed outside kafkascale" {
		t.Errorf("the abandoned operation's error: %q", a.LastError)
	}
	if len(got.OrphanedThrottles) != 1 || got.OrphanedThrottles[0].Operation != "op-abandoned" ||
		got.OrphanedThrottles[0].RateBytesPerSec != 10*mib || len(got.OrphanedThrottles[0].Brokers) != 1 || got.OrphanedThrottles[0].Brokers[0] != 7 {
		t.Errorf("orphaned throttles: %+v", got.OrphanedThrottles)
	}
}

// With nothing recorded the lists are empty arrays, not null: a script
// iterates without a check.
func TestWriteOperationsJSONNone(t *testing.T) {
	var b bytes.Buffer
	if err := writeOperationsJSON(&b, nil); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != `{"operations":[],"orphaned_throttles":[]}`+"\n" {
		t.Fatalf("got %q", got)
	}
}

// The JSON record carries what the text record shows: the plan's groups
// and where each stands, the throttle and its changes.
func TestWriteOperationJSON(t *testing.T) {
	op := running()
	op.ThrottleHistory = []executor.ThrottleChange{{At: t0, From: 8 * mib, To: 10 * mib, Reason: "all throttled brokers healthy"}}
	op.Started = []int{2} // group 2's first move
	var b bytes.Buffer
	if err := writeOperationJSON(&b, op); err != nil {
		t.Fatal(err)
	}
	var got operationDetailJSON
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	if got.ID != "op-running" || got.TargetBrokerCount != 5 || got.ThrottleBytesPerSec != 10*mib ||
		len(got.ThrottleHistory) != 1 || got.ThrottleHistory[0].Reason != "all throttled brokers healthy" ||
		len(got.ThrottledReplicas) != 1 || got.ThrottledReplicas[0].Topic != "t" || got.PausedAt != nil {
		t.Fatalf("record: %s", b.String())
	}
	if got.Plan == nil || got.Plan.Moves != 6 || got.Plan.TotalBytes != 120*mib || len(got.Plan.Brokers) != 2 || !got.Plan.Brokers[1].Added {
		t.Fatalf("plan: %+v", got.Plan)
	}
	var states []string
	for _, g := range got.Plan.Groups {
		states = append(states, g.State)
	}
	if strings.Join(states, " ") != "done running pending" || got.Plan.Groups[1].MovesStarted != 1 || got.Plan.Groups[1].Bytes != 40*mib {
		t.Fatalf("groups: %+v", got.Plan.Groups)
	}
	// Before the plan exists it is null, not an empty plan.
	early := running()
	early.Plan, early.Phase = nil, executor.PhaseAddBrokers
	b.Reset()
	if err := writeOperationJSON(&b, early); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"plan":null`) {
		t.Fatalf("an operation without a plan: %s", b.String())
	}
}

func TestOutputFlag(t *testing.T) {
	var o outputFormat
	if err := o.Set("json"); err != nil || o != outputJSON {
		t.Fatalf("json: %v %q", err, o)
	}
	if err := o.Set("yaml"); err == nil || err.Error() != `"yaml" is not an output format: text or json` {
		t.Fatalf("yaml: %v", err)
	}
}

// A file is no terminal: watch writes plain lines to it, as to a pipe.
func TestNewViewPlainOffTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "watch")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if v, ok := newView(f, outputText, time.Second).(*textView); !ok || v.bar {
		t.Fatalf("a file got %#v", v)
	}
	if _, ok := newView(f, outputJSON, time.Second).(*jsonView); !ok {
		t.Fatal("--output json got no JSON view")
	}
}

// followToCompletion is a watch of the running operation through three
// readings to its completion.
func followToCompletion(t *testing.T, v view) error {
	t.Helper()
	done := completed()
	done.Key, done.ID = "cluster/abc", "op-running"
	src := &fakeSource{records: [][]*executor.Operation{{running()}, {running()}, {running()}, {done}}}
	w := &watcher{src: src, view: v, interval: time.Millisecond, now: time.Now}
	return w.run(context.Background(), "cluster/abc")
}

// Off a terminal, watch writes whole lines: no carriage return, no bar;
// a line for each stage and each time the copy moves, then the outcome.
func TestWatchPlainLines(t *testing.T) {
	var b bytes.Buffer
	if err := followToCompletion(t, &textView{out: &b, interval: time.Millisecond}); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	out := b.String()
	if strings.ContainsAny(out, "\r\x1b") || strings.Contains(out, "█") {
		t.Fatalf("control characters or a bar in plain output:\n%q", out)
	}
	stamp := `\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ  `
	for i, want := range []*regexp.Regexp{
		regexp.MustCompile(`^following operation op-running \(cluster/abc, scale-out\), started 2026-12-01 10:00:00Z$`),
		regexp.MustCompile(`^` + stamp + `reassign: group 2/3$`),
		regexp.MustCompile(`^` + stamp + `45\.0 MiB/120\.0 MiB  - B/s  group 2/3  ETA \S+$`),
		regexp.MustCompile(`^` + stamp + `50\.0 MiB/120\.0 MiB  \S+ \S+  group 2/3  ETA \S+$`),
		regexp.MustCompile(`^` + stamp + `55\.0 MiB/120\.0 MiB  \S+ \S+  group 2/3  ETA \S+$`),
		regexp.MustCompile(`^` + stamp + `completed$`),
		regexp.MustCompile(`^` + stamp + `120\.0 MiB/120\.0 MiB  \S+ \S+  group 3/3  ETA -$`),
		regexp.MustCompile(`^operation op-running completed at 2026-12-01 09:10:00Z$`),
		regexp.MustCompile(`^$`),
	} {
		lines := strings.Split(out, "\n")
		if i >= len(lines) || !want.MatchString(lines[i]) {
			t.Fatalf("line %d does not match %s:\n%s", i+1, want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 8 {
		t.Fatalf("%d lines, want 8:\n%s", n, out)
	}
}

// The copy standing still prints no line, until a minute has passed.
func TestWatchPlainLinesPace(t *testing.T) {
	var b bytes.Buffer
	v := &textView{out: &b}
	p := running().Progress(nil)
	for _, s := range []int{0, 1, 2, 59, 61} {
		v.reading(t0.Add(time.Duration(s)*time.Second), running(), p, 1*mib)
	}
	if n := strings.Count(b.String(), "40.0 MiB/120.0 MiB"); n != 2 {
		t.Fatalf("%d progress lines, want 2 (the first, and one after a minute):\n%s", n, b.String())
	}
}

// --output json writes one JSON object a line: progress as the copy moves,
// then the ended line with the last figures.
func TestWatchJSONLines(t *testing.T) {
	var b bytes.Buffer
	if err := followToCompletion(t, &jsonView{out: &b}); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	var events []string
	var done []int64
	sc := bufio.NewScanner(&b)
	for sc.Scan() {
		var l struct {
			Event     string `json:"event"`
			Time      string `json:"time"`
			ID        string `json:"id"`
			Phase     string `json:"phase"`
			BytesDone int64  `json:"bytes_done"`
			Bytes     int64  `json:"bytes"`
			Rate      *int64 `json:"rate_bytes_per_sec"`
			Stage     string `json:"stage"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q is not one JSON object: %v", sc.Text(), err)
		}
		if l.ID != "op-running" || l.Bytes != 120*mib || l.Time == "" {
			t.Fatalf("line %s", sc.Text())
		}
		events = append(events, l.Event)
		done = append(done, l.BytesDone/mib)
	}
	if strings.Join(events, " ") != "progress progress progress ended" {
		t.Fatalf("events %v", events)
	}
	if want := []int64{45, 50, 55, 120}; !slices.Equal(done, want) {
		t.Fatalf("bytes done (MiB) %v, want %v", done, want)
	}
}

// With nothing unfinished, the JSON watch writes the last operation's
// outcome as an ended line, and exits as the text one does.
func TestWatchJSONLast(t *testing.T) {
	var b bytes.Buffer
	w := &watcher{src: &fakeSource{records: [][]*executor.Operation{{completed(), abandoned()}}}, view: &jsonView{out: &b}, interval: time.Millisecond, now: time.Now}
	err := w.run(context.Background(), "op-abandoned")
	if exitCode(err) != 1 {
		t.Fatalf("exit %d: %v", exitCode(err), err)
	}
	var l map[string]any
	if err := json.Unmarshal(b.Bytes(), &l); err != nil || l["event"] != "ended" || l["phase"] != "abandoned" || l["id"] != "op-abandoned" {
		t.Fatalf("%v: %s", err, b.String())
	}
}
