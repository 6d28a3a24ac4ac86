package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing/synctest"
	"time"
)

// The deterministic scheduler. A run lives in a synctest bubble, whose
// clock is fake and advances only when every goroutine of the run is
// blocked. Every port call is a request to the scheduler's goroutine,
// which waits until the whole run is blocked (synctest.Wait), so the
// requests pending are exactly those the program's logic makes, picks one
// with the seeded source, draws its fault and runs it against the model.
// Only the scheduler touches the model and the source; the executors'
// goroutines run pure code between their calls. The same seed therefore
// gives the same sequence of calls, faults and answers.

// faultKind is what the scheduler does to one port call, or around it.
type faultKind int

const (
	faultNone faultKind = iota
	// faultFail: the call fails and changes nothing.
	faultFail
	// faultTimeout: the call hangs, then fails, and changes nothing.
	faultTimeout
	// faultLost: the call takes effect, but its answer is an error.
	faultLost
	// faultCrash: the process dies at this call (which may have taken
	// effect); everything it held in memory is gone.
	faultCrash
	// faultController: the controller moves; the call in flight fails,
	// taken or not, and reassignments in flight survive.
	faultController
	// faultBrokerDies and faultBrokerBack happen beside the call.
	faultBrokerDies
	faultBrokerBack
	// faultSecond: a second executor starts an operation at the same
	// moment (drawn by the scenario, counted here).
	faultSecond
	// faultLag: the brokers' metadata shows each finished reassignment on
	// its old and new replicas together for the seed's lag after the
	// controller stops listing it (drawn by the scenario, counted here).
	faultLag
	// faultHang: a heartbeat of the lease hangs for the profile's hang,
	// then fails (the lease profile only).
	faultHang
	faultKinds
)

var faultNames = [faultKinds]string{"none", "fail", "timeout", "lost-answer", "crash", "controller-move", "broker-dies", "broker-back", "second-executor", "metadata-lag", "heartbeat-hang"}

func (f faultKind) String() string { return faultNames[f] }

var errProcessGone = errors.New("the process is gone")

// actor is one process: one executor run, as one `terraform apply`.
type actor struct {
	id      int
	session string
	ctx     context.Context
	cancel  context.CancelFunc
	dead    atomic.Bool
	claims  atomic.Int64
	// releaseFailed: a fault hit its lease release, which then expires.
	releaseFailed bool
}

type actorKey struct{}

func actorOf(ctx context.Context) *actor {
	a, _ := ctx.Value(actorKey{}).(*actor)
	return a
}

// request is one port call waiting for its turn.
type request struct {
	actor    *actor
	what     string
	mutating bool
	apply    func() error
	done     chan answer
	// answerOnly: the turn of a call's late answer, which changes nothing.
	answerOnly bool
}

type answer struct {
	err   error
	delay time.Duration
}

// faultRates are the chances, per call, of each fault.
type faultRates struct {
	on                                   bool
	fail, timeout, lost, controller      float64
	crash, brokerDies, brokerBack        float64
	maxCrashes, maxKills, crashes, kills int
}

type sched struct {
	w       *world
	rng     *rand.Rand
	stop    chan struct{}
	stopped chan struct{}
	// pending is written by callers and read by the scheduler, each time
	// under the channel handshakes below.
	pending chan *request
	queue   []*request
	calls   int
	trace   uint64
}

func newSched(w *world, rng *rand.Rand) *sched {
	return &sched{w: w, rng: rng, pending: make(chan *request, 64), stop: make(chan struct{}), stopped: make(chan struct{}), trace: 14695981039346656037}
}

// call runs apply as one port call of the actor in ctx: in its turn, with
// the fault the seed draws. A call of a dead process never reaches the
// cluster.
func (w *world) call(ctx context.Context, what string, mutating bool, apply func() error) error {
	a := actorOf(ctx)
	if a == nil {
		panic("a port was called without an actor in its context: " + what)
	}
	if a.dead.Load() {
		return errProcessGone
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ans := w.turn(&request{actor: a, what: what, mutating: mutating, apply: apply})
	if ans.delay > 0 {
		return w.wait(ctx, what, ans.delay, ans.err)
	}
	return ans.err
}

// turn hands r to the scheduler and waits for its answer.
func (w *world) turn(r *request) answer {
	r.done = make(chan answer, 1)
	w.s.pending <- r
	return <-r.done
}

// wait is a call that takes d: its answer (err, or ctx's end) comes back
// in a turn of its own. A goroutine woken by a timer may act on another
// one at once (a heartbeat that fails cancels the work) and two timers can
// fire at one instant, so what follows a wait goes through the scheduler
// like any call.
func (w *world) wait(ctx context.Context, what string, d time.Duration, err error) error {
	if serr := sleep(ctx, d); serr != nil {
		err = serr
	}
	w.turn(&request{actor: actorOf(ctx), what: what + " (answer)", answerOnly: true})
	return err
}

func (s *sched) run() {
	defer close(s.stopped)
	for {
		synctest.Wait()
		s.drain()
		if len(s.queue) == 0 {
			select {
			case r := <-s.pending:
				s.queue = append(s.queue, r)
				continue
			case <-s.stop:
				return
			}
		}
		slices.SortStableFunc(s.queue, func(a, b *request) int {
			if a.actor.id != b.actor.id {
				return a.actor.id - b.actor.id
			}
			return strings.Compare(a.what, b.what)
		})
		i := s.rng.IntN(len(s.queue))
		r := s.queue[i]
		s.queue = slices.Delete(s.queue, i, i+1)
		r.done <- s.exec(r)
	}
}

func (s *sched) drain() {
	for {
		select {
		case r := <-s.pending:
			s.queue = append(s.queue, r)
		default:
			return
		}
	}
}

func (s *sched) halt() {
	close(s.stop)
	<-s.stopped
}

// exec runs one call: the world first catches up with the clock, then the
// fault is drawn and the call applied (or not) against the model.
func (s *sched) exec(r *request) answer {
	w := s.w
	if r.actor.dead.Load() {
		return answer{err: errProcessGone}
	}
	now := time.Now()
	w.m.advance(now)
	if r.actor == w.oracle {
		_ = r.apply()
		return answer{}
	}
	if r.answerOnly {
		return answer{}
	}
	s.calls++
	if s.calls > maxCalls {
		w.violate("the run made more than %d port calls without ending: a livelock; reassigning: %s", maxCalls, w.m.inFlight())
		r.actor.dead.Store(true)
		r.actor.cancel()
		return answer{err: errProcessGone}
	}
	f := s.draw(r)
	w.stats.fault(f)
	s.mix(fmt.Sprintf("%d %s %d", r.actor.id, r.what, f))
	w.record(note{at: now, actor: r.actor.id, what: r.what, fault: f, call: true})
	switch f {
	case faultBrokerDies, faultBrokerBack:
		w.brokerEvent(f)
		return s.apply(r, answer{})
	case faultFail:
		return answer{err: fmt.Errorf("%s: the broker answered with an error (injected)", r.what)}
	case faultTimeout, faultHang:
		d := time.Duration(5+s.rng.IntN(40)) * time.Second
		if f == faultHang {
			d = w.prof.hang
		}
		return answer{err: fmt.Errorf("%s: request timed out after %s (injected)", r.what, d), delay: d}
	case faultLost:
		ans := s.apply(r, answer{})
		if ans.err == nil {
			ans.err = fmt.Errorf("%s: connection closed before the answer came (injected; the request took effect)", r.what)
		}
		return ans
	case faultController:
		ans := answer{}
		if s.rng.IntN(2) == 0 {
			ans = s.apply(r, ans)
		}
		if ans.err == nil {
			ans.err = fmt.Errorf("%s: NOT_CONTROLLER: the controller moved (injected)", r.what)
		}
		return ans
	case faultCrash:
		if s.rng.IntN(2) == 0 {
			s.apply(r, answer{})
		}
		r.actor.dead.Store(true)
		r.actor.cancel()
		return answer{err: errProcessGone}
	}
	return s.apply(r, answer{})
}

// maxCalls bounds one seed's port calls: an executor that spins without
// progress fails the seed instead of hanging the test.
const maxCalls = 20000

func (s *sched) apply(r *request, ans answer) answer {
	if r.mutating {
		s.w.checkLeaseBeforeChange(r)
	}
	if err := r.apply(); err != nil {
		ans.err = err
	}
	s.mix(fmt.Sprint(ans.err == nil))
	if r.mutating {
		s.w.checkAfterChange(r)
	}
	return ans
}

func (s *sched) draw(r *request) faultKind {
	fr := &s.w.faults
	if !fr.on {
		return faultNone
	}
	x := s.rng.Float64()
	if r.what == "lease Append heartbeat" && s.w.prof.hangBeat > 0 {
		if x < s.w.prof.hangBeat {
			return faultHang
		}
		x = s.rng.Float64()
	}
	pick := func(p float64) bool {
		if x < p {
			return true
		}
		x -= p
		return false
	}
	switch {
	case pick(fr.fail):
		return faultFail
	case pick(fr.timeout):
		return faultTimeout
	case pick(fr.lost):
		return faultLost
	case pick(fr.controller):
		return faultController
	case pick(fr.crash):
		if fr.crashes < fr.maxCrashes {
			fr.crashes++
			return faultCrash
		}
	case pick(fr.brokerDies):
		if fr.kills < fr.maxKills && s.w.victim() != nil {
			fr.kills++
			return faultBrokerDies
		}
	case pick(fr.brokerBack):
		if s.w.killedBroker() != nil {
			return faultBrokerBack
		}
	}
	return faultNone
}

func (s *sched) mix(x string) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(x))
	s.trace = s.trace*1099511628211 ^ h.Sum64()
}
