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
	"fmt"
	"sort"
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
	// Resource names who runs it, in the caller's words: the
	// configuration that declares topic "orders", say.
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
