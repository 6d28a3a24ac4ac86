package executor

import (
	"context"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// CostRequest asks what an apply to a broker count would do now.
type CostRequest struct {
	// Key is the cluster's operation key. The operation stored under it
	// is resumed when unfinished and heading for Target, cancelled when
	// heading elsewhere, and its measured broker timings make the ETA.
	Key     string
	Target  int
	Remove  []int32
	Balance Balance
	Options engine.Options
	// Method is the scaling method of the apply, for the ETA, and
	// BrokerStart the time it says its platform takes to add a broker,
	// counted until one is measured (zero: it says nothing).
	Method      string
	BrokerStart time.Duration
	// Planned, when set, is the cluster to plan from: the snapshot the
	// last refresh kept, so that a plan and its apply agree to the byte.
	// Otherwise the plan is made from Live.
	Planned *engine.Cluster
	// Live reads the cluster as it is now.
	Live func() engine.Cluster
	// Fresh is PreviewScale of Live, which the caller may share between
	// previews of one read; nil computes it.
	Fresh func() (*Preview, error)
	// Standalone is a preview that no apply follows (a data source): it
	// plans from Live past any unfinished operation, estimates with the
	// scaling method the last operation was measured with, and a log it
	// cannot read costs it only the measured timings.
	Standalone bool
	// CatchUp measures the moving partitions' recent writes, for what
	// catching up on them adds (Cost.CatchUp).
	CatchUp bool
}

// Cost is what an apply would do now: the rest of an unfinished operation
// heading for the same count (Preview.Resumes), or a fresh plan, after the
// cancel of an operation heading elsewhere (Preview.Cancels).
type Cost struct {
	// Preview is the preview the cost is read from. It may be shared
	// (CostRequest.Fresh): callers must not change it.
	Preview *Preview
	// Last is the operation stored under the key, nil when none is (or,
	// standalone, when the log could not be read).
	Last *Operation
	// Moves and Bytes are the replica moves and bytes left to copy.
	Moves int
	Bytes int64
	// RemoteBytes is what the moving partitions of tiered topics keep in
	// remote storage, which Bytes leaves out (engine.Plan.RemoteBytes);
	// zero for a resumed operation.
	RemoteBytes int64
	// ETA estimates the apply; Leaving are the brokers it removes.
	ETA     engine.ETA
	Leaving []int32
	// CatchUp is ETA again once the moving partitions' recent writes are
	// counted: nil unless asked for, measured, and something was written.
	// A plan's estimated duration leaves it out, because a live rate
	// differs between the plan and the apply.
	CatchUp *engine.ETA
}

// Resuming reports whether the apply resumes the last operation.
func (c Cost) Resuming() bool { return c.Preview.Resumes != nil }

// PreviewCost is the one choice of what an apply to req.Target would do
// now, and of the measured timings its ETA is made with: a plan of the
// cluster as the last refresh kept it when the caller has that, else a
// fresh plan of the live cluster when no operation is unfinished or owed
// its balance (shared with the data source's preview), else the live
// cluster planned past the operation on record (resumed or cancelled).
func (e *Executor) PreviewCost(ctx context.Context, req CostRequest) (Cost, error) {
	fresh := req.Fresh
	if fresh == nil {
		fresh = func() (*Preview, error) { return PreviewScale(req.Live(), req.Target, req.Remove, req.Options) }
	}
	var c Cost
	var err error
	method := req.Method
	if req.Standalone {
		if c.Preview, err = fresh(); err != nil {
			return c, err
		}
		if c.Last, err = e.d.Store.Load(ctx, req.Key); err != nil {
			e.d.Log.Warn(ctx, "could not read the operation log for measured broker timings; the estimate uses the defaults", map[string]any{"error": err.Error()})
			c.Last = nil
		}
		if c.Last != nil {
			method = c.Last.Timings.Method
		}
	} else {
		if c.Last, err = e.d.Store.Load(ctx, req.Key); err != nil {
			return c, err
		}
		op := c.Last
		switch {
		case req.Planned != nil:
			c.Preview, err = PreviewScaleFrom(*req.Planned, op, req.Target, req.Remove, req.Balance, req.Options)
		case (op == nil || op.Done()) && req.Balance == BalanceNone && !op.OwesBalance():
			c.Preview, err = fresh()
		default:
			c.Preview, err = PreviewScaleFrom(req.Live(), op, req.Target, req.Remove, req.Balance, req.Options)
		}
		if err != nil {
			return c, err
		}
	}
	pv, throttle := c.Preview, req.Options.ThrottleBytesPerSec
	c.ETA, c.Leaving = pv.ETA(c.Last, method, req.BrokerStart, throttle), pv.RemoveBrokers
	if pv.Resumes != nil {
		rest := c.Last.Remaining(c.Last.ThrottleRate)
		c.Moves, c.Bytes = rest.Moves, rest.Bytes
		return c, nil
	}
	c.Moves, c.Bytes, c.RemoteBytes = pv.Plan.ReplicaMoves, pv.Plan.TotalBytes, pv.Plan.RemoteBytes
	if req.CatchUp && pv.Plan != nil {
		c.CatchUp = e.catchUp(ctx, pv, c.Last, method, req.BrokerStart, throttle)
	}
	return c, nil
}

// catchUp is the preview's ETA with the moving partitions' recent writes
// counted, or nil when they cannot be read or none were written. It works
// on a copy: the preview may be shared.
func (e *Executor) catchUp(ctx context.Context, pv *Preview, last *Operation, method string, brokerStart time.Duration, throttle int64) *engine.ETA {
	withGrowth := *pv
	withGrowth.Plan = pv.Plan.WithOwnMoves()
	if err := MeasureGrowth(ctx, e.d.Kafka, withGrowth.Plan); err != nil {
		e.d.Log.Warn(ctx, "could not read the moving partitions' recent writes; the estimate leaves out the catch-up", map[string]any{"error": err.Error()})
		return nil
	}
	eta := withGrowth.ETA(last, method, brokerStart, throttle)
	if eta.CatchingUp <= 0 && len(eta.Saturated) == 0 {
		return nil
	}
	return &eta
}
