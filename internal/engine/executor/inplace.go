package executor

import (
	"context"
	"fmt"
	"strings"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// KindRebalance moves replicas (or only preferred leaders) to balance the
// cluster at its broker count.
const KindRebalance Kind = "rebalance"

// Balance is what a resource keeps balanced at an unchanged broker count.
type Balance int

const (
	// BalanceNone keeps nothing; the cluster is rebalanced only when an
	// operation stopped short of its layout (OwesBalance), and then to the
	// limits alone, so that no more moves than it owes.
	BalanceNone Balance = iota
	// BalanceLeaders keeps preferred leaders balanced and off demoted
	// brokers (engine.LeadersOutOfBalance), by a reorder and an election:
	// no data moves.
	BalanceLeaders
	// BalanceAll keeps replicas, bytes and preferred leaders balanced
	// (engine.OutOfBalance), evening bytes with room for the writes that
	// follow (engine.KeptBalanced), since its every plan checks again.
	BalanceAll
)

// options are the planner's options for a change of brokers under b: a
// cluster kept balanced (BalanceAll) has its bytes evened by the change
// itself (engine.KeptBalanced), so that the plan right after it does not
// ask for a rebalance in place.
func (b Balance) options(o engine.Options) engine.Options {
	if b == BalanceAll {
		return engine.KeptBalanced(o)
	}
	return o
}

// inPlace is the rebalance an apply at an unchanged count may run: what
// the resource keeps balanced, and everything (to the limits) when an
// operation owes its balance and the resource keeps less. ok is false when
// there is none to consider.
func inPlace(b Balance, owes bool) (Balance, bool) {
	switch {
	case b == BalanceAll:
		return BalanceAll, true
	case owes:
		return BalanceNone, true
	case b == BalanceLeaders:
		return BalanceLeaders, true
	}
	return BalanceNone, false
}

// PreviewRebalance is what a rebalance of c at its broker count does now:
// nothing when it is within tolerance, a reorder and an election
// (engine.PlanLeaders) when only preferred leaders are off or only they
// are kept (BalanceLeaders), and otherwise the engine's plan for the empty
// change. b is as inPlace gives it. Reasons says what is out of balance.
func PreviewRebalance(c engine.Cluster, opts engine.Options, b Balance) (*Preview, error) {
	var reasons []string
	var leadersOnly bool
	var err error
	if b == BalanceLeaders {
		reasons, err = engine.LeadersOutOfBalance(c, opts)
		leadersOnly = true
	} else {
		reasons, leadersOnly, err = engine.OutOfBalance(c, opts)
	}
	if err != nil || len(reasons) == 0 {
		return &Preview{Plan: &engine.Plan{}}, err
	}
	var plan *engine.Plan
	switch {
	case leadersOnly:
		plan, err = engine.PlanLeaders(c, opts)
	case b == BalanceAll:
		plan, err = engine.PlanReassignment(c, engine.Change{}, engine.KeptBalanced(opts))
	default:
		plan, err = engine.PlanReassignment(c, engine.Change{}, opts)
	}
	if err != nil {
		return nil, err
	}
	if plan.ReplicaMoves == 0 && len(plan.Reorders) == 0 {
		// Out of balance by the measure, but no move the limits allow
		// brings it closer (a broker whose disk holds other data over
		// min_free_disk_percent cannot take its share, say). Shown as a
		// change, it would do nothing and be shown again after every
		// apply (the soak, seed 23 step 39: "0 replica moves ... nothing
		// to do").
		return &Preview{Plan: &engine.Plan{}}, nil
	}
	return &Preview{Plan: plan, Imbalance: strings.Join(reasons, "; "), PendingUpload: pendingUploadNote(engine.PendingUploadUnknownMoves(c, plan))}, nil
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
	pv, err := PreviewRebalance(c, opts, BalanceNone)
	if err != nil {
		return "", err
	}
	return pv.Imbalance, nil
}

// recordDemotion records a demotion, or its end, that this apply had
// nothing to do for (the brokers named already lead nothing, or lead what
// they should): a rebalance in place that moved nothing, completed. Where
// new partitions go and which replica a replication factor change makes
// preferred, in any working directory, is read from the cluster's last
// operation; without the record a topic created elsewhere could make a
// demoted broker its leader.
func (e *Executor) recordDemotion(ctx context.Context, req ScaleRequest, brokers []BrokerStatus, prev *Operation) (*Operation, error) {
	op := e.newRebalance(req, &engine.Plan{}, PhaseCompleted, brokers, prev)
	op.CompletedAt = op.StartedAt
	e.keepInHistory(ctx, prev)
	e.d.Log.Info(ctx, "recorded the demoted brokers; nothing had to move", map[string]any{"operation": op.ID, "demoted": fmt.Sprint(op.Options.DemotedBrokers)})
	if err := e.save(ctx, op); err != nil {
		return nil, err
	}
	return op, nil
}

// newRebalance is the record of a rebalance in place of plan, started now
// in phase, among brokers, carrying prev's timings.
func (e *Executor) newRebalance(req ScaleRequest, plan *engine.Plan, phase Phase, brokers []BrokerStatus, prev *Operation) *Operation {
	return &Operation{
		Key:               req.Key,
		ID:                req.ID,
		Kind:              KindRebalance,
		TargetBrokerCount: req.TargetBrokerCount,
		Options:           req.Options,
		StartedAt:         e.d.Clock.Now().UTC(),
		Plan:              plan,
		Phase:             phase,
		ScalingMethod:     req.ScalingMethod,
		Timings:           carriedTimings(prev),
		BrokersBefore:     statusIDs(brokers),
	}
}

// demoted is the brokers op demotes (none when op is nil).
func (op *Operation) demoted() []int32 {
	if op == nil {
		return nil
	}
	return op.Options.DemotedBrokers
}

// rebalance runs PreviewRebalance's plan on the cluster as it is now, as
// an operation under req.Key that a later apply resumes like any other.
// prev is the last operation under the key, whose timings it carries; b is
// as inPlace gives it.
func (e *Executor) rebalance(ctx context.Context, req ScaleRequest, b Balance, brokers []BrokerStatus, prev *Operation) (*Operation, error) {
	snap, err := e.d.Kafka.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	pv, err := PreviewRebalance(snap, req.Options, b)
	if err != nil || pv.Imbalance == "" {
		return nil, err
	}
	if err := e.PreCheck(ctx, nil, nil); err != nil {
		return nil, err
	}
	op := e.newRebalance(req, pv.Plan, PhaseReassign, brokers, prev)
	op.ThrottleRate = req.InitialThrottle
	e.estimate(ctx, op)
	e.keepInHistory(ctx, prev)
	e.d.Log.Info(ctx, "planned rebalance", map[string]any{"operation": op.ID, "because": pv.Imbalance,
		"moves": pv.Plan.ReplicaMoves, "bytes": pv.Plan.TotalBytes, "reorders": len(pv.Plan.Reorders)})
	if err := e.save(ctx, op); err != nil {
		return nil, err
	}
	return op, e.Resume(ctx, op)
}
