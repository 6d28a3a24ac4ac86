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
	defaultInitialThrottle = engine.DefaultThrottleBytesPerSec // also what `kafkascale report` plans with
	defaultMinThrottle     = 5 << 20
	defaultMaxThrottle     = 100 << 20
	defaultAdjustInterval  = 30 * time.Second
	defaultOpTimeout       = 6 * time.Hour
	// defaultClusterDeleteTimeout bounds a destroy: it cancels an
	// unfinished operation, which reverts the reassignments in flight.
	defaultClusterDeleteTimeout = 10 * time.Minute
	defaultMaxIOPressure        = 0.1
	defaultMinHandlerIdle       = 0.3
	// maxApplyDurationLimit is the highest max_apply_duration: a week is
	// beyond any run limit a remote runner sets.
	maxApplyDurationLimit = 7 * 24 * time.Hour
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
	DemoteBrokerIDs   types.Set       `tfsdk:"demote_broker_ids"`
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

// clusterOperation names a scaling operation in messages.
func clusterOperation(op *executor.Operation) string {
	return fmt.Sprintf("%s to %d brokers", op.Kind, op.TargetBrokerCount)
}

func operationKey(clusterID string) string { return executor.ClusterKey(clusterID) }

func (r *ClusterResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan clusterResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultOpTimeout)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(writeOnlySecrets(ctx, req.Config, &plan)...)
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
	resp.Diagnostics.Append(writeOnlySecrets(ctx, req.Config, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, timeout, &plan, &state, &resp.State, resp.Private, &resp.Diagnostics)
}

// writeOnlySecrets copies the write-only secrets (scaling.http.token_wo,
// and the metrics block's bearer_token_wo and basic_auth.password_wo) from
// the configuration, the only place a write-only value exists, into the
// plan the apply uses. The framework keeps write-only values out of the
// state it saves.
func writeOnlySecrets(ctx context.Context, cfg tfsdk.Config, plan *clusterResourceModel) diag.Diagnostics {
	var diags diag.Diagnostics
	read := func(p path.Path, into *types.String) {
		diags.Append(cfg.GetAttribute(ctx, p, into)...)
	}
	if plan.Scaling != nil && plan.Scaling.HTTP != nil {
		read(path.Root("scaling").AtName("http").AtName("token_wo"), &plan.Scaling.HTTP.TokenWO)
	}
	if plan.Rebalance != nil && plan.Rebalance.Metrics != nil {
		m := path.Root("rebalance").AtName("metrics")
		read(m.AtName("bearer_token_wo"), &plan.Rebalance.Metrics.BearerTokenWO)
		if plan.Rebalance.Metrics.BasicAuth != nil {
			read(m.AtName("basic_auth").AtName("password_wo"), &plan.Rebalance.Metrics.BasicAuth.PasswordWO)
		}
	}
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
	settings, ds := resourceSettings(ctx, plan)
	diags.Append(ds...)
	scaler, ds := buildScaler(ctx, plan.Scaling)
	diags.Append(ds...)
	remove, ds := namedRemovals(ctx, prior, plan)
	diags.Append(ds...)
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
	ex := r.data.applyExecutor(ctx, settings.executor, scaler, settings.advisor)
	target := int(plan.BrokerCount.ValueInt64())
	op, err := ex.Scale(ctx, executor.ScaleRequest{
		Key:               operationKey(desc.ClusterID),
		ID:                newOperationID(),
		TargetBrokerCount: target,
		RemoveBrokers:     remove,
		Options:           settings.options,
		InitialThrottle:   settings.options.ThrottleBytesPerSec,
		Resource:          fmt.Sprintf("kafkascale_cluster %q", desc.ClusterID),
		Balance:           balanceKept(plan, prior),
		ScalingMethod:     scalingMethod(plan.Scaling),
	})
	if err != nil {
		diags.Append(operationDiagnostics(clusterTarget(target), op, err)...)
		return
	}
	r.data.reportLeftThrottles(ctx, ex, diags)

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
	planned := plan.BrokerCount
	snap, ok := r.refresh(ctx, plan, false, diags)
	if !ok {
		return
	}
	if op != nil && op.Paused() {
		// Terraform holds a successful apply to the planned count; the
		// refresh after it keeps the count the operation started from
		// while the operation is unfinished (see Read).
		plan.BrokerCount = planned
		plan.PendingOperation = types.StringValue(pendingOperation(op, clusterOperation(op)))
		diags.AddAttributeWarning(path.Root("rebalance").AtName("max_apply_duration"), "Operation paused at max_apply_duration",
			pausedSummary(op, clusterOperation(op)))
	}
	diags.Append(state.Set(ctx, plan)...)
	diags.Append(savePlanningSnapshot(ctx, private, snap, balanceOptions(ctx, plan))...)
}

// namedRemovals are the brokers remove_broker_ids asks the plan and the
// apply to remove: only when it or broker_count changed since prior (nil
// for a new resource). Once applied, the ids may stay in the
// configuration while they name brokers that are gone; asking for them
// again would refuse them as unregistered.
func namedRemovals(ctx context.Context, prior, plan *clusterResourceModel) ([]int32, diag.Diagnostics) {
	if prior != nil && prior.RemoveBrokerIDs.Equal(plan.RemoveBrokerIDs) && prior.BrokerCount.Equal(plan.BrokerCount) {
		return nil, nil
	}
	return brokerIDs(ctx, plan.RemoveBrokerIDs)
}

type stateSetter interface {
	Set(ctx context.Context, val any) diag.Diagnostics
}

type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// refresh reads the cluster id and registered brokers into m, and returns
// the snapshot it planned from, for the private state. shared reuses this
// run's recent read of the cluster (a refresh); after an apply the read is
// fresh.
func (r *ClusterResource) refresh(ctx context.Context, m *clusterResourceModel, shared bool, diags *diag.Diagnostics) (engine.Cluster, bool) {
	kc := r.data.kafka
	read := kc.Snapshot
	if shared {
		read = kc.RecentSnapshot
	}
	snap, err := read(ctx)
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
	snap, ok := r.refresh(ctx, &state, true, &resp.Diagnostics)
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
		// An apply paused at max_apply_duration recorded the count it
		// heads for, as Terraform holds a successful apply to the plan:
		// until the operation completes the count is still the one it
		// started from.
		if state.BrokerCount.ValueInt64() == int64(op.TargetBrokerCount) && len(op.BrokersBefore) > 0 {
			state.BrokerCount = types.Int64Value(int64(len(op.BrokersBefore)))
		}
		state.PendingOperation = types.StringValue(pendingOperation(op, clusterOperation(op)))
	}
	if owed := r.owedImbalance(ctx, snap, op, &state, &resp.Diagnostics); owed != "" {
		// A stopped operation's layout is unfinished even though nothing
		// is pending: the plan must not say "no changes".
		state.PendingOperation = types.StringValue(owed)
	}
	if state.PlannedMoves.IsNull() {
		state.PlannedMoves, state.PlannedBytes, state.EstimatedDuration = types.Int64Value(0), types.Int64Value(0), types.StringValue("0s")
	}
	if state.LeavingBrokers.IsNull() {
		state.LeavingBrokers = types.ListValueMust(types.Int64Type, []attr.Value{})
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	resp.Diagnostics.Append(savePlanningSnapshot(ctx, resp.Private, snap, balanceOptions(ctx, &state))...)
}

// owedImbalance says, when op (the resource's last operation) stopped short
// of its layout and left snap out of balance (executor.OwedImbalance),
// what stopped it and what the next apply rebalances; "" otherwise.
func (r *ClusterResource) owedImbalance(ctx context.Context, snap engine.Cluster, op *executor.Operation, m *clusterResourceModel, diags *diag.Diagnostics) string {
	if !op.OwesBalance() {
		return ""
	}
	settings, ds := resourceSettings(ctx, m)
	diags.Append(ds...)
	if ds.HasError() {
		return ""
	}
	owed, err := executor.OwedImbalance(snap, op, settings.options)
	if err != nil {
		diags.Append(planDiagnostics(clusterTarget(len(snap.Brokers)), err)...)
		return ""
	}
	if owed == "" {
		return ""
	}
	return fmt.Sprintf("Operation %s (%s) was %s before it reached its layout: %s. The moves it finished stay, and %s. "+
		"The next apply rebalances the cluster in place.", op.ID, clusterOperation(op), op.Phase, orNone(op.LastError), owed)
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
	timeout, diags := state.Timeouts.Delete(ctx, defaultClusterDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := r.data.executor(executor.Settings{}, nil, nil).Cancel(ctx, operationKey(state.ID.ValueString()), "the kafkascale_cluster resource was destroyed")
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
	// The refresh that follows the import reads the cluster: this read
	// is shared with it.
	desc, err := r.data.kafka.RecentSnapshot(ctx)
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
