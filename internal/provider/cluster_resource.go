package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
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

var (
	_ resource.Resource                     = &ClusterResource{}
	_ resource.ResourceWithConfigure        = &ClusterResource{}
	_ resource.ResourceWithImportState      = &ClusterResource{}
	_ resource.ResourceWithModifyPlan       = &ClusterResource{}
	_ resource.ResourceWithConfigValidators = &ClusterResource{}
	_ resource.ResourceWithValidateConfig   = &ClusterResource{}
)

// Defaults of the rebalance block, documented in the schema.
const (
	defaultInitialThrottle = 20 << 20
	defaultMinThrottle     = 5 << 20
	defaultMaxThrottle     = 100 << 20
	defaultAdjustInterval  = 30 * time.Second
	defaultOpTimeout       = 6 * time.Hour
	defaultMaxIOPressure   = 0.1
	defaultMinHandlerIdle  = 0.3
)

// NewClusterResource is the constructor the provider registers.
func NewClusterResource() resource.Resource { return &ClusterResource{} }

// ClusterResource owns a cluster's broker count.
type ClusterResource struct {
	data *providerData
}

type clusterResourceModel struct {
	ID                types.String    `tfsdk:"id"`
	BrokerCount       types.Int64     `tfsdk:"broker_count"`
	RemoveBrokerIDs   types.Set       `tfsdk:"remove_broker_ids"`
	LeavingBrokers    types.List      `tfsdk:"leaving_brokers"`
	Scaling           *scalingModel   `tfsdk:"scaling"`
	Rebalance         *rebalanceModel `tfsdk:"rebalance"`
	Timeouts          timeouts.Value  `tfsdk:"timeouts"`
	Brokers           types.List      `tfsdk:"brokers"`
	PlannedMoves      types.Int64     `tfsdk:"planned_moves"`
	PlannedBytes      types.Int64     `tfsdk:"planned_bytes"`
	EstimatedDuration types.String    `tfsdk:"estimated_duration"`
	PendingOperation  types.String    `tfsdk:"pending_operation"`
}

var clusterBrokerAttrTypes = map[string]attr.Type{"id": types.Int64Type, "rack": types.StringType}

func (r *ClusterResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cluster"
}

func (r *ClusterResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = clusterResourceSchema(ctx)
}

func (r *ClusterResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

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
	unchanged := !req.State.Raw.IsNull() && state.BrokerCount.Equal(plan.BrokerCount) && state.RemoveBrokerIDs.Equal(plan.RemoveBrokerIDs) &&
		state.PendingOperation.IsNull()
	if unchanged && r.data != nil && keepBalanced(plan.Rebalance) {
		// Kept balanced: the same count is a change when the cluster the
		// last refresh saw is out of balance.
		unchanged = !r.outOfBalance(ctx, plan.Rebalance, req.Private, &resp.Diagnostics)
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
	if plan.BrokerCount.IsUnknown() || plan.RemoveBrokerIDs.IsUnknown() || r.data == nil {
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}

	settings, diags := rebalanceSettings(plan.Rebalance)
	resp.Diagnostics.Append(diags...)
	remove, diags := brokerIDs(ctx, plan.RemoveBrokerIDs)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Terraform plans this change twice, at `plan` and again inside
	// `apply`, and the two must agree to the byte. Both see the same prior
	// state, so the cost is computed from the snapshot the last refresh
	// kept in private state, not from the live cluster, whose sizes grow
	// in between.
	snap, found, diags := loadPlanningSnapshot(ctx, req.Private)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	cost, err := r.previewCost(ctx, int(plan.BrokerCount.ValueInt64()), remove, keepBalanced(plan.Rebalance), settings, scalingMethod(plan.Scaling), snap, found)
	if err != nil {
		resp.Diagnostics.Append(planDiagnostics(clusterTarget(int(plan.BrokerCount.ValueInt64())), err)...)
		return
	}
	if cost.resuming != "" {
		resp.Diagnostics.AddWarning("An interrupted operation will resume", cost.resuming)
	}
	if cost.cancelling != "" {
		resp.Diagnostics.AddAttributeWarning(path.Root("broker_count"), "An unfinished operation will be cancelled", cost.cancelling)
	}
	r.data.warnOrphanedThrottles(ctx, &resp.Diagnostics)
	if cost.imbalance != "" {
		resp.Diagnostics.AddAttributeWarning(path.Root("rebalance").AtName("keep_balanced"), "The cluster is out of balance",
			fmt.Sprintf("At %d brokers, %s. The apply rebalances it in place: %d replica moves (%d bytes), %s.",
				plan.BrokerCount.ValueInt64(), cost.imbalance, cost.moves, cost.bytes, cost.eta))
	}
	if cost.skew != "" {
		at := path.Root("broker_count")
		if len(remove) > 0 {
			at = path.Root("remove_broker_ids")
		}
		resp.Diagnostics.AddAttributeWarning(at, fmt.Sprintf("Brokers will hold more than %.1f× the mean", engine.HeavyFactor), cost.skew)
	}
	if cost.healing != "" {
		resp.Diagnostics.AddAttributeWarning(path.Root("broker_count"), "The apply heals dead brokers", cost.healing)
	}
	leaving, diags := types.ListValueFrom(ctx, types.Int64Type, nonNil(cost.leaving))
	resp.Diagnostics.Append(diags...)
	plan.LeavingBrokers = leaving
	if len(cost.leaving) > 0 {
		r.warnUncordoned(ctx, cost.leaving, &resp.Diagnostics)
	}
	tflog.Info(ctx, "planned broker count change", map[string]any{
		"broker_count": plan.BrokerCount.ValueInt64(), "moves": cost.moves, "bytes": cost.bytes, "estimated_duration": cost.duration.String(),
		"eta": cost.eta.String(),
	})
	// The one line that says what the apply will spend its time on; a
	// resumed operation is told by its own warning, with what it has left.
	if cost.resuming == "" && cost.imbalance == "" && (cost.moves > 0 || cost.eta.AddBrokers > 0 || cost.eta.RemoveBrokers > 0) {
		resp.Diagnostics.AddWarning("Cost of the broker count change", cost.line(plan.BrokerCount.ValueInt64()))
	}
	if !found {
		// A new resource has no refreshed snapshot to plan from, so the
		// figures could shift before apply: the warning shows them, but
		// the planned attributes stay unknown.
		if cost.moves == 0 {
			plan.PlannedMoves, plan.PlannedBytes, plan.EstimatedDuration = types.Int64Value(0), types.Int64Value(0), types.StringValue("0s")
		}
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	plan.PlannedMoves = types.Int64Value(int64(cost.moves))
	plan.PlannedBytes = types.Int64Value(cost.bytes)
	plan.EstimatedDuration = types.StringValue(cost.duration.String())
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
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

type planCost struct {
	moves    int
	bytes    int64
	duration time.Duration
	// eta is duration broken into its parts.
	eta      engine.ETA
	resuming string
	// cancelling says which unfinished operation the apply cancels, what
	// that reverts, and what follows.
	cancelling string
	// leaving are the brokers the change removes; healing says which of
	// them are dead and what the apply heals.
	leaving []int32
	healing string
	// skew names brokers left above engine.HeavyFactor times the mean.
	skew string
	// imbalance says what a cluster kept balanced is rebalanced for.
	imbalance string
}

// line is the plan's one warning line on the cost of going to count
// brokers: the moves, the bytes and the ETA with its parts.
func (c planCost) line(count int64) string {
	return fmt.Sprintf("Scaling to %d brokers moves %d replicas (%d bytes), %s.", count, c.moves, c.bytes, c.eta)
}

// previewCost is what an apply to target, removing remove, would do now:
// the rest of an unfinished operation heading there, or a fresh plan.
func (r *ClusterResource) previewCost(ctx context.Context, target int, remove []int32, balanced bool, s clusterSettings, method string, snap engine.Cluster, fromState bool) (planCost, error) {
	kc := r.data.kafka
	clusterID := ""
	if !fromState {
		live, err := kc.Snapshot(ctx)
		if err != nil {
			return planCost{}, err
		}
		snap, clusterID = kafka.EngineCluster(live), live.ClusterID
	} else {
		desc, err := kc.DescribeCluster(ctx)
		if err != nil {
			return planCost{}, err
		}
		clusterID = desc.ClusterID
	}
	op, err := kc.Operations().Load(ctx, operationKey(clusterID))
	if err != nil {
		return planCost{}, err
	}
	pv, err := executor.PreviewScaleFrom(snap, op, target, remove, balanced, s.options)
	if err != nil {
		return planCost{}, err
	}
	eta := pv.ETA(op, method, s.options.ThrottleBytesPerSec)
	if pv.Resumes != nil {
		rest := op.Remaining(op.ThrottleRate)
		return planCost{
			moves:    rest.Moves,
			bytes:    rest.Bytes,
			duration: eta.Total().Round(time.Second),
			eta:      eta,
			leaving:  op.RemoveBrokers,
			resuming: pendingOperation(op, clusterOperation(op)),
		}, nil
	}
	cost := planCost{moves: pv.Plan.ReplicaMoves, bytes: pv.Plan.TotalBytes, duration: eta.Total().Round(time.Second), eta: eta,
		leaving: pv.RemoveBrokers, healing: pv.Healing, skew: pv.Skew, imbalance: pv.Imbalance}
	if pv.Cancels != nil {
		then := fmt.Sprintf("then the cluster goes to %d brokers from where the cancel leaves it", target)
		if len(pv.RemoveBrokers) > 0 {
			then += fmt.Sprintf(": brokers %v are drained and removed", pv.RemoveBrokers)
		}
		cost.cancelling = fmt.Sprintf("The configuration asks for %d brokers, so the apply %s; %s, moving %d replicas (%d bytes), %s.",
			target, pv.Cancels, then, cost.moves, cost.bytes, cost.eta)
	}
	return cost, nil
}

func keepBalanced(rb *rebalanceModel) bool { return rb != nil && rb.KeepBalanced.ValueBool() }

// outOfBalance reports whether the cluster the last refresh saw is out of
// balance (engine.OutOfBalance); without that snapshot it cannot say, and
// the apply decides.
func (r *ClusterResource) outOfBalance(ctx context.Context, rb *rebalanceModel, private privateGetter, diags *diag.Diagnostics) bool {
	snap, found, ds := loadPlanningSnapshot(ctx, private)
	diags.Append(ds...)
	settings, ds := rebalanceSettings(rb)
	diags.Append(ds...)
	if !found || diags.HasError() {
		return false
	}
	reasons, _, err := engine.OutOfBalance(snap, settings.options)
	if err != nil {
		diags.Append(planDiagnostics(clusterTarget(len(snap.Brokers)), err)...)
		return false
	}
	return len(reasons) > 0
}

// clusterOperation names a scaling operation in messages.
func clusterOperation(op *executor.Operation) string {
	return fmt.Sprintf("%s to %d brokers", op.Kind, op.TargetBrokerCount)
}

func operationKey(clusterID string) string { return "cluster/" + clusterID }

func (r *ClusterResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan clusterResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultOpTimeout)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(writeOnlyToken(ctx, req.Config, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, timeout, &plan, nil, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *ClusterResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan clusterResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var state clusterResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	timeout, diags := plan.Timeouts.Update(ctx, defaultOpTimeout)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(writeOnlyToken(ctx, req.Config, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, timeout, &plan, &state, &resp.State, resp.Private, &resp.Diagnostics)
}

// writeOnlyToken copies scaling.http.token_wo from the configuration, the
// only place a write-only value exists, into the plan the apply uses. The
// framework keeps write-only values out of the state it saves.
func writeOnlyToken(ctx context.Context, cfg tfsdk.Config, plan *clusterResourceModel) diag.Diagnostics {
	if plan.Scaling == nil || plan.Scaling.HTTP == nil {
		return nil
	}
	var tok types.String
	diags := cfg.GetAttribute(ctx, path.Root("scaling").AtName("http").AtName("token_wo"), &tok)
	plan.Scaling.HTTP.TokenWO = tok
	return diags
}

// apply brings the cluster to the planned broker count and records what is
// there afterwards. On failure the state is not written, so Terraform keeps
// the last known truth and the next plan shows the change again. prior is
// the state before an update: remove_broker_ids already applied there name
// brokers that are gone, so they are asked for only when they changed.
func (r *ClusterResource) apply(ctx context.Context, timeout time.Duration, plan, prior *clusterResourceModel, state stateSetter, private privateSetter, diags *diag.Diagnostics) {
	if r.data == nil {
		diags.Append(providerNotConfigured())
		return
	}
	settings, ds := rebalanceSettings(plan.Rebalance)
	diags.Append(ds...)
	scaler, ds := buildScaler(ctx, plan.Scaling)
	diags.Append(ds...)
	var remove []int32
	if prior == nil || !prior.RemoveBrokerIDs.Equal(plan.RemoveBrokerIDs) || !prior.BrokerCount.Equal(plan.BrokerCount) {
		remove, ds = brokerIDs(ctx, plan.RemoveBrokerIDs)
		diags.Append(ds...)
	}
	if diags.HasError() {
		return
	}
	kc := r.data.kafka
	desc, err := kc.DescribeCluster(ctx)
	if err != nil {
		diags.Append(kafkaError("read the cluster before scaling", err))
		return
	}
	if target := int(plan.BrokerCount.ValueInt64()); target != len(desc.Brokers) || len(remove) > 0 {
		attempt := fmt.Sprintf("scale the cluster from %d to %d brokers", len(desc.Brokers), target)
		if !checkPermissions(ctx, kc, scalePermissions(), attempt, func(kafka.Permission) path.Path { return path.Root("broker_count") }, diags) {
			return
		}
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	store := kc.Operations()
	if err := store.Ensure(ctx); err != nil {
		diags.Append(kafkaError("create the operations topic "+kafka.OperationsTopic, err))
		return
	}
	ex := executor.New(executor.Deps{
		Kafka:   kc.Port(),
		Scaler:  scaler,
		Store:   store,
		Advisor: settings.advisor,
		Log:     tflogLogger{},
		Lease:   r.data.lease,
	}, settings.executor)
	target := int(plan.BrokerCount.ValueInt64())
	op, err := ex.Scale(ctx, executor.ScaleRequest{
		Key:               operationKey(desc.ClusterID),
		ID:                newOperationID(),
		TargetBrokerCount: target,
		RemoveBrokers:     remove,
		Options:           settings.options,
		InitialThrottle:   settings.options.ThrottleBytesPerSec,
		Resource:          fmt.Sprintf("kafkascale_cluster %q", desc.ClusterID),
		KeepBalanced:      keepBalanced(plan.Rebalance),
		ScalingMethod:     scalingMethod(plan.Scaling),
	})
	if err != nil {
		diags.Append(operationDiagnostics(clusterTarget(target), op, err)...)
		return
	}
	r.data.clearOrphanedThrottles(ctx, diags)

	if plan.PlannedMoves.IsUnknown() {
		plan.PlannedMoves, plan.PlannedBytes, plan.EstimatedDuration = types.Int64Value(0), types.Int64Value(0), types.StringValue("0s")
	}
	if plan.LeavingBrokers.IsUnknown() {
		var leaving []int32
		if op != nil {
			leaving = op.RemoveBrokers
		}
		plan.LeavingBrokers, ds = types.ListValueFrom(ctx, types.Int64Type, nonNil(leaving))
		diags.Append(ds...)
	}
	plan.PendingOperation = types.StringNull()
	snap, ok := r.refresh(ctx, plan, diags)
	if !ok {
		return
	}
	diags.Append(state.Set(ctx, plan)...)
	diags.Append(savePlanningSnapshot(ctx, private, snap)...)
}

type stateSetter interface {
	Set(ctx context.Context, val any) diag.Diagnostics
}

type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// refresh reads the cluster id and registered brokers into m, and returns
// the snapshot it planned from, for the private state.
func (r *ClusterResource) refresh(ctx context.Context, m *clusterResourceModel, diags *diag.Diagnostics) (engine.Cluster, bool) {
	kc := r.data.kafka
	snap, err := kc.Snapshot(ctx)
	if err != nil {
		diags.Append(kafkaError("read the cluster", err))
		return engine.Cluster{}, false
	}
	regs, err := kc.Registrations(ctx)
	if err != nil {
		diags.Append(kafkaError("list the registered brokers", err))
		return engine.Cluster{}, false
	}
	elems := make([]attr.Value, 0, len(regs))
	for _, b := range regs {
		obj, ds := types.ObjectValue(clusterBrokerAttrTypes, map[string]attr.Value{"id": types.Int64Value(int64(b.ID)), "rack": types.StringValue(b.Rack)})
		diags.Append(ds...)
		elems = append(elems, obj)
	}
	list, ds := types.ListValue(types.ObjectType{AttrTypes: clusterBrokerAttrTypes}, elems)
	diags.Append(ds...)
	m.ID = types.StringValue(snap.ClusterID)
	m.Brokers = list
	m.BrokerCount = types.Int64Value(int64(len(regs)))
	return kafka.EngineCluster(snap), !diags.HasError()
}

func (r *ClusterResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state clusterResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.data == nil {
		resp.Diagnostics.Append(providerNotConfigured())
		return
	}
	wantID := state.ID.ValueString()
	applied := state.BrokerCount
	snap, ok := r.refresh(ctx, &state, &resp.Diagnostics)
	if !ok {
		return
	}
	if wantID != "" && state.ID.ValueString() != wantID {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "A different Kafka cluster",
			fmt.Sprintf("This resource manages cluster %s, but the provider's bootstrap_servers reach cluster %s. "+
				"Point the provider at the right cluster, or remove the resource from the state with `terraform state rm`.", wantID, state.ID.ValueString()))
		return
	}
	// An unfinished operation means the last apply did not reach its count:
	// keep the last applied count so the next plan shows the change again,
	// and the apply resumes it.
	op, err := r.data.kafka.Operations().Load(ctx, operationKey(state.ID.ValueString()))
	if err != nil {
		resp.Diagnostics.Append(kafkaError("read the operation log", err))
		return
	}
	state.PendingOperation = types.StringNull()
	if op != nil && !op.Done() {
		if !applied.IsNull() {
			state.BrokerCount = applied
		}
		state.PendingOperation = types.StringValue(pendingOperation(op, clusterOperation(op)))
	}
	if state.PlannedMoves.IsNull() {
		state.PlannedMoves, state.PlannedBytes, state.EstimatedDuration = types.Int64Value(0), types.Int64Value(0), types.StringValue("0s")
	}
	if state.LeavingBrokers.IsNull() {
		state.LeavingBrokers = types.ListValueMust(types.Int64Type, []attr.Value{})
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	resp.Diagnostics.Append(savePlanningSnapshot(ctx, resp.Private, snap)...)
}

// Delete forgets the cluster. An operation still unfinished is cancelled
// first, so that no reassignment or throttle of ours outlives the
// resource that would have finished it.
func (r *ClusterResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state clusterResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || r.data == nil || state.ID.IsNull() {
		return
	}
	ex := executor.New(executor.Deps{Kafka: r.data.kafka.Port(), Store: r.data.kafka.Operations(), Log: tflogLogger{}, Lease: r.data.lease},
		executor.Settings{})
	c, err := ex.Cancel(ctx, operationKey(state.ID.ValueString()), "the kafkascale_cluster resource was destroyed")
	if err != nil {
		resp.Diagnostics.Append(kafkaError("cancel the unfinished operation of the destroyed cluster resource", err))
		return
	}
	if c != nil {
		resp.Diagnostics.AddWarning("The unfinished operation was cancelled", fmt.Sprintf("Destroying kafkascale_cluster %s %s.",
			state.ID.ValueString(), c))
	}
	tflog.Info(ctx, "kafkascale_cluster removed from state; the cluster is left as it is")
}

func (r *ClusterResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if r.data == nil {
		resp.Diagnostics.Append(providerNotConfigured())
		return
	}
	desc, err := r.data.kafka.DescribeCluster(ctx)
	if err != nil {
		resp.Diagnostics.Append(kafkaError("read the cluster to import", err))
		return
	}
	if desc.ClusterID != req.ID {
		resp.Diagnostics.AddError("Cluster id does not match",
			fmt.Sprintf("While importing cluster %q, the provider's bootstrap_servers reached cluster %q. Import with the id of the cluster the provider connects to.", req.ID, desc.ClusterID))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("planned_moves"), int64(0))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("planned_bytes"), int64(0))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("estimated_duration"), "0s")...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("leaving_brokers"), []int64{})...)
}

func newOperationID() string {
	return fmt.Sprintf("op-%s", time.Now().UTC().Format("20060102T150405.000000000Z"))
}

// brokerIDs reads a set of broker ids; null is none.
func brokerIDs(ctx context.Context, set types.Set) ([]int32, diag.Diagnostics) {
	if set.IsNull() || set.IsUnknown() {
		return nil, nil
	}
	var ids []int32
	diags := set.ElementsAs(ctx, &ids, false)
	return ids, diags
}
