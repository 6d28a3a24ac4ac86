package executor

// The lessee: one process's claims on the operation lease, their
// heartbeats, and the wait for the lease. The rules a claim is judged by
// are ReplayLease's.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// LeaseWork is what one caller holds the lease for.
type LeaseWork struct {
	// Operation is the operation's id: an unfinished operation's own id
	// when it is resumed, so that a dead holder of it is taken over at once.
	Operation string
	Resource  string
	What      string
}

// Lessee takes the cluster's operation lease for the operations of one
// provider configuration. It is safe for concurrent use: each Hold is a
// claim of its own, and claims of one process queue like any others.
type Lessee struct {
	Records LeaseLog
	// Host, PID and Session identify this process and run in its claims.
	Host    string
	PID     int
	Session string
	// FailFast makes Hold return a *LeaseBusyError at once when another
	// run holds the lease, instead of waiting for it. Operations of the
	// same run (Session) always queue: Terraform runs them in parallel.
	FailFast bool
	// ExpireAfter is how long after its last heartbeat a claim expires
	// (default DefaultLeaseExpireAfter). Heartbeats go at a fifth of it.
	ExpireAfter time.Duration
	// Poll is how often a waiting claim reads the log (default 1s).
	Poll  time.Duration
	Clock Clock
	Log   Logger
	// NewID returns a fresh claim id (default: 16 random hex digits).
	NewID func() string
}

// Held is a lease held by one Hold call.
type Held struct {
	mu     sync.Mutex
	holder LeaseHolder
}

// SetOperation records, in the following heartbeats, the operation the
// holder now runs: a process resuming it takes it over at once.
func (h *Held) SetOperation(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holder.Operation = id
}

func (h *Held) facts() LeaseHolder {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holder
}

func (l *Lessee) defaults() (ttl, beat, poll time.Duration, clock Clock, log Logger) {
	ttl = l.ExpireAfter
	if ttl <= 0 {
		ttl = DefaultLeaseExpireAfter
	}
	// The window a reader replays covers no longer an expiry.
	ttl = min(ttl, MaxLeaseExpireAfter)
	poll = l.Poll
	if poll <= 0 {
		poll = time.Second
	}
	beat = ttl / 5
	poll = min(poll, beat)
	clock = l.Clock
	if clock == nil {
		clock = SystemClock{}
	}
	log = l.Log
	if log == nil {
		log = nopLogger{}
	}
	return ttl, beat, poll, clock, log
}

func (l *Lessee) newID() string {
	if l.NewID != nil {
		return l.NewID()
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// claimant is one Hold's claim and what it knows of its own records.
type claimant struct {
	l        *Lessee
	id       string
	held     *Held
	ttl      time.Duration
	position int64
	holding  bool
	// last is the append time of the claim's last record read back;
	// sent the local time its last acknowledged record was sent.
	last time.Time
	sent time.Time
}

func (c *claimant) append(ctx context.Context, kind LeaseRecordKind, takesOver string) error {
	r := LeaseRecord{Claim: c.id, Kind: kind, Holder: c.held.facts(), Position: c.position, Holding: c.holding && kind != LeaseRelease,
		TakesOver: takesOver, Previous: c.last, ExpireAfter: c.ttl}
	if kind == LeaseClaimed {
		r.Position, r.Previous = -1, time.Time{}
	}
	sent := c.l.Clock.Now()
	if err := c.l.Records.Append(ctx, r); err != nil {
		return err
	}
	c.sent = sent
	return nil
}

func (l *Lessee) read(ctx context.Context, now time.Time) (LeaseState, error) {
	recs, err := l.Records.Since(ctx, now.Add(-LeaseWindow))
	if err != nil {
		return LeaseState{}, err
	}
	return ReplayLease(recs), nil
}

// Hold claims the lease for w, waits until the claim holds it (or, with
// FailFast, returns a *LeaseBusyError when another run holds it), runs fn
// while heartbeating, and releases it. fn's context is cancelled with a
// *LeaseLostError as its cause should the claim stop holding. When ctx
// ends while waiting, Hold returns a *LeaseWaitError that wraps ctx's error.
func (l *Lessee) Hold(ctx context.Context, w LeaseWork, fn func(ctx context.Context, h *Held) error) error {
	ttl, beat, poll, clock, log := l.defaults()
	lc := *l
	lc.Clock, lc.Log = clock, log
	start := clock.Now()
	c, err := lc.acquire(ctx, w, start, ttl, beat, poll)
	if err != nil {
		return err
	}

	log.Info(ctx, "holding the cluster's operation lease", map[string]any{"claim": c.id, "operation": w.Operation, "resource": w.Resource,
		"what": w.What, "waited": clock.Now().Sub(start).Round(time.Millisecond).String()})

	hctx, cancel := context.WithCancelCause(ctx)
	bctx, stopBeat := context.WithCancel(hctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		c.heartbeat(bctx, beat, cancel)
	}()
	err = fn(hctx, c.held)
	stopBeat()
	<-stopped
	cause := context.Cause(hctx)
	cancel(nil)
	c.release(ctx)
	var lost *LeaseLostError
	if errors.As(cause, &lost) && err != nil {
		lost.Err = err
		return lost
	}
	return err
}

// acquire claims the lease for w and waits until the claim holds it. l is
// the Lessee with its defaults filled in. On an error, the claim is
// released (or left to expire when it could not be claimed again).
func (l *Lessee) acquire(ctx context.Context, w LeaseWork, start time.Time, ttl, beat, poll time.Duration) (*claimant, error) {
	clock, log := l.Clock, l.Log
	var waitingFor LeaseClaim
	// A failure once ctx has ended is the end of the wait, whatever the
	// request that noticed it says (an admin call cut short reads as an
	// unreachable cluster).
	fail := func(err error) error {
		if ctx.Err() != nil {
			return &LeaseWaitError{Holder: waitingFor, Waited: clock.Now().Sub(start), Err: ctx.Err()}
		}
		return err
	}
	if err := l.Records.Ensure(ctx); err != nil {
		return nil, fail(fmt.Errorf("creating the cluster's operation lease: %w", err))
	}
	c := &claimant{l: l, id: l.newID(), ttl: ttl, position: -1,
		held: &Held{holder: LeaseHolder{Operation: w.Operation, Resource: w.Resource, What: w.What, Host: l.Host, PID: l.PID, Session: l.Session, Started: start.UTC()}}}
	if err := c.append(ctx, LeaseClaimed, ""); err != nil {
		// The claim may have landed with its answer lost: release it, or
		// it would block every other process until it expired. A release
		// of a claim that never landed ends nothing.
		c.release(ctx)
		return nil, fail(fmt.Errorf("claiming the cluster's operation lease: %w", err))
	}

	triedTakeover := false
	for {
		st, err := l.read(ctx, clock.Now())
		if err != nil {
			c.release(ctx)
			return nil, fail(fmt.Errorf("reading the cluster's operation lease: %w", err))
		}
		me, live := st.Claim(c.id)
		if !live {
			why, ended := st.Ended(c.id)
			if ended {
				// Our heartbeats stopped long enough to expire: queue anew.
				log.Warn(ctx, "the claim on the cluster's operation lease expired while waiting; claiming again", map[string]any{"claim": c.id, "why": why})
				c.id, c.position, c.last, c.holding = l.newID(), -1, time.Time{}, false
				if err := c.append(ctx, LeaseClaimed, ""); err != nil {
					c.release(ctx)
					return nil, fail(fmt.Errorf("claiming the cluster's operation lease: %w", err))
				}
			}
			// Not yet visible: read again.
			if err := clock.Sleep(ctx, poll); err != nil {
				c.release(ctx)
				return nil, fail(err)
			}
			continue
		}
		c.position, c.last = me.Position, me.LastSeen
		if !triedTakeover {
			triedTakeover = true
			if t, ok := sameOperation(st, me); ok {
				log.Info(ctx, "taking over the cluster's operation lease from a claim of the same operation", map[string]any{
					"claim": c.id, "from_claim": t.ID, "holder": t.Holder.String(), "last_heartbeat": stamp(t.LastSeen)})
				if err := c.append(ctx, LeaseHeartbeat, t.ID); err != nil {
					c.release(ctx)
					return nil, fail(fmt.Errorf("taking over the cluster's operation lease: %w", err))
				}
				continue
			}
		}
		h, _ := st.Holder()
		if h.ID == c.id && c.holding {
			return c, nil // announced, and read back still holding
		}
		if h.ID == c.id {
			// Announce, then read back: the verdict counts only once the
			// announcement is in the log, within the claim's expiry.
			c.holding = true
			if err := c.append(ctx, LeaseHeartbeat, ""); err != nil {
				c.release(ctx)
				return nil, fail(fmt.Errorf("announcing the cluster's operation lease: %w", err))
			}
			continue
		}
		if l.FailFast && h.Holder.Session != l.Session {
			c.release(ctx)
			return nil, &LeaseBusyError{Holder: h, At: st.At}
		}
		if h.ID != waitingFor.ID || h.Holder.Operation != waitingFor.Holder.Operation {
			waitingFor = h
			log.Info(ctx, "waiting for the cluster's operation lease", map[string]any{
				"holder_operation": h.Holder.Operation, "holder_resource": h.Holder.Resource, "holder_what": h.Holder.What,
				"holder_host": h.Holder.Host, "holder_pid": h.Holder.PID, "holder_since": stamp(since(h)),
				"holder_last_heartbeat": stamp(h.LastSeen), "holder_expires": stamp(h.Expires()),
				"queued_ahead": ahead(st, c.id), "operation": w.Operation, "resource": w.Resource})
		}
		if err := clock.Sleep(ctx, poll); err != nil {
			c.release(ctx)
			return nil, fail(err)
		}
		if clock.Now().Sub(c.sent) >= beat {
			if err := c.append(ctx, LeaseHeartbeat, ""); err != nil && ctx.Err() == nil {
				log.Warn(ctx, "heartbeat of a waiting claim failed", map[string]any{"claim": c.id, "error": err.Error()})
			}
		}
	}
}

// release appends the claim's release. It outlives ctx's cancellation: a
// claim that is not released holds up the queue until it expires.
func (c *claimant) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := c.append(rctx, LeaseRelease, ""); err != nil {
		c.l.Log.Warn(ctx, "could not release the cluster's operation lease; it expires on its own", map[string]any{"claim": c.id, "expire_after": c.ttl.String(), "error": err.Error()})
	}
}

// heartbeat keeps the held claim alive until done, and cancels the work
// when the claim stops holding: another process took the operation over,
// or no heartbeat was acknowledged for long enough that other readers may
// judge the claim expired. It stops a heartbeat interval before that, so
// the work ends before anyone else can take the lease.
func (c *claimant) heartbeat(ctx context.Context, beat time.Duration, cancel context.CancelCauseFunc) {
	clock := c.l.Clock
	confirmed := c.sent
	for {
		if clock.Sleep(ctx, beat) != nil {
			return
		}
		// The beat's calls end when the claim would stop holding: an append
		// to a partition whose leader is unreachable waits out the
		// client's request timeout, which may be longer than the claim
		// lives, and the work must stop before anyone else may judge the
		// claim expired, not once the append returns.
		bctx, cancelBeat := context.WithTimeout(ctx, confirmed.Add(c.ttl-beat).Sub(clock.Now()))
		if err := c.append(bctx, LeaseHeartbeat, ""); err == nil {
			if st, err := c.l.read(bctx, clock.Now()); err == nil {
				if me, live := st.Claim(c.id); live {
					c.last = me.LastSeen
					if h, _ := st.Holder(); h.ID == c.id {
						confirmed = c.sent
					}
				} else if why, ended := st.Ended(c.id); ended {
					cancelBeat()
					cancel(&LeaseLostError{Claim: c.id, Reason: why})
					return
				}
			}
		}
		cancelBeat()
		if ctx.Err() != nil {
			return
		}
		if late := clock.Now().Sub(confirmed); late >= c.ttl-beat {
			cancel(&LeaseLostError{Claim: c.id, Reason: fmt.Sprintf("no heartbeat was acknowledged for %s, and the lease expires after %s", late.Round(time.Millisecond), c.ttl)})
			return
		}
	}
}

// sameOperation finds a live claim of me's operation queued before it.
func sameOperation(st LeaseState, me LeaseClaim) (LeaseClaim, bool) {
	if me.Holder.Operation == "" {
		return LeaseClaim{}, false
	}
	for _, c := range st.Queue() {
		if c.ID != me.ID && c.Position < me.Position && c.Holder.Operation == me.Holder.Operation {
			return c, true
		}
	}
	return LeaseClaim{}, false
}

func ahead(st LeaseState, id string) int {
	n := 0
	for _, c := range st.Queue() {
		if c.ID == id {
			return n
		}
		n++
	}
	return n
}
