package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// ModifyPlan shows the cost of a change of broker count before anything
// moves, and refuses at plan time what the planner cannot do.
func (r *ClusterResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		resp.Diagnostics.AddWarning("The cluster is only forgotten",
			"Destroying kafkascale_cluster removes it from the Terraform state. No broker is stopped and no data moves; an "+
				"unfinished operation is cancelled (its reassignments in flight revert and its throttles and cordons go).")
		return
	}
	var plan, state clusterResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}

	// No operation is unfinished after an apply, and one unfinished now
	// (state.PendingOperation) makes the plan an update: it is resumed or
	// cancelled, never left behind a plan that says "No changes".
	plan.PendingOperation = types.StringNull()
	var prior *clusterResourceModel
	if !req.State.Raw.IsNull() {
		prior = &state
	}
	balance := balanceKept(&plan, prior)
	unchanged := prior != nil && state.BrokerCount.Equal(plan.BrokerCount) && state.RemoveBrokerIDs.Equal(plan.RemoveBrokerIDs) &&
		state.DemoteBrokerIDs.Equal(plan.DemoteBrokerIDs) && state.PendingOperation.IsNull()
	if unchanged && r.data != nil && balance != executor.BalanceNone {
		// Kept balanced: the same count is a change when the cluster the
		// last refresh saw is out of balance, or when only its summary was
		// kept and that cannot say for these options.
		unchanged = !r.outOfBalance(ctx, &plan, balance, req.Private, &resp.Diagnostics)
	}
	if unchanged {
		plan.PlannedMoves, plan.PlannedBytes, plan.EstimatedDuration, plan.Brokers = state.PlannedMoves, state.PlannedBytes, state.EstimatedDuration, state.Brokers
		plan.LeavingBrokers = state.LeavingBrokers
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	plan.Brokers = types.ListUnknown(types.ObjectType{AttrTypes: clusterBrokerAttrTypes})
	plan.PlannedMoves, plan.PlannedBytes, plan.EstimatedDuration = types.Int64Unknown(), types.Int64Unknown(), types.StringUnknown()
	plan.LeavingBrokers = types.ListUnknown(types.Int64Type)
	if plan.Rebalance != nil && !plan.Rebalance.MaxApplyDuration.IsNull() {
		// An apply that reaches max_apply_duration leaves the operation
		// pending and says so.
		plan.PendingOperation = types.StringUnknown()
	}
	if plan.BrokerCount.IsUnknown() || plan.RemoveBrokerIDs.IsUnknown() || r.data == nil {
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}

	if !r.checkOutside(ctx, req.Config, plan, &resp.Diagnostics) {
		return
	}
	settings, diags := resourceSettings(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	remove, diags := namedRemovals(ctx, prior, &plan)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Terraform plans this change twice, at `plan` and again inside
	// `apply`, and the two must agree to the byte. Both see the same prior
	// state, so the cost is computed from the snapshot the last refresh
	// kept in private state, not from the live cluster, whose sizes grow
	// in between. A cluster too large for that snapshot left only its
	// summary there: the cost then comes from the live cluster, and shows
	// in the warnings only (see below).
	view, diags := loadPlanningSnapshot(ctx, req.Private)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	found := view.Full
	cost, err := r.previewCost(ctx, int(plan.BrokerCount.ValueInt64()), remove, balance, settings, plan.Scaling, view.Cluster, found)
	if err != nil {
		resp.Diagnostics.Append(planDiagnostics(clusterTarget(int(plan.BrokerCount.ValueInt64())), err)...)
		return
	}
	if !r.checkDemotions(ctx, settings.options.DemotedBrokers, cost.Leaving, &resp.Diagnostics) {
		return
	}
	r.warnCost(ctx, plan, balance, len(remove) > 0, cost, &resp.Diagnostics)
	if view.Summary == nil {
		// From the live cluster (summary only), the choice of leaving
		// brokers follows sizes that may change before the apply plans
		// again: it stays unknown.
		leaving, diags := types.ListValueFrom(ctx, types.Int64Type, nonNil(cost.Leaving))
		resp.Diagnostics.Append(diags...)
		plan.LeavingBrokers = leaving
	}
	tflog.Info(ctx, "planned broker count change", map[string]any{
		"broker_count": plan.BrokerCount.ValueInt64(), "moves": cost.Moves, "bytes": cost.Bytes, "estimated_duration": cost.duration.String(),
		"eta": cost.ETA.String(),
	})
	// The one line that says what the apply will spend its time on; a
	// resumed operation is told by its own warning, with what it has left.
	if cost.resuming == "" && cost.Preview.Imbalance == "" && (cost.Moves > 0 || cost.ETA.AddBrokers > 0 || cost.ETA.RemoveBrokers > 0) {
		resp.Diagnostics.AddWarning("Cost of the broker count change", cost.line(plan.BrokerCount.ValueInt64()))
	}
	if !found {
		// A new resource has no refreshed snapshot to plan from, and a
		// cluster too large for it only its summary, so the figures could
		// shift before apply: the warning shows them, but the planned
		// attributes stay unknown.
		if cost.Moves == 0 && view.Summary == nil {
			plan.PlannedMoves, plan.PlannedBytes, plan.EstimatedDuration = types.Int64Value(0), types.Int64Value(0), types.StringValue("0s")
		}
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	plan.PlannedMoves = types.Int64Value(int64(cost.Moves))
	plan.PlannedBytes = types.Int64Value(cost.Bytes)
	plan.EstimatedDuration = types.StringValue(cost.duration.String())
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// warnCost shows what the apply of plan will do besides its cost line: an
// operation resumed or cancelled, throttles left behind, the balance
// restored, brokers left heavy, dead brokers healed, a drain that cannot
// be cordoned. named says the plan names the brokers to remove.
func (r *ClusterResource) warnCost(ctx context.Context, plan clusterResourceModel, balance executor.Balance, named bool, cost planCost, diags *diag.Diagnostics) {
	if cost.resuming != "" {
		title := "An interrupted operation will resume"
		if cost.paused {
			title = "A paused operation will continue"
		}
		diags.AddWarning(title, cost.resuming)
	}
	if cost.cancelling != "" {
		diags.AddAttributeWarning(path.Root("broker_count"), "An unfinished operation will be cancelled", cost.cancelling)
	}
	r.data.warnOrphanedThrottles(ctx, diags)
	if cost.Preview.Imbalance != "" {
		// Kept balanced, or owed by an operation that stopped short of
		// its layout (which the cancel warning or the refreshed
		// pending_operation names).
		at, title := path.Root("rebalance").AtName("keep_balanced"), "The cluster is out of balance"
		switch {
		case balance == executor.BalanceLeaders && cost.Moves == 0 && !plan.DemoteBrokerIDs.IsNull():
			at, title = path.Root("demote_broker_ids"), "Preferred leaders move off the demoted brokers"
		case balance == executor.BalanceLeaders && cost.Moves == 0:
			at, title = path.Root("rebalance").AtName("keep_leaders_balanced"), "Preferred leaders are out of balance"
		case balance != executor.BalanceAll:
			at, title = path.Root("broker_count"), "The cluster is out of the balance a stopped operation was heading for"
		}
		what := fmt.Sprintf("The apply rebalances it in place: %d replica moves (%s), %s.", cost.Moves, cost.bytes(), cost.ETA)
		if p := cost.Preview.Plan; cost.Moves == 0 && p != nil && len(p.Reorders) > 0 {
			what = fmt.Sprintf("The apply reorders the replicas of %d partitions and elects their preferred leaders, moving no data "+
				"(0 bytes): preferred leaders per broker go %s.", len(p.Reorders), leaderChanges(p))
		}
		diags.AddAttributeWarning(at, title, fmt.Sprintf("At %d brokers, %s. %s", plan.BrokerCount.ValueInt64(), cost.Preview.Imbalance, what))
	}
	if cost.Preview.Skew != "" {
		at := path.Root("broker_count")
		if named {
			at = path.Root("remove_broker_ids")
		}
		diags.AddAttributeWarning(at, fmt.Sprintf("Brokers will hold more than %.1f× the mean", engine.HeavyFactor), cost.Preview.Skew)
	}
	if cost.Preview.PendingUpload != "" {
		diags.AddAttributeWarning(path.Root("broker_count"), "New replicas of idle tiered partitions would not start", cost.Preview.PendingUpload)
	}
	demoted, _ := brokerIDs(ctx, plan.DemoteBrokerIDs)
	if heavy := engine.HeavyLeaders(cost.Preview.Plan, demoted); len(heavy) > 0 {
		diags.AddAttributeWarning(path.Root("broker_count"), fmt.Sprintf("Brokers will lead more than %.2f× the mean", engine.HeavyLeaderFactor),
			fmt.Sprintf("After the apply, %s. The racks force it where the busiest broker holds the only replica of some partitions "+
				"that can lead; otherwise set rebalance.keep_leaders_balanced.", strings.Join(heavy, "; ")))
	}
	if cost.Preview.Healing != "" {
		diags.AddAttributeWarning(path.Root("broker_count"), "The apply heals dead brokers", cost.Preview.Healing)
	}
	if len(cost.Leaving) > 0 {
		r.warnUncordoned(ctx, cost.Leaving, diags)
	}
}

// warnUncordoned says at plan time when the drain of leaving cannot be
// cordoned (KIP-1066 came with Kafka 4.3): a topic created during it may
// then land on a leaving broker, and the apply stops before removing a
// broker that holds a replica.
func (r *ClusterResource) warnUncordoned(ctx context.Context, leaving []int32, diags *diag.Diagnostics) {
	ok, err := r.data.kafka.CordonSupported(ctx)
	switch {
	case err != nil:
		diags.AddAttributeWarning(path.Root("broker_count"), "Cordoning of the leaving brokers unknown",
			fmt.Sprintf("Could not tell whether this Kafka can cordon brokers %v during the drain (cordoned.log.dirs, Kafka 4.3+): %v. "+
				"The apply checks again and drains them uncordoned if it cannot.", leaving, err))
	case !ok:
		diags.AddAttributeWarning(path.Root("broker_count"), "The drain is not cordoned",
			fmt.Sprintf("This Kafka has no cordoned.log.dirs (KIP-1066, Kafka 4.3+), so brokers %v are drained uncordoned: "+
				"a topic or partition created during the drain may be placed on them, and the apply then stops before removing them "+
				"until that replica is moved off.", leaving))
	}
}

// planCost is the executor's cost of a change of broker count with the
// sentences the plan shows for it.
type planCost struct {
	executor.Cost
	duration time.Duration
	// catchUp says what catching up on live writes adds (catchUpNote).
	catchUp  string
	resuming string
	// paused says the operation resumed stopped at max_apply_duration.
	paused bool
	// cancelling says which unfinished operation the apply cancels, what
	// that reverts, and what follows.
	cancelling string
}

// line is the plan's one warning line on the cost of going to count
// brokers: the moves, the bytes and the ETA with its parts.
func (c planCost) line(count int64) string {
	unknown := ""
	if c.ETA.AddBrokers > 0 && !c.ETA.AddMeasured && !c.ETA.AddDeclared {
		unknown = " Set scaling.broker_start_time to about how long the platform takes to add a broker for a first estimate that counts it."
	}
	return fmt.Sprintf("Scaling to %d brokers moves %d replicas (%s), %s.%s%s", count, c.Moves, c.bytes(), c.ETA, c.catchUp, unknown)
}

// bytes says what the moves copy and, when they move tiered topics, what
// of those stays in remote storage: a new replica copies its leader's
// local log at most, so a topic of months in remote storage moves in
// minutes, and the plan says why its bytes are so few.
func (c planCost) bytes() string {
	if c.RemoteBytes <= 0 {
		return fmt.Sprintf("%d bytes", c.Bytes)
	}
	return fmt.Sprintf("%d bytes copied; %s of the tiered topics' partitions moved stay in remote storage and are not copied",
		c.Bytes, engine.HumanBytes(c.RemoteBytes))
}

// previewCost is what an apply to target, removing remove, would do now
// (executor.PreviewCost), planned from snap when fromState, with the
// sentences the plan shows.
func (r *ClusterResource) previewCost(ctx context.Context, target int, remove []int32, balance executor.Balance, s clusterSettings, scaling *scalingModel, snap engine.Cluster, fromState bool) (planCost, error) {
	// The refresh of this run has just read the cluster: its read is
	// reused, for the id alone when the plan comes from private state.
	live, err := r.data.kafka.RecentSnapshot(ctx)
	if err != nil {
		return planCost{}, err
	}
	req := executor.CostRequest{Key: operationKey(live.ClusterID), Target: target, Remove: remove, Balance: balance,
		Options: s.options, Method: scalingMethod(scaling), BrokerStart: brokerStartTime(scaling), CatchUp: true,
		Live: func() engine.Cluster { return kafka.EngineCluster(live) },
		// A fresh scale from the live read: what the data source
		// kafkascale_rebalance_plan previews too, computed once.
		Fresh: func() (*executor.Preview, error) { return r.data.previewScale(live, target, remove, s.options) }}
	if fromState {
		req.Planned = &snap
	}
	c, err := r.data.executor(executor.Settings{}, nil, nil).PreviewCost(ctx, req)
	if err != nil {
		return planCost{}, err
	}
	cost := planCost{Cost: c, duration: c.ETA.Total().Round(time.Second), catchUp: catchUpNote(c.CatchUp)}
	if c.Resuming() {
		cost.resuming, cost.paused = pendingOperation(c.Last, clusterOperation(c.Last)), c.Last.Paused()
		return cost, nil
	}
	if cn := c.Preview.Cancels; cn != nil {
		then := fmt.Sprintf("then the cluster goes to %d brokers from where the cancel leaves it", target)
		if len(c.Leaving) > 0 {
			then += fmt.Sprintf(": brokers %v are drained and removed", c.Leaving)
		}
		because := fmt.Sprintf("The configuration asks for %d brokers", target)
		if len(cn.DiedLeaving) > 0 {
			because = fmt.Sprintf("Brokers %v, which the operation drains, went down during it, and a step of its plan may keep one of them", cn.DiedLeaving)
		}
		cost.cancelling = fmt.Sprintf("%s, so the apply %s; %s, moving %d replicas (%d bytes), %s.",
			because, cn, then, c.Moves, c.Bytes, c.ETA)
	}
	return cost, nil
}

// catchUpNote says what catching up on the writes producers make to the
// moving partitions adds to the estimate (executor.Cost.CatchUp), as a
// sentence for the plan's cost line, or "" when nothing is written to
// them. estimated_duration leaves the catch-up out: a rate read live
// differs between the plan and the apply's final plan, and Terraform
// refuses a planned value that changes. The apply records it in its ETA,
// which the progress lines and kafkascale watch show.
func catchUpNote(e *engine.ETA) string {
	if e == nil {
		return ""
	}
	s := fmt.Sprintf(" Producers wrote %s/s to the moving partitions over the last %s: catching up on that adds about %s, which estimated_duration "+
		"leaves out because a live rate would change between the plan and the apply", engine.HumanBytes(int64(e.GrowthBytesPerSec)),
		engine.GrowthWindow, e.CatchingUp.Round(time.Second))
	if len(e.Saturated) > 0 {
		s += fmt.Sprintf("; on brokers %v the writes reach 90%% of the throttle, so the copy may not catch up: raise the throttle", e.Saturated)
	}
	return s + "."
}

func keepBalanced(rb *rebalanceModel) bool { return rb != nil && rb.KeepBalanced.ValueBool() }

// outOfBalance reports whether the cluster the last refresh saw is out of
// the balance the resource keeps (engine.OutOfBalance, or
// engine.LeadersOutOfBalance for preferred leaders alone); without that
// snapshot it cannot say, and the apply decides.
// With only a summary kept, the answer the refresh recorded counts when it
// was given for the same options; otherwise the plan cannot tell, and
// treats the cluster as a change whose cost is known after apply.
func (r *ClusterResource) outOfBalance(ctx context.Context, m *clusterResourceModel, b executor.Balance, private privateGetter, diags *diag.Diagnostics) bool {
	view, ds := loadPlanningSnapshot(ctx, private)
	diags.Append(ds...)
	settings, ds := resourceSettings(ctx, m)
	diags.Append(ds...)
	if diags.HasError() {
		return false
	}
	out, known, err := view.OutOfBalance(settings.options, b)
	if err != nil {
		diags.Append(planDiagnostics(clusterTarget(len(view.Cluster.Brokers)), err)...)
		return false
	}
	if !known {
		return view.Summary != nil
	}
	return out
}

// balanceOptions are the options a resource keeps its cluster balanced
// with (keep_balanced), or nil when it does not: what a summary records
// the answer for.
func balanceOptions(ctx context.Context, m *clusterResourceModel) *engine.Options {
	if !keepBalanced(m.Rebalance) {
		return nil
	}
	s, diags := resourceSettings(ctx, m)
	if diags.HasError() {
		return nil
	}
	return &s.options
}

// checkOutside checks, before a change is planned, the outside systems its
// apply will use: the scaling API or commands, and Prometheus.
// The write-only secrets exist only in the configuration: they are read
// from there into a copy, never into the plan.
func (r *ClusterResource) checkOutside(ctx context.Context, cfg tfsdk.Config, plan clusterResourceModel, diags *diag.Diagnostics) bool {
	plan = secretsCopy(plan)
	diags.Append(writeOnlySecrets(ctx, cfg, &plan)...)
	if s := plan.Scaling; s != nil {
		if s.HTTP != nil {
			checkScalingAPI(ctx, s.HTTP, diags)
		}
		if c := s.Command; c != nil {
			at := path.Root("scaling").AtName("command")
			checkCommand(ctx, c.ScaleUp, at.AtName("scale_up"), "scale_up", diags)
			checkCommand(ctx, c.ScaleDown, at.AtName("scale_down"), "scale_down", diags)
		}
	}
	if rb := plan.Rebalance; rb != nil {
		checkPrometheus(ctx, rb.Metrics, diags)
	}
	return !diags.HasError()
}

// secretsCopy copies m deep enough that writeOnlySecrets can fill the copy
// without touching m's blocks.
func secretsCopy(m clusterResourceModel) clusterResourceModel {
	if m.Scaling != nil {
		s := *m.Scaling
		if s.HTTP != nil {
			h := *s.HTTP
			s.HTTP = &h
		}
		m.Scaling = &s
	}
	if m.Rebalance != nil {
		rb := *m.Rebalance
		if rb.Metrics != nil {
			mt := *rb.Metrics
			if mt.BasicAuth != nil {
				b := *mt.BasicAuth
				mt.BasicAuth = &b
			}
			rb.Metrics = &mt
		}
		m.Rebalance = &rb
	}
	return m
}
