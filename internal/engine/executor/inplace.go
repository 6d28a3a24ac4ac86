package executor

import (
	"context"
	"strings"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// KindRebalance moves replicas (or only preferred leaders) to balance the
// cluster at its broker count.
const KindRebalance Kind = "rebalance"

// PreviewRebalance is what keeping c balanced at its broker count does now:
// nothing when it is within tolerance (engine.OutOfBalance), a reorder and
// an election when only preferred leaders are off, and otherwise the
// engine's plan for the empty change. Reasons says what is out of balance.
// kept says the resource keeps the cluster balanced (keep_balanced): its
// rebalance evens bytes with room for the writes that follow
// (engine.KeptBalanced), since its every plan checks the balance again.
func PreviewRebalance(c engine.Cluster, opts engine.Options, kept bool) (*Preview, error) {
	reasons, leadersOnly, err := engine.OutOfBalance(c, opts)
	if err != nil || len(reasons) == 0 {
		return &Preview{Plan: &engine.Plan{}}, err
	}
	if kept {
		opts = engine.KeptBalanced(opts)
	}
	plan, err := engine.PlanReassignment(c, engine.Change{}, opts)
	if err != nil {
		return nil, err
	}
	if leadersOnly {
		plan = engine.LeadersOnly(c, plan)
	}
	return &Preview{Plan: plan, Imbalance: strings.Join(reasons, "; ")}, nil
}

// OwesBalance reports whether the operation stopped short of the layout
// it was heading for: it was cancelled (a revert, or a new target), or
// abandoned because a change outside kafkascale made its plan wrong. The
// moves it finished stay where they went, so the cluster may be out of
// balance with nothing unfinished to say so; the next apply of the same
// resource rebalances it in place when it is (OwedImbalance), as it would
// for a resource that keeps its cluster balanced. A nil operation owes
// nothing.
func (op *Operation) OwesBalance() bool {
	return op != nil && (op.Phase == PhaseAbandoned || op.Phase == PhaseCancelled)
}

// OwedImbalance says what is out of balance in c that prev, the last
// operation under a resource's key, owes (OwesBalance): what the next
// apply rebalances in place, and what the plan must show instead of "no
// changes". It is empty when prev owes nothing or c is within tolerance.
func OwedImbalance(c engine.Cluster, prev *Operation, opts engine.Options) (string, error) {
	if !prev.OwesBalance() {
		return "", nil
	}
	reasons, _, err := engine.OutOfBalance(c, opts)
	return strings.Join(reasons, "; "), err
}

// rebalance runs PreviewRebalance's plan on the cluster as it is now, as
// an operation under req.Key that a later apply resumes like any other.
// prev is the last operation under the key, whose timings it carries.
func (e *Executor) rebalance(ctx context.Context, req ScaleRequest, brokers []BrokerStatus, prev *Operation) (*Operation, error) {
	snap, err := e.d.Kafka.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	pv, err := PreviewRebalance(snap, req.Options, req.KeepBalanced)
	if err != nil || pv.Imbalance == "" {
		return nil, err
	}
	if err := e.PreCheck(ctx, nil, nil); err != nil {
		return nil, err
	}
	op := &Operation{
		Key:               req.Key,
		ID:                req.ID,
		Kind:              KindRebalance,
		TargetBrokerCount: req.TargetBrokerCount,
		Options:           req.Options,
		ThrottleRate:      req.InitialThrottle,
		StartedAt:         e.d.Clock.Now().UTC(),
		Plan:              pv.Plan,
		Phase:             PhaseReassign,
		ScalingMethod:     req.ScalingMethod,
		Timings:           carriedTimings(prev),
	}
	e.estimate(ctx, op)
	op.BrokersBefore = statusIDs(brokers)
	e.d.Log.Info(ctx, "planned rebalance", map[string]any{"operation": op.ID, "because": pv.Imbalance,
		"moves": pv.Plan.ReplicaMoves, "bytes": pv.Plan.TotalBytes, "reorders": len(pv.Plan.Reorders)})
	if err := e.save(ctx, op); err != nil {
		return nil, err
	}
	return op, e.Resume(ctx, op)
}
