package executor_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

type staticMetrics struct {
	samples []executor.BrokerMetrics
	err     error
	calls   int
}

func (s *staticMetrics) Sample(context.Context, []int32) ([]executor.BrokerMetrics, error) {
	s.calls++
	return s.samples, s.err
}

func TestAIMD(t *testing.T) {
	healthy := executor.BrokerMetrics{IOPressure: 0.1, HandlerIdle: 0.9}
	at := func(b int32, m executor.BrokerMetrics) executor.BrokerMetrics { m.Broker = b; return m }
	cases := []struct {
		name    string
		samples []executor.BrokerMetrics
		err     error
		want    int64
		ok      bool
		reason  string
	}{
		{"healthy adds", []executor.BrokerMetrics{at(1, healthy), at(2, healthy)}, nil, 110, true, "healthy"},
		{"io pressure halves", []executor.BrokerMetrics{at(1, healthy), at(2, executor.BrokerMetrics{IOPressure: 0.9, HandlerIdle: 0.9})}, nil, 50, true, "broker 2 I/O pressure"},
		{"busy handlers halve", []executor.BrokerMetrics{at(1, executor.BrokerMetrics{IOPressure: 0.1, HandlerIdle: 0.05}), at(2, healthy)}, nil, 50, true, "broker 1 request handler idle 0.05"},
		{"missing broker holds", []executor.BrokerMetrics{at(1, healthy)}, nil, 100, false, "no metrics for broker(s) 2"},
		{"NaN holds", []executor.BrokerMetrics{at(1, healthy), at(2, executor.BrokerMetrics{IOPressure: math.NaN(), HandlerIdle: 0.9})}, nil, 100, false, "no metrics"},
		{"source down holds", nil, errors.New("connection refused"), 100, false, "metrics unavailable: connection refused"},
		{"pressure beats missing", []executor.BrokerMetrics{at(1, executor.BrokerMetrics{IOPressure: 0.9, HandlerIdle: 0.9})}, nil, 50, true, "pressure"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := executor.AIMD{Source: &staticMetrics{samples: c.samples, err: c.err}, Increase: 10, DecreaseFactor: 0.5, MaxIOPressure: 0.5, MinHandlerIdle: 0.2}
			got, ok, reason := a.Advise(context.Background(), []int32{1, 2}, 100)
			if got != c.want || ok != c.ok || !strings.Contains(reason, c.reason) {
				t.Errorf("Advise = (%d, %v, %q), want (%d, %v, ~%q)", got, ok, reason, c.want, c.ok, c.reason)
			}
		})
	}
}

type scriptedAdvisor struct{ rates []int64 }

func (s *scriptedAdvisor) Advise(_ context.Context, _ []int32, cur int64) (int64, bool, string) {
	if len(s.rates) == 0 {
		return cur, false, "script over"
	}
	r := s.rates[0]
	s.rates = s.rates[1:]
	return r, true, "scripted"
}

// The executor applies an advised rate only when it moves by more than 10 %,
// and never outside [min, max].
func TestExecutorAdjustsThrottleWithinBounds(t *testing.T) {
	r := newRig(t, 3, 24)
	r.f.reassignPolls = 40 // long groups, so several adjust intervals pass
	var seen []int64
	r.f.onPoll = func(int) {
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		if v, ok := r.f.rates[1]; ok && (len(seen) == 0 || seen[len(seen)-1] != v) {
			seen = append(seen, v)
		}
	}
	initial := int64(10 << 20)
	adv := &scriptedAdvisor{rates: []int64{initial + initial/20, 20 << 20, 500 << 20, 1}}
	r.ex = r.executor(adv)
	op, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	want := []int64{10 << 20, 20 << 20, 100 << 20, 1 << 20} // +5% ignored, max and min clamp
	if len(seen) != len(want) {
		t.Fatalf("rates seen on broker 1: %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("rates seen on broker 1: %v, want %v", seen, want)
		}
	}
	// The record keeps each change applied, with its reason; the
	// ignored +5 % is not one.
	var history []int64
	for _, c := range op.ThrottleHistory {
		if c.Reason != "scripted" || c.At.IsZero() {
			t.Errorf("throttle change %+v: want the advisor's reason and a time", c)
		}
		history = append(history, c.From, c.To)
	}
	if wantHistory := []int64{10 << 20, 20 << 20, 20 << 20, 100 << 20, 100 << 20, 1 << 20}; !slices.Equal(history, wantHistory) {
		t.Fatalf("throttle history (from, to, ...) %v, want %v", history, wantHistory)
	}
}

// A rate a small step below max_throttle still reaches it: reaching a bound
// is always applied, whatever the 10 % rule says.
func TestExecutorReachesMaxThrottle(t *testing.T) {
	r := newRig(t, 3, 24)
	r.f.reassignPolls = 40
	var seen []int64
	r.f.onPoll = func(int) {
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		if v, ok := r.f.rates[1]; ok && (len(seen) == 0 || seen[len(seen)-1] != v) {
			seen = append(seen, v)
		}
	}
	// Start at 95 MiB/s; the advisor adds 5 % (less than the 10 % rule).
	adv := &scriptedAdvisor{rates: []int64{100 << 20, 100 << 20}}
	r.ex = r.executor(adv)
	req := scaleReq(5)
	req.InitialThrottle = 95 << 20
	op, err := r.ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	if len(seen) < 2 || seen[1] != 100<<20 {
		t.Fatalf("rates seen on broker 1: %v; want 95 MiB/s then the 100 MiB/s maximum", seen)
	}
}

// A move that finishes while the rest of its group still copies loses its
// follower throttle entries before the next change to the throttle lists:
// Kafka throttles a listed follower that lags even when it is in sync, so
// a finished replica left listed can hold up every acks=all write to its
// partition. The removal runs in the background across a poll's wait, and
// each change to the lists waits for it.
func TestExecutorReleasesFinishedMovesThrottles(t *testing.T) {
	r := newRig(t, 3, 12)
	r.f.slowParts = map[string]int{key("orders", 0): 30, key("orders", 1): 30, key("orders", 2): 30}
	checked, leaked := 0, []string{}
	// A move finishes inside a poll; the executor reads the partitions and
	// the reassignments in flight at once, so it may see the move done
	// only at the next poll, which starts the removal of its entries.
	finishedAt := map[string]int{}
	poll := 0
	r.f.onPoll = func(n int) {
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		poll = n
		for _, p := range r.f.parts {
			k := key(p.topic, p.part)
			if p.target != nil || r.f.submitted[k] == 0 {
				delete(finishedAt, k) // its next move, if any
				continue
			}
			if _, ok := finishedAt[k]; !ok {
				finishedAt[k] = n
			}
		}
	}
	r.f.onThrottle = func() {
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		for _, p := range r.f.parts {
			at, ok := finishedAt[key(p.topic, p.part)]
			if !ok || poll-at < 2 {
				continue
			}
			checked++
			// Follower entries on the replicas it holds: the partition's
			// next move, throttled ahead, may list its leaders already
			// (Kafka's leader throttles only followers out of the ISR)
			// and the brokers it will add, which hold no replica yet.
			for _, b := range p.replicas {
				if e := fmt.Sprintf("%d:%d", p.part, b); slices.Contains(r.f.followThr[p.topic], e) {
					leaked = append(leaked, fmt.Sprintf("%s follower %s", p.topic, e))
				}
			}
		}
	}
	op, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	if checked == 0 {
		t.Fatal("no throttle change came after a finished move; the test proves nothing")
	}
	if len(leaked) > 0 {
		t.Fatalf("%d throttle entries of finished moves stayed while their group copied on, first: %v", len(leaked), leaked[:min(5, len(leaked))])
	}
}

// Once the first moves are submitted, the moves that start next are
// throttled ahead, while those copy: a slot that frees costs the next move
// its submission only, not a throttle change first.
func TestExecutorThrottlesTheNextMovesAhead(t *testing.T) {
	r := newRig(t, 3, 12)
	r.f.slowParts = map[string]int{key("orders", 0): 3, key("orders", 1): 6, key("orders", 2): 9}
	var throttledSincePoll bool
	poll, firstPoll := 0, 0
	var onTheWay []int // submissions that a throttle change preceded in their poll
	r.f.onPoll = func(n int) { throttledSincePoll, poll = false, n }
	r.f.onThrottle = func() { throttledSincePoll = true }
	r.f.onAlter = func(n int) error {
		if firstPoll == 0 {
			firstPoll = poll // the first moves are throttled as they start
		}
		if throttledSincePoll && poll != firstPoll {
			onTheWay = append(onTheWay, n)
		}
		return nil
	}
	op, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if r.f.submissions < 3 {
		t.Fatalf("%d submissions: the plan needs moves that wait for a slot to prove anything", r.f.submissions)
	}
	if len(onTheWay) > 0 {
		t.Fatalf("submissions %v of %d waited for a throttle change in their own poll", onTheWay, r.f.submissions)
	}
}

// Every throttle entry on the topics is in the stored record by the time
// Kafka takes it: the record is saved before the APPEND, so a run killed
// in between leaves nothing that neither its resume nor a cancel removes
// (a later run finds the entries there and, not having added them, would
// never claim them).
func TestThrottleEntriesAreRecordedBeforeTheyAreAdded(t *testing.T) {
	r := newRig(t, 3, 12)
	r.f.slowParts = map[string]int{key("orders", 0): 3, key("orders", 1): 6}
	var unrecorded []string
	checks := 0
	r.f.onThrottle = func() {
		stored, _ := r.store.Load(context.Background(), "cluster/test")
		recorded := map[string]bool{}
		if stored != nil {
			for _, tr := range stored.ThrottledReplicas {
				for _, e := range tr.Leader {
					recorded[tr.Topic+" leader "+e] = true
				}
				for _, e := range tr.Follower {
					recorded[tr.Topic+" follower "+e] = true
				}
			}
		}
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		checks++
		for topic, es := range r.f.leaderThr {
			for _, e := range es {
				if !recorded[topic+" leader "+e] {
					unrecorded = append(unrecorded, topic+" leader "+e)
				}
			}
		}
		for topic, es := range r.f.followThr {
			for _, e := range es {
				if !recorded[topic+" follower "+e] {
					unrecorded = append(unrecorded, topic+" follower "+e)
				}
			}
		}
	}
	op, err := r.ex.Scale(context.Background(), scaleReq(5))
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	if checks == 0 {
		t.Fatal("nothing was throttled; the test proves nothing")
	}
	if len(unrecorded) > 0 {
		t.Fatalf("%d entries were on the topics before the record listed them, first: %v", len(unrecorded), unrecorded[:min(5, len(unrecorded))])
	}
}
