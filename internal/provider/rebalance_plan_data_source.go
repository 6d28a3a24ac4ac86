package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

var (
	_ datasource.DataSource              = &RebalancePlanDataSource{}
	_ datasource.DataSourceWithConfigure = &RebalancePlanDataSource{}
)

// NewRebalancePlanDataSource is the constructor the provider registers.
func NewRebalancePlanDataSource() datasource.DataSource { return &RebalancePlanDataSource{} }

// RebalancePlanDataSource previews the plan for a broker count without
// running it.
type RebalancePlanDataSource struct {
	data *providerData
}

type rebalancePlanModel struct {
	BrokerCount        types.Int64   `tfsdk:"broker_count"`
	RemoveBrokerIDs    types.List    `tfsdk:"remove_broker_ids"`
	Throttle           types.Int64   `tfsdk:"throttle"`
	MaxMovesPerStep    types.Int64   `tfsdk:"max_moves_per_step"`
	MaxMovesPerBroker  types.Int64   `tfsdk:"max_moves_per_broker"`
	MinFreeDiskPercent types.Float64 `tfsdk:"min_free_disk_percent"`
	MaxDiskSkewPercent types.Float64 `tfsdk:"max_disk_skew_percent"`
	AwarenessSeparator types.String  `tfsdk:"awareness_separator"`
	AwarenessDims      types.List    `tfsdk:"awareness_dimensions"`
	MaxMoves           types.Int64   `tfsdk:"max_moves"`

	ID                types.String `tfsdk:"id"`
	AddBrokers        types.List   `tfsdk:"add_brokers"`
	LeavingBrokers    types.List   `tfsdk:"leaving_brokers"`
	Groups            types.Int64  `tfsdk:"groups"`
	PlannedMoves      types.Int64  `tfsdk:"planned_moves"`
	LowerBound        types.Int64  `tfsdk:"lower_bound"`
	PlannedBytes      types.Int64  `tfsdk:"planned_bytes"`
	RemoteBytes       types.Int64  `tfsdk:"remote_bytes"`
	EstimatedDuration types.String `tfsdk:"estimated_duration"`
	Moves             types.List   `tfsdk:"moves"`
	Brokers           types.List   `tfsdk:"brokers"`
	Warnings          types.List   `tfsdk:"warnings"`
}

var (
	planMoveAttrTypes = map[string]attr.Type{
		"group": types.Int64Type, "topic": types.StringType, "partition": types.Int64Type,
		"old_replicas": types.ListType{ElemType: types.Int64Type}, "new_replicas": types.ListType{ElemType: types.Int64Type}, "bytes": types.Int64Type,
	}
	planBrokerAttrTypes = map[string]attr.Type{
		"id": types.Int64Type, "rack": types.StringType,
		"replicas_before": types.Int64Type, "replicas_after": types.Int64Type,
		"preferred_leaders_before": types.Int64Type, "preferred_leaders_after": types.Int64Type,
		"bytes_before": types.Int64Type, "bytes_after": types.Int64Type, "peak_disk_bytes": types.Int64Type,
		"moves_in": types.Int64Type, "moves_out": types.Int64Type, "bytes_in": types.Int64Type, "bytes_out": types.Int64Type,
	}
)

// defaultMaxMoves is how many moves data.kafkascale_rebalance_plan lists
// unless max_moves says otherwise. Every move listed is written into the
// state: at 2.8 million replicas a plan holds about 195,000 moves, tens of
// megabytes of state. The per-broker traffic in brokers summarises them all.
const defaultMaxMoves = 1000

func (d *RebalancePlanDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_rebalance_plan"
}

func (d *RebalancePlanDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	computed := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Previews the reassignment plan for a broker count, from the cluster as it is now, without changing anything: " +
			"the moves, the bytes they copy, the estimated duration and every broker's load before and after. New brokers' ids, racks and " +
			"capacity are predicted as `kafkascale_cluster` predicts them in its plan.",
		Attributes: map[string]schema.Attribute{
			"broker_count": schema.Int64Attribute{Required: true, Validators: brokerCountValidators(),
				MarkdownDescription: "The broker count to plan for."},
			"remove_broker_ids": schema.ListAttribute{ElementType: types.Int64Type, Optional: true,
				MarkdownDescription: "As `kafkascale_cluster.remove_broker_ids`: on a scale-in, the brokers to drain; with `broker_count` " +
					"unchanged, the brokers to replace. Default: the resource's default choice (fenced or offline brokers first, then even " +
					"failure domains, then the fewest bytes, then the highest ids). The preview is exactly what the resource would plan."},
			"throttle": schema.Int64Attribute{Optional: true, Validators: throttleValidators(),
				MarkdownDescription: fmt.Sprintf("Replication throttle for the estimate, bytes/s per broker, at least 1024. Default %d.", defaultInitialThrottle)},
			"max_moves_per_step":    schema.Int64Attribute{Optional: true, Validators: moveLimitValidators(), MarkdownDescription: "As in `kafkascale_cluster.rebalance`."},
			"max_moves_per_broker":  schema.Int64Attribute{Optional: true, Validators: moveLimitValidators(), MarkdownDescription: "As in `kafkascale_cluster.rebalance`."},
			"min_free_disk_percent": schema.Float64Attribute{Optional: true, Validators: freeDiskValidators(), MarkdownDescription: "As in `kafkascale_cluster.rebalance`."},
			"max_disk_skew_percent": schema.Float64Attribute{Optional: true, Validators: diskSkewValidators(), MarkdownDescription: "As in `kafkascale_cluster.rebalance`."},
			"awareness_separator":   schema.StringAttribute{Optional: true, MarkdownDescription: "As `rebalance.awareness.separator`."},
			"awareness_dimensions":  schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "As `rebalance.awareness.dimensions`."},
			"max_moves": schema.Int64Attribute{Optional: true, Validators: maxMovesValidators(),
				MarkdownDescription: fmt.Sprintf("The most moves `moves` lists, the first in execution order. Default %d. Every move listed is "+
					"written into the Terraform state, and a large cluster's plan holds hundreds of thousands (about 195,000 at 2.8 million "+
					"replicas): `planned_moves` counts them all, `brokers` sums them per broker, and `warnings` says when the list is cut. "+
					"Set it to at least `planned_moves` to list every move, or to 0 to list none.", defaultMaxMoves)},

			"id":              schema.StringAttribute{Computed: true, MarkdownDescription: "The cluster id."},
			"add_brokers":     schema.ListAttribute{ElementType: types.Int64Type, Computed: true, MarkdownDescription: "Predicted ids of the brokers a scale-out adds."},
			"leaving_brokers": schema.ListAttribute{ElementType: types.Int64Type, Computed: true, MarkdownDescription: "Brokers a scale-in drains and removes."},
			"groups":          computed("Groups of steps; a group's moves all finish before the next starts."),
			"planned_moves":   computed("Replica moves (each copies one replica)."),
			"lower_bound":     computed("The fewest replica moves any plan reaching balance could make."),
			"planned_bytes":   computed("Bytes copied between brokers. A new replica of a tiered topic's partition copies its leader's local log (with `follower.fetch.last.tiered.offset.enable`, only what is not yet in remote storage), not the remote segments."),
			"remote_bytes":    computed("Bytes of the moved partitions of tiered topics that stay in remote storage and are not copied; 0 without tiered storage."),
			"estimated_duration": schema.StringAttribute{Computed: true, MarkdownDescription: "Estimated duration of the whole apply at `throttle`: " +
				"adding and removing brokers (as last measured on this cluster, or a default), the copy, each group's overhead, and verifying " +
				"and electing leaders. The operations guide explains each part."},
			"warnings": schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Facts worth knowing that do not stop the plan."},
			"moves": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The moves in execution order, at most `max_moves` of them.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"group":        computed("Group index, from 0."),
					"topic":        schema.StringAttribute{Computed: true, MarkdownDescription: "Topic."},
					"partition":    computed("Partition."),
					"old_replicas": schema.ListAttribute{ElementType: types.Int64Type, Computed: true, MarkdownDescription: "Replicas before the move."},
					"new_replicas": schema.ListAttribute{ElementType: types.Int64Type, Computed: true, MarkdownDescription: "Replicas after the move."},
					"bytes":        computed("Bytes the move copies."),
				}}},
			"brokers": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "Every broker before and after, sorted by id.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id": computed("Broker id."), "rack": schema.StringAttribute{Computed: true, MarkdownDescription: "Rack."},
					"replicas_before": computed("Replicas before."), "replicas_after": computed("Replicas after."),
					"preferred_leaders_before": computed("Preferred leaders before."), "preferred_leaders_after": computed("Preferred leaders after."),
					"bytes_before": computed("Replica bytes before."), "bytes_after": computed("Replica bytes after."),
					"peak_disk_bytes": computed("Highest disk use at any group, copies in flight counted."),
					"moves_in":        computed("Replicas the plan copies onto the broker, every move counted (listed in `moves` or not)."),
					"moves_out":       computed("Replicas the plan removes from the broker."),
					"bytes_in":        computed("Bytes the plan copies onto the broker."),
					"bytes_out":       computed("Bytes of the replicas the plan removes from the broker."),
				}}},
		},
	}
}

func (d *RebalancePlanDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *RebalancePlanDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if d.data == nil {
		resp.Diagnostics.Append(providerNotConfigured())
		return
	}
	var m rebalancePlanModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	rb := &rebalanceModel{
		InitialThrottle: m.Throttle, MaxMovesPerStep: m.MaxMovesPerStep, MaxMovesPerBroker: m.MaxMovesPerBroker,
		MinFreeDiskPercent: m.MinFreeDiskPercent, MaxDiskSkewPercent: m.MaxDiskSkewPercent,
	}
	if !m.AwarenessSeparator.IsNull() || !m.AwarenessDims.IsNull() {
		rb.Awareness = &awarenessModel{Separator: m.AwarenessSeparator, Dimensions: m.AwarenessDims}
	}
	settings, diags := rebalanceSettings(rb)
	resp.Diagnostics.Append(diags...)
	var remove []int32
	if !m.RemoveBrokerIDs.IsNull() {
		resp.Diagnostics.Append(m.RemoveBrokerIDs.ElementsAs(ctx, &remove, false)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	snap, err := d.data.kafka.RecentSnapshot(ctx)
	if err != nil {
		resp.Diagnostics.Append(kafkaError("read the cluster to plan", err))
		return
	}
	target := int(m.BrokerCount.ValueInt64())
	// The broker add and remove times measured by the cluster's last
	// operation make the estimate, under the scaling method they were
	// measured with: a data source has no scaling block of its own.
	c, err := d.data.executor(executor.Settings{}, nil, nil).PreviewCost(ctx, executor.CostRequest{
		Key: operationKey(snap.ClusterID), Target: target, Remove: remove, Options: settings.options, Standalone: true,
		Fresh: func() (*executor.Preview, error) { return d.data.previewScale(snap, target, remove, settings.options) }})
	if err != nil {
		at := path.Root("broker_count")
		var leaving *engine.LeavingError
		if errors.As(err, &leaving) {
			at = leavingAttribute(leaving)
		}
		for _, dg := range planDiagnostics(clusterTarget(target), err) {
			resp.Diagnostics.AddAttributeError(at, dg.Summary(), dg.Detail())
		}
		return
	}
	pv := c.Preview
	p := pv.Plan
	m.ID = types.StringValue(snap.ClusterID)
	m.Groups = types.Int64Value(int64(len(p.Groups)))
	m.PlannedMoves = types.Int64Value(int64(p.ReplicaMoves))
	m.LowerBound = types.Int64Value(int64(p.Score.LowerBound))
	m.PlannedBytes = types.Int64Value(p.TotalBytes)
	m.RemoteBytes = types.Int64Value(p.RemoteBytes)
	m.EstimatedDuration = types.StringValue(c.ETA.Total().Round(time.Second).String())

	var addIDs []int32
	for _, b := range pv.AddBrokers {
		addIDs = append(addIDs, b.ID)
	}
	var ds diag.Diagnostics
	m.AddBrokers, ds = types.ListValueFrom(ctx, types.Int64Type, nonNil(addIDs))
	resp.Diagnostics.Append(ds...)
	m.LeavingBrokers, ds = types.ListValueFrom(ctx, types.Int64Type, nonNil(pv.RemoveBrokers))
	resp.Diagnostics.Append(ds...)
	warnings := append([]string{}, p.Warnings...)
	if pv.Healing != "" {
		warnings = append([]string{pv.Healing}, warnings...)
	}
	if pv.PendingUpload != "" {
		warnings = append(warnings, pv.PendingUpload)
	}
	maxMoves := int64(defaultMaxMoves)
	if !m.MaxMoves.IsNull() {
		maxMoves = m.MaxMoves.ValueInt64()
	}
	total := 0
	p.EachMove(func(int, int, engine.Move) { total++ })
	if int64(total) > maxMoves {
		cut := fmt.Sprintf("moves lists the first %d of the plan's %d moves (max_moves = %d); brokers sums all of them per broker. "+
			"To list every move, set max_moves to at least %d: each listed move is written into the Terraform state.", maxMoves, total, maxMoves, total)
		warnings = append(warnings, cut)
		resp.Diagnostics.AddAttributeWarning(path.Root("max_moves"), "The list of moves is cut", cut)
	}
	m.Warnings, ds = types.ListValueFrom(ctx, types.StringType, warnings)
	resp.Diagnostics.Append(ds...)

	m.Moves, ds = planMovesValue(ctx, p, maxMoves)
	resp.Diagnostics.Append(ds...)
	m.Brokers, ds = planBrokersValue(p)
	resp.Diagnostics.Append(ds...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// planMovesValue lists the plan's first maxMoves moves, in execution
// order.
func planMovesValue(ctx context.Context, p *engine.Plan, maxMoves int64) (types.List, diag.Diagnostics) {
	var diags diag.Diagnostics
	var moves []attr.Value
	p.EachMove(func(group, _ int, mv engine.Move) {
		if int64(len(moves)) >= maxMoves {
			return
		}
		oldR, d1 := types.ListValueFrom(ctx, types.Int64Type, mv.OldReplicas)
		newR, d2 := types.ListValueFrom(ctx, types.Int64Type, mv.NewReplicas)
		diags.Append(d1...)
		diags.Append(d2...)
		obj, d3 := types.ObjectValue(planMoveAttrTypes, map[string]attr.Value{
			"group": types.Int64Value(int64(group)), "topic": types.StringValue(mv.Topic), "partition": types.Int64Value(int64(mv.Partition)),
			"old_replicas": oldR, "new_replicas": newR, "bytes": types.Int64Value(mv.Bytes),
		})
		diags.Append(d3...)
		moves = append(moves, obj)
	})
	l, ds := types.ListValue(types.ObjectType{AttrTypes: planMoveAttrTypes}, nonNilValues(moves))
	return l, append(diags, ds...)
}

// planBrokersValue lists every broker before and after the plan, with the
// traffic of all its moves.
func planBrokersValue(p *engine.Plan) (types.List, diag.Diagnostics) {
	var diags diag.Diagnostics
	traffic := p.Traffic()
	var brokers []attr.Value
	for _, b := range p.Brokers {
		tr := traffic[b.Broker]
		obj, d1 := types.ObjectValue(planBrokerAttrTypes, map[string]attr.Value{
			"id": types.Int64Value(int64(b.Broker)), "rack": types.StringValue(b.Rack),
			"replicas_before": types.Int64Value(int64(b.Before.Replicas)), "replicas_after": types.Int64Value(int64(b.After.Replicas)),
			"preferred_leaders_before": types.Int64Value(int64(b.Before.Leaders)), "preferred_leaders_after": types.Int64Value(int64(b.After.Leaders)),
			"bytes_before": types.Int64Value(b.Before.Bytes), "bytes_after": types.Int64Value(b.After.Bytes),
			"peak_disk_bytes": types.Int64Value(b.PeakDiskBytes),
			"moves_in":        types.Int64Value(int64(tr.MovesIn)), "moves_out": types.Int64Value(int64(tr.MovesOut)),
			"bytes_in": types.Int64Value(tr.BytesIn), "bytes_out": types.Int64Value(tr.BytesOut),
		})
		diags.Append(d1...)
		brokers = append(brokers, obj)
	}
	l, ds := types.ListValue(types.ObjectType{AttrTypes: planBrokerAttrTypes}, nonNilValues(brokers))
	return l, append(diags, ds...)
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func nonNilValues(vs []attr.Value) []attr.Value {
	if vs == nil {
		return []attr.Value{}
	}
	return vs
}
