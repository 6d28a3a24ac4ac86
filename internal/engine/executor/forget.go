package executor

import (
	"context"
	"fmt"
)

// Deleter is a Store that can forget an operation: what Forget needs.
type Deleter interface {
	Delete(ctx context.Context, key string) error
}

// Forget ends the record under key once what its operation worked on is
// gone, as a deleted topic's replication factor change: nothing else would
// remove an unfinished one's broker throttle now, so it is removed, under
// the lease like every other change of the brokers' throttles, and the
// record is deleted. Without a record it does nothing and takes no lease.
func (e *Executor) Forget(ctx context.Context, key, resource string) error {
	op, err := e.d.Store.Load(ctx, key)
	if err != nil || op == nil {
		return err
	}
	return e.Exclusive(ctx, Work{Key: key, ID: op.ID, Resource: resource, What: "forget operation " + op.ID}, func(ctx context.Context) error {
		// Read again under the lease: a resume may have finished it.
		op, err := e.d.Store.Load(ctx, key)
		if err != nil || op == nil {
			return err
		}
		if !op.Done() && len(op.ThrottledBrokers) > 0 {
			if err := e.d.Kafka.ClearThrottle(ctx, op.ThrottledBrokers); err != nil {
				return fmt.Errorf("removing the replication throttle of unfinished operation %s from brokers %v: %w; "+
					"remove leader.replication.throttled.rate and follower.replication.throttled.rate from those brokers",
					op.ID, op.ThrottledBrokers, err)
			}
		}
		if d, ok := e.d.Store.(Deleter); ok {
			if err := d.Delete(ctx, key); err != nil {
				return fmt.Errorf("deleting the record of operation %s: %w", op.ID, err)
			}
		}
		return nil
	})
}
