package executor

// The cluster-wide operation lease: one operation at a time changes a
// cluster (throttles, reassignments, brokers, partitions).
//
// Why log order. A compacted topic has no compare-and-set, so "write a
// lease record, then read it back" lets two contenders both believe they
// won. Instead every contender appends claims, heartbeats and releases to
// ONE partition, whose offsets are one total order that every reader sees
// alike, and the broker stamps every record with its own clock
// (LogAppendTime), so every reader judges expiry on one clock. The lease is
// then a function of the log: replaying the same records gives the same
// holder, the live claim with the lowest position. A consumer group as a
// mutex was the other sound choice; it was not taken because the holder's
// facts (operation, resource, host, pid) would live only in group member
// metadata, a rebalance briefly revokes the partition from a live holder,
// and "the process that resumes the same operation takes over at once" has
// no natural form there.
//
// The rules, applied record by record in offset order (ReplayLease):
//   - a claim record queues a claim at its own offset (its position);
//   - a claim lives while its heartbeats keep coming: it expires at the
//     first record appended more than its ExpireAfter after its last one,
//     and an expired claim never lives again (its later records are
//     ignored; its process must claim anew);
//   - a release ends the claim;
//   - a claim that names a live claim of the same operation in TakesOver
//     ends that claim and inherits its position: the process resuming an
//     operation whose holder died takes its place at once, without waiting
//     for the expiry;
//   - the holder is the live claim with the lowest position.
//
// Every live claim has a record within its ExpireAfter of the log's end,
// and every record carries what a reader needs to judge its claim (position,
// the time of the claim's previous record, its expiry), so readers need not
// replay the whole log: reading back a window of twice the longest
// ExpireAfter gives the same verdict as the whole log.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// LeaseRecordKind is what one lease record says.
type LeaseRecordKind string

// The kinds of lease record.
const (
	LeaseClaimed   LeaseRecordKind = "claim"
	LeaseHeartbeat LeaseRecordKind = "heartbeat"
	LeaseRelease   LeaseRecordKind = "release"
)

// Bounds of a claim's ExpireAfter. The window a reader replays is twice the
// maximum, so a longer expiry would need a longer read.
//
// The default outlasts the longest a healthy cluster may hold a heartbeat:
// a write to the lease's partition is acknowledged by every in-sync
// replica, and a follower that stops fetching stays in the ISR until the
// leader's check, run every replica.lag.time.max.ms / 2, finds it more than
// replica.lag.time.max.ms (30 s by default) behind: up to 45 s. A claim
// cancels its work once a heartbeat is late by more than ExpireAfter minus
// one heartbeat interval, so 2 minutes leaves 96 s for that wait, where
// 30 s left 24 s and lost the lease to one slow follower.
const (
	MinLeaseExpireAfter     = 3 * time.Second
	MaxLeaseExpireAfter     = 5 * time.Minute
	DefaultLeaseExpireAfter = 2 * time.Minute
)

// LeaseWindow is how far back a reader must replay the lease log.
const LeaseWindow = 2*MaxLeaseExpireAfter + time.Minute

// LeaseHolder is who claims the lease and for what.
type LeaseHolder struct {
	// Operation is the id of the operation the claim is for; a claim for
	// the same operation takes over a dead holder at once.
	Operation string `json:"operation"`
	// Resource is the Terraform resource that runs it, such as
	// the one that declares topic "orders".
	Resource string `json:"resource"`
	// What says what the operation changes, for people.
	What string `json:"what"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Session is one provider configuration: operations of one Terraform
	// run share it, and queue for each other even when fail-fast is set.
	Session string `json:"session"`
	// Started is when the claimant started to claim, by its own clock.
	Started time.Time `json:"started"`
}

func (h LeaseHolder) String() string {
	return fmt.Sprintf("operation %s (%s) of %s, run by host %s pid %d", h.Operation, h.What, h.Resource, h.Host, h.PID)
}

// LeaseRecord is one record of the lease log.
type LeaseRecord struct {
	Claim  string          `json:"claim"`
	Kind   LeaseRecordKind `json:"kind"`
	Holder LeaseHolder     `json:"holder"`
	// Position is the claim's place in the queue as its writer knew it
	// when writing: unset (-1) on a claim record, whose position is its
	// own offset.
	Position int64 `json:"position"`
	// Holding is set on the heartbeats of the claim that holds the lease.
	Holding bool `json:"holding,omitempty"`
	// TakesOver names the claim, of the same operation, that this one
	// replaces.
	TakesOver string `json:"takes_over,omitempty"`
	// Previous is the append time of the claim's previous record.
	Previous    time.Time     `json:"previous,omitzero"`
	ExpireAfter time.Duration `json:"expire_after"`

	// Offset and Time are the log's: set on records read back.
	Offset int64     `json:"-"`
	Time   time.Time `json:"-"`
}

// LeaseLog is the append-only log the lease lives in: one partition, whose
// records the broker stamps with its own clock.
type LeaseLog interface {
	// Ensure creates the log when it is missing.
	Ensure(ctx context.Context) error
	// Append writes one record, acknowledged by every in-sync replica.
	Append(ctx context.Context, r LeaseRecord) error
	// Since reads, in offset order, every record appended at or after t
	// (by the broker's clock), up to the end of the log when called.
	Since(ctx context.Context, t time.Time) ([]LeaseRecord, error)
}

// LeaseClaim is one claim as a replay of the log sees it.
type LeaseClaim struct {
	ID       string
	Holder   LeaseHolder
	Position int64
	// Holding is true once the claim announced that it holds the lease.
	Holding bool
	// Claimed is the append time of the claim record (zero when the
	// record is older than the window read).
	Claimed     time.Time
	LastSeen    time.Time
	ExpireAfter time.Duration
}

// Expires is when the claim expires unless it heartbeats again.
func (c LeaseClaim) Expires() time.Time { return c.LastSeen.Add(c.ExpireAfter) }

// LeaseState is the lease as of the last record replayed.
type LeaseState struct {
	// At is the append time of the last record replayed.
	At    time.Time
	live  map[string]*LeaseClaim
	ended map[string]string
}

// ReplayLease applies the lease's rules to records in offset order.
func ReplayLease(recs []LeaseRecord) LeaseState {
	s := LeaseState{live: map[string]*LeaseClaim{}, ended: map[string]string{}}
	for _, r := range recs {
		s.apply(r)
	}
	return s
}

func (s *LeaseState) apply(r LeaseRecord) {
	s.At = r.Time
	for id, c := range s.live {
		if r.Time.Sub(c.LastSeen) > c.ExpireAfter {
			s.end(id, fmt.Sprintf("expired: no heartbeat between %s and %s", stamp(c.LastSeen), stamp(r.Time)))
		}
	}
	if _, gone := s.ended[r.Claim]; gone {
		return
	}
	c := s.live[r.Claim]
	if c == nil {
		if r.Kind != LeaseClaimed && !r.Previous.IsZero() && r.Time.Sub(r.Previous) > r.ExpireAfter {
			s.ended[r.Claim] = fmt.Sprintf("expired: no heartbeat between %s and %s", stamp(r.Previous), stamp(r.Time))
			return
		}
		c = &LeaseClaim{ID: r.Claim, Position: r.Position}
		if r.Kind == LeaseClaimed {
			c.Position, c.Claimed = r.Offset, r.Time
		}
		s.live[r.Claim] = c
	}
	c.Holder, c.LastSeen, c.ExpireAfter = r.Holder, r.Time, r.ExpireAfter
	c.Holding = c.Holding || r.Holding
	if r.Kind != LeaseClaimed && r.Position >= 0 && r.Position < c.Position {
		// The writer validated a takeover this reader saw no record of.
		c.Position = r.Position
	}
	if t := s.live[r.TakesOver]; t != nil && t.ID != c.ID && t.Holder.Operation == c.Holder.Operation {
		s.end(t.ID, fmt.Sprintf("taken over by claim %s of the same operation, from host %s pid %d", c.ID, c.Holder.Host, c.Holder.PID))
		c.Position = min(c.Position, t.Position)
	}
	if r.Kind == LeaseRelease {
		s.end(c.ID, "released")
	}
}

func (s *LeaseState) end(id, why string) {
	delete(s.live, id)
	s.ended[id] = why
}

// Holder is the live claim with the lowest position.
func (s LeaseState) Holder() (LeaseClaim, bool) {
	q := s.Queue()
	if len(q) == 0 {
		return LeaseClaim{}, false
	}
	return q[0], true
}

// Queue is every live claim, in position order.
func (s LeaseState) Queue() []LeaseClaim {
	out := make([]LeaseClaim, 0, len(s.live))
	for _, c := range s.live {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Position != out[j].Position {
			return out[i].Position < out[j].Position
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Claim returns the live claim id, if it lives.
func (s LeaseState) Claim(id string) (LeaseClaim, bool) {
	if c := s.live[id]; c != nil {
		return *c, true
	}
	return LeaseClaim{}, false
}

// Ended says why claim id ended, if it did.
func (s LeaseState) Ended(id string) (string, bool) {
	why, ok := s.ended[id]
	return why, ok
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

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

// LeaseBusyError is a fail-fast refusal: another run holds the lease.
type LeaseBusyError struct {
	Holder LeaseClaim
	At     time.Time
}

func (e *LeaseBusyError) Error() string {
	return fmt.Sprintf("the cluster's operation lease is held by %s since %s (last heartbeat %s, expires %s unless it heartbeats again); fail-fast is set, so this operation did not wait",
		e.Holder.Holder, stamp(since(e.Holder)), stamp(e.Holder.LastSeen), stamp(e.Holder.Expires()))
}

// LeaseWaitError says the context ended while waiting for the lease;
// nothing was changed.
type LeaseWaitError struct {
	Holder LeaseClaim
	Waited time.Duration
	Err    error
}

func (e *LeaseWaitError) Error() string {
	if e.Holder.ID == "" {
		return fmt.Sprintf("gave up after waiting %s for the cluster's operation lease: %v", e.Waited.Round(time.Second), e.Err)
	}
	return fmt.Sprintf("gave up after waiting %s for the cluster's operation lease, held by %s since %s (last heartbeat %s): %v",
		e.Waited.Round(time.Second), e.Holder.Holder, stamp(since(e.Holder)), stamp(e.Holder.LastSeen), e.Err)
}

func (e *LeaseWaitError) Unwrap() error { return e.Err }

// LeaseLostError says the holder stopped holding while it worked: its
// heartbeats went unacknowledged for too long, or another process took its
// operation over. The operation's context was cancelled.
type LeaseLostError struct {
	Claim  string
	Reason string
	// Err is the operation's own error, if any.
	Err error
}

func (e *LeaseLostError) Error() string {
	s := fmt.Sprintf("lost the cluster's operation lease (claim %s): %s", e.Claim, e.Reason)
	if e.Err != nil {
		s += "; the operation stopped with: " + e.Err.Error()
	}
	return s
}

func (e *LeaseLostError) Unwrap() error { return e.Err }

func since(c LeaseClaim) time.Time {
	if !c.Claimed.IsZero() {
		return c.Claimed
	}
	return c.Holder.Started
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
		return fail(fmt.Errorf("creating the cluster's operation lease: %w", err))
	}
	c := &claimant{l: &lc, id: l.newID(), ttl: ttl, position: -1,
		held: &Held{holder: LeaseHolder{Operation: w.Operation, Resource: w.Resource, What: w.What, Host: l.Host, PID: l.PID, Session: l.Session, Started: start.UTC()}}}
	if err := c.append(ctx, LeaseClaimed, ""); err != nil {
		return fail(fmt.Errorf("claiming the cluster's operation lease: %w", err))
	}
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		if err := c.append(rctx, LeaseRelease, ""); err != nil {
			log.Warn(ctx, "could not release the cluster's operation lease; it expires on its own", map[string]any{"claim": c.id, "expire_after": ttl.String(), "error": err.Error()})
		}
	}

	triedTakeover := false
	for {
		st, err := lc.read(ctx, clock.Now())
		if err != nil {
			release()
			return fail(fmt.Errorf("reading the cluster's operation lease: %w", err))
		}
		me, live := st.Claim(c.id)
		if !live {
			why, ended := st.Ended(c.id)
			if ended {
				// Our heartbeats stopped long enough to expire: queue anew.
				log.Warn(ctx, "the claim on the cluster's operation lease expired while waiting; claiming again", map[string]any{"claim": c.id, "why": why})
				c.id, c.position, c.last, c.holding = l.newID(), -1, time.Time{}, false
				if err := c.append(ctx, LeaseClaimed, ""); err != nil {
					return fail(fmt.Errorf("claiming the cluster's operation lease: %w", err))
				}
			}
			// Not yet visible: read again.
			if err := clock.Sleep(ctx, poll); err != nil {
				release()
				return fail(err)
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
					release()
					return fail(fmt.Errorf("taking over the cluster's operation lease: %w", err))
				}
				continue
			}
		}
		h, _ := st.Holder()
		if h.ID == c.id && c.holding {
			break // announced, and read back still holding
		}
		if h.ID == c.id {
			// Announce, then read back: the verdict counts only once the
			// announcement is in the log, within the claim's expiry.
			c.holding = true
			if err := c.append(ctx, LeaseHeartbeat, ""); err != nil {
				release()
				return fail(fmt.Errorf("announcing the cluster's operation lease: %w", err))
			}
			continue
		}
		if l.FailFast && h.Holder.Session != l.Session {
			release()
			return &LeaseBusyError{Holder: h, At: st.At}
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
			release()
			return fail(err)
		}
		if clock.Now().Sub(c.sent) >= beat {
			if err := c.append(ctx, LeaseHeartbeat, ""); err != nil && ctx.Err() == nil {
				log.Warn(ctx, "heartbeat of a waiting claim failed", map[string]any{"claim": c.id, "error": err.Error()})
			}
		}
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
	err := fn(hctx, c.held)
	stopBeat()
	<-stopped
	cause := context.Cause(hctx)
	cancel(nil)
	release()
	var lost *LeaseLostError
	if errors.As(cause, &lost) && err != nil {
		lost.Err = err
		return lost
	}
	return err
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
		if err := c.append(ctx, LeaseHeartbeat, ""); err == nil {
			if st, err := c.l.read(ctx, clock.Now()); err == nil {
				if me, live := st.Claim(c.id); live {
					c.last = me.LastSeen
					if h, _ := st.Holder(); h.ID == c.id {
						confirmed = c.sent
					}
				} else if why, ended := st.Ended(c.id); ended {
					cancel(&LeaseLostError{Claim: c.id, Reason: why})
					return
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		if late := clock.Now().Sub(confirmed); late > c.ttl-beat {
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
