package executor

import (
	"fmt"
	"time"
)

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
