package executor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// memLeaseLog is the lease log's contract in memory: one total order, and
// every record stamped by one clock when appended. The Kafka semantics
// behind it (offsets, LogAppendTime, reading by time) are tested against a
// real broker in internal/kafka.
type memLeaseLog struct {
	mu   sync.Mutex
	recs []executor.LeaseRecord
	// fail makes Append fail, as an unreachable partition leader would.
	fail atomic.Bool
}

func (m *memLeaseLog) Ensure(context.Context) error { return nil }

func (m *memLeaseLog) Append(ctx context.Context, r executor.LeaseRecord) error {
	if m.fail.Load() {
		return errors.New("no leader for the lease partition")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r.Offset, r.Time = int64(len(m.recs)), time.Now()
	m.recs = append(m.recs, r)
	return nil
}

func (m *memLeaseLog) Since(ctx context.Context, t time.Time) ([]executor.LeaseRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []executor.LeaseRecord
	for _, r := range m.recs {
		if !r.Time.Before(t) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *memLeaseLog) all() []executor.LeaseRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]executor.LeaseRecord(nil), m.recs...)
}

func lessee(log executor.LeaseLog, session string, ttl time.Duration) *executor.Lessee {
	return &executor.Lessee{Records: log, Host: "h", PID: 1, Session: session, ExpireAfter: ttl, Poll: 20 * time.Millisecond}
}

// rec builds a record at t0+sec seconds.
func rec(t0 time.Time, off int64, sec float64, claim string, kind executor.LeaseRecordKind, op string, f func(*executor.LeaseRecord)) executor.LeaseRecord {
	r := executor.LeaseRecord{Claim: claim, Kind: kind, Holder: executor.LeaseHolder{Operation: op}, Position: -1, ExpireAfter: 10 * time.Second,
		Offset: off, Time: t0.Add(time.Duration(sec * float64(time.Second)))}
	if f != nil {
		f(&r)
	}
	return r
}

func holderOf(recs []executor.LeaseRecord) string {
	h, ok := executor.ReplayLease(recs).Holder()
	if !ok {
		return "none"
	}
	return h.ID
}

// The rules of the lease, as pure functions of the log.
func TestReplayLease(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hb := func(pos int64, prev float64) func(*executor.LeaseRecord) {
		return func(r *executor.LeaseRecord) {
			r.Position, r.Previous = pos, t0.Add(time.Duration(prev*float64(time.Second)))
		}
	}
	cases := []struct {
		name string
		recs []executor.LeaseRecord
		want string
	}{
		{"the earliest claim holds", []executor.LeaseRecord{
			rec(t0, 0, 0, "a", executor.LeaseClaimed, "op1", nil),
			rec(t0, 1, 1, "b", executor.LeaseClaimed, "op2", nil),
		}, "a"},
		{"a release passes it to the next in offset order", []executor.LeaseRecord{
			rec(t0, 0, 0, "a", executor.LeaseClaimed, "op1", nil),
			rec(t0, 1, 1, "b", executor.LeaseClaimed, "op2", nil),
			rec(t0, 2, 1, "c", executor.LeaseClaimed, "op3", nil),
			rec(t0, 3, 2, "a", executor.LeaseRelease, "op1", hb(0, 0)),
		}, "b"},
		{"a holder is live until a record comes more than its expiry after its last", []executor.LeaseRecord{
			rec(t0, 0, 0, "a", executor.LeaseClaimed, "op1", nil),
			rec(t0, 1, 9, "b", executor.LeaseClaimed, "op2", nil),
		}, "a"},
		{"then it expires", []executor.LeaseRecord{
			rec(t0, 0, 0, "a", executor.LeaseClaimed, "op1", nil),
			rec(t0, 1, 9, "b", executor.LeaseClaimed, "op2", nil),
			rec(t0, 2, 11, "b", executor.LeaseHeartbeat, "op2", hb(1, 9)),
		}, "b"},
		{"an expired claim never lives again", []executor.LeaseRecord{
			rec(t0, 0, 0, "a", executor.LeaseClaimed, "op1", nil),
			rec(t0, 1, 9, "b", executor.LeaseClaimed, "op2", nil),
			rec(t0, 2, 11, "b", executor.LeaseHeartbeat, "op2", hb(1, 9)),
			rec(t0, 3, 12, "a", executor.LeaseHeartbeat, "op1", hb(0, 0)),
		}, "b"},
		{"a heartbeat after a gap longer than the expiry ends its claim, even seen alone", []executor.LeaseRecord{
			rec(t0, 5, 20, "a", executor.LeaseHeartbeat, "op1", hb(0, 5)),
			rec(t0, 6, 20, "b", executor.LeaseHeartbeat, "op2", hb(3, 19)),
		}, "b"},
		{"a claim of the same operation takes over a live holder and its place", []executor.LeaseRecord{
			rec(t0, 0, 0, "dead", executor.LeaseClaimed, "op1", nil),
			rec(t0, 1, 1, "waiting", executor.LeaseClaimed, "op2", nil),
			rec(t0, 2, 2, "resume", executor.LeaseClaimed, "op1", nil),
			rec(t0, 3, 2, "resume", executor.LeaseHeartbeat, "op1", func(r *executor.LeaseRecord) { r.Position, r.TakesOver = 2, "dead" }),
		}, "resume"},
		{"a claim of another operation takes nothing over", []executor.LeaseRecord{
			rec(t0, 0, 0, "a", executor.LeaseClaimed, "op1", nil),
			rec(t0, 1, 1, "b", executor.LeaseClaimed, "op2", nil),
			rec(t0, 2, 2, "b", executor.LeaseHeartbeat, "op2", func(r *executor.LeaseRecord) { r.Position, r.TakesOver = 1, "a" }),
		}, "a"},
		{"nothing claimed, nobody holds", nil, "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := holderOf(tc.recs); got != tc.want {
				t.Fatalf("holder %s, want %s", got, tc.want)
			}
		})
	}
}

// A reader that sees only the last part of the log (a window reaching back
// at least one expiry) reaches the same verdict as one that replays it all,
// because heartbeats carry the position the writer validated.
func TestReplayLease_windowAgreesWithWholeLog(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []executor.LeaseRecord
	add := func(sec float64, claim string, kind executor.LeaseRecordKind, op string, pos int64, prev float64, takes string) {
		r := rec(t0, int64(len(recs)), sec, claim, kind, op, nil)
		r.Position, r.TakesOver = pos, takes
		if prev >= 0 {
			r.Previous = t0.Add(time.Duration(prev * float64(time.Second)))
		}
		recs = append(recs, r)
	}
	add(0, "dead", executor.LeaseClaimed, "op1", -1, -1, "")
	add(1, "w", executor.LeaseClaimed, "op2", -1, -1, "")
	add(2, "resume", executor.LeaseClaimed, "op1", -1, -1, "")
	add(3, "resume", executor.LeaseHeartbeat, "op1", 2, 2, "dead")
	for s := 5.0; s < 60; s += 2 {
		add(s, "resume", executor.LeaseHeartbeat, "op1", 0, s-2, "")
		add(s+0.5, "w", executor.LeaseHeartbeat, "op2", 1, s-1.5, "")
	}
	whole := holderOf(recs)
	if whole != "resume" {
		t.Fatalf("whole log: holder %s, want resume", whole)
	}
	// Every window that reaches an expiry (10s) back from the end, as the
	// readers' windows do.
	end := recs[len(recs)-1].Time
	for from := 1; end.Sub(recs[from].Time) >= 10*time.Second; from++ {
		if got := holderOf(recs[from:]); got != whole {
			t.Fatalf("reading from offset %d: holder %s, want %s as the whole log says", from, got, whole)
		}
	}
}

// Two operations at once: the second waits, then runs; they never overlap.
func TestLessee_secondWaitsThenRuns(t *testing.T) {
	log := &memLeaseLog{}
	l := lessee(log, "run", time.Second)
	var inside, overlaps atomic.Int32
	var order []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	started := make(chan struct{})
	for _, name := range []string{"scale", "rf"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if name == "rf" {
				<-started
			}
			err := l.Hold(context.Background(), executor.LeaseWork{Operation: name, Resource: name, What: name}, func(ctx context.Context, _ *executor.Held) error {
				if name == "scale" {
					close(started)
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				time.Sleep(300 * time.Millisecond)
				inside.Add(-1)
				return nil
			})
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
	}
	wg.Wait()
	if overlaps.Load() > 0 || strings.Join(order, ",") != "scale,rf" {
		t.Fatalf("order %v, %d overlap(s); want scale then rf, none", order, overlaps.Load())
	}
}

// Fail-fast refuses at once when another run holds the lease, naming it,
// but queues behind an operation of its own run.
func TestLessee_failFast(t *testing.T) {
	log := &memLeaseLog{}
	holding := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_ = lessee(log, "other-run", time.Second).Hold(context.Background(), executor.LeaseWork{Operation: "op-1", Resource: `kafkascale_cluster "x"`, What: "bring the cluster to 5 brokers"},
			func(context.Context, *executor.Held) error { close(holding); <-release; return nil })
	}()
	<-holding
	ff := lessee(log, "my-run", time.Second)
	ff.FailFast = true
	begin := time.Now()
	ran := false
	err := ff.Hold(context.Background(), executor.LeaseWork{Operation: "op-2"}, func(context.Context, *executor.Held) error { ran = true; return nil })
	var busy *executor.LeaseBusyError
	if !errors.As(err, &busy) || ran {
		t.Fatalf("fail-fast against another run: err %v, ran %v; want a LeaseBusyError and nothing run", err, ran)
	}
	if took := time.Since(begin); took > 500*time.Millisecond {
		t.Fatalf("fail-fast took %s", took)
	}
	for _, want := range []string{"op-1", `kafkascale_cluster "x"`, "bring the cluster to 5 brokers", "host h pid 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %q", err, want)
		}
	}
	// Its claim is released: it does not block those after it.
	if h, _ := executor.ReplayLease(log.all()).Holder(); h.Holder.Operation != "op-1" {
		t.Fatalf("holder after the refusal: %+v", h.Holder)
	}

	same := lessee(log, "other-run", time.Second)
	same.FailFast = true
	go func() { time.Sleep(100 * time.Millisecond); close(release) }()
	if err := same.Hold(context.Background(), executor.LeaseWork{Operation: "op-3"}, func(context.Context, *executor.Held) error { return nil }); err != nil {
		t.Fatalf("fail-fast behind an operation of the same run: %v; want it to wait", err)
	}
}

// Cancelling a waiting operation returns promptly, says whom it waited for,
// and wraps the context's error (not an unreachable cluster).
func TestLessee_contextEndsWhileWaiting(t *testing.T) {
	log := &memLeaseLog{}
	holding := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		_ = lessee(log, "a", time.Second).Hold(context.Background(), executor.LeaseWork{Operation: "op-holder", Resource: "r"},
			func(context.Context, *executor.Held) error { close(holding); <-stop; return nil })
	}()
	<-holding
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err := lessee(log, "b", time.Second).Hold(ctx, executor.LeaseWork{Operation: "op-waiter"}, func(context.Context, *executor.Held) error {
		t.Error("ran without the lease")
		return nil
	})
	var wait *executor.LeaseWaitError
	if !errors.As(err, &wait) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "op-holder") {
		t.Fatalf("err %v; want a LeaseWaitError naming op-holder and wrapping the deadline", err)
	}
	if took := time.Since(begin); took > 800*time.Millisecond {
		t.Fatalf("returned %s after a 300ms deadline", took)
	}
}

// deadHolder appends what a holder killed mid-operation leaves: a claim and
// its announcement, then nothing.
func deadHolder(t *testing.T, log *memLeaseLog, op string, ttl time.Duration) {
	t.Helper()
	ctx := context.Background()
	h := executor.LeaseHolder{Operation: op, Resource: "r", Host: "lost", PID: 9, Session: "dead"}
	if err := log.Append(ctx, executor.LeaseRecord{Claim: "dead", Kind: executor.LeaseClaimed, Holder: h, Position: -1, ExpireAfter: ttl}); err != nil {
		t.Fatal(err)
	}
	first := log.all()[0]
	if err := log.Append(ctx, executor.LeaseRecord{Claim: "dead", Kind: executor.LeaseHeartbeat, Holder: h, Position: first.Offset, Holding: true, Previous: first.Time, ExpireAfter: ttl}); err != nil {
		t.Fatal(err)
	}
}

// A holder that dies stops heartbeating: the next operation takes over
// after the expiry, not before.
func TestLessee_deadHolderExpires(t *testing.T) {
	log := &memLeaseLog{}
	ttl := 600 * time.Millisecond
	deadHolder(t, log, "op-dead", ttl)
	begin := time.Now()
	if err := lessee(log, "b", ttl).Hold(context.Background(), executor.LeaseWork{Operation: "op-next"}, func(context.Context, *executor.Held) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took < ttl || took > 4*ttl {
		t.Fatalf("took over after %s; want after the %s expiry, and soon after", took, ttl)
	}
}

// The process that resumes the dead holder's operation takes over at once.
func TestLessee_sameOperationTakesOverAtOnce(t *testing.T) {
	log := &memLeaseLog{}
	ttl := 2 * time.Second
	deadHolder(t, log, "op-resumed", ttl)
	begin := time.Now()
	if err := lessee(log, "b", ttl).Hold(context.Background(), executor.LeaseWork{Operation: "op-resumed"}, func(context.Context, *executor.Held) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > ttl/2 {
		t.Fatalf("took over after %s; want at once, not after the %s expiry", took, ttl)
	}
	st := executor.ReplayLease(log.all())
	if why, _ := st.Ended("dead"); !strings.Contains(why, "taken over") {
		t.Fatalf("the dead claim ended with %q; want taken over", why)
	}
}

// A holder whose heartbeats go unacknowledged stops its work before anyone
// else may judge its claim expired.
func TestLessee_holderLosesLeaseWhenHeartbeatsFail(t *testing.T) {
	log := &memLeaseLog{}
	// Real time: the holder gives up one heartbeat interval (ttl/5) before
	// the expiry, so a 3s ttl leaves 600ms for a loaded machine's scheduler.
	ttl := 3 * time.Second
	begin := time.Now()
	err := lessee(log, "a", ttl).Hold(context.Background(), executor.LeaseWork{Operation: "op"}, func(ctx context.Context, _ *executor.Held) error {
		log.fail.Store(true)
		<-ctx.Done()
		return ctx.Err()
	})
	var lost *executor.LeaseLostError
	if !errors.As(err, &lost) {
		t.Fatalf("err %v; want a LeaseLostError", err)
	}
	if took := time.Since(begin); took > ttl {
		t.Fatalf("work stopped after %s, later than the %s expiry", took, ttl)
	}
}

// Executor entry points take the lease once, and nested calls reuse it.
func TestExecutor_exclusiveIsReentrant(t *testing.T) {
	log := &memLeaseLog{}
	ex := executor.New(executor.Deps{Store: &memStore{}, Lease: lessee(log, "s", time.Second)}, executor.Settings{})
	inner := false
	err := ex.Exclusive(context.Background(), executor.Work{ID: "outer"}, func(ctx context.Context) error {
		return ex.Exclusive(ctx, executor.Work{ID: "inner"}, func(context.Context) error { inner = true; return nil })
	})
	if err != nil || !inner {
		t.Fatalf("err %v, inner ran %v", err, inner)
	}
	claims := 0
	for _, r := range log.all() {
		if r.Kind == executor.LeaseClaimed {
			claims++
		}
	}
	if claims != 1 {
		t.Fatalf("%d claims; want 1", claims)
	}
	if fmt.Sprint(executor.ReplayLease(log.all()).Queue()) != "[]" {
		t.Fatalf("lease not released: %v", executor.ReplayLease(log.all()).Queue())
	}
}

// recordingLog keeps what a Lessee logs.
type recordingLog struct {
	mu    sync.Mutex
	lines []string
}

func (r *recordingLog) add(level, msg string, f map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf("%s %s %v", level, msg, f))
}

func (r *recordingLog) Info(_ context.Context, msg string, f map[string]any) { r.add("INFO", msg, f) }
func (r *recordingLog) Warn(_ context.Context, msg string, f map[string]any) { r.add("WARN", msg, f) }

func (r *recordingLog) find(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// A waiting operation says, at INFO, whom it waits for: the holder's
// operation, resource, host, pid and since when.
func TestLessee_logsWhomItWaitsFor(t *testing.T) {
	log := &memLeaseLog{}
	holding := make(chan struct{})
	release := make(chan struct{})
	holder := &executor.Lessee{Records: log, Host: "build-7", PID: 4242, Session: "a", ExpireAfter: time.Second, Poll: 20 * time.Millisecond}
	go func() {
		_ = holder.Hold(context.Background(), executor.LeaseWork{Operation: "op-scale", Resource: `kafkascale_cluster "x"`, What: "bring the cluster to 5 brokers"},
			func(context.Context, *executor.Held) error { close(holding); <-release; return nil })
	}()
	<-holding
	rec := &recordingLog{}
	waiter := lessee(log, "b", time.Second)
	waiter.Log = rec
	go func() { time.Sleep(200 * time.Millisecond); close(release) }()
	if err := waiter.Hold(context.Background(), executor.LeaseWork{Operation: "op-rf"}, func(context.Context, *executor.Held) error { return nil }); err != nil {
		t.Fatal(err)
	}
	line := rec.find("INFO waiting for the cluster's operation lease")
	for _, want := range []string{"holder_operation:op-scale", `holder_resource:kafkascale_cluster "x"`, "holder_host:build-7", "holder_pid:4242", "holder_since:20"} {
		if !strings.Contains(line, want) {
			t.Fatalf("waiting log %q does not say %q", line, want)
		}
	}
}
