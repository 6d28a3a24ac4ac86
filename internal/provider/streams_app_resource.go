package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

var (
	_ resource.Resource                   = &StreamsAppResource{}
	_ resource.ResourceWithConfigure      = &StreamsAppResource{}
	_ resource.ResourceWithModifyPlan     = &StreamsAppResource{}
	_ resource.ResourceWithImportState    = &StreamsAppResource{}
	_ resource.ResourceWithValidateConfig = &StreamsAppResource{}
)

// Defaults of the waits.
const (
	defaultStabilizationTimeout = "10m"
	// defaultStreamsTimeout bounds an apply of an expansion: several
	// apps, each waited for up to stabilization_timeout, and the topics'
	// growth between.
	defaultStreamsTimeout = time.Hour
	defaultQuietPeriod    = "30s"
)

// NewStreamsAppResource is the kafkascale_streams_app resource.
func NewStreamsAppResource() resource.Resource { return &StreamsAppResource{} }

// StreamsAppResource grows a live Kafka Streams application's topics. It
// manages the app's partition count, never the app itself: it creates no
// topic and deleting it changes nothing on the cluster.
type StreamsAppResource struct {
	data *providerData
}

type streamsAppModel struct {
	ID                   types.String    `tfsdk:"id"`
	ApplicationID        types.String    `tfsdk:"application_id"`
	SourceTopics         types.Set       `tfsdk:"source_topics"`
	SinkTopics           types.Set       `tfsdk:"sink_topics"`
	FixedInternalTopics  types.Set       `tfsdk:"fixed_internal_topics"`
	Partitions           types.Int64     `tfsdk:"partitions"`
	StaticPartitioning   types.Bool      `tfsdk:"static_partitioning"`
	OnExpansionURL       types.String    `tfsdk:"on_expansion_url"`
	OnExpansionURLWO     types.String    `tfsdk:"on_expansion_url_wo"`
	StabilizationTimeout types.String    `tfsdk:"stabilization_timeout"`
	QuietPeriod          types.String    `tfsdk:"quiet_period"`
	Quiesce              *quiesceModel   `tfsdk:"quiesce"`
	CoExpand             []coExpandModel `tfsdk:"co_expand"`
	InternalTopics       types.List      `tfsdk:"internal_topics"`
	Protocol             types.String    `tfsdk:"protocol"`
	ExpansionOrder       types.List      `tfsdk:"expansion_order"`
	SettledPartitions    types.Int64     `tfsdk:"settled_partitions"`
	Timeouts             timeouts.Value  `tfsdk:"timeouts"`
}

// coExpandModel is one co_expand block: another app grown with this one.
type coExpandModel struct {
	ApplicationID       types.String  `tfsdk:"application_id"`
	SourceTopics        types.Set     `tfsdk:"source_topics"`
	SinkTopics          types.Set     `tfsdk:"sink_topics"`
	FixedInternalTopics types.Set     `tfsdk:"fixed_internal_topics"`
	OnExpansionURL      types.String  `tfsdk:"on_expansion_url"`
	OnExpansionURLWO    types.String  `tfsdk:"on_expansion_url_wo"`
	Quiesce             *quiesceModel `tfsdk:"quiesce"`
}

type quiesceModel struct {
	Stop  types.List `tfsdk:"stop"`
	Start types.List `tfsdk:"start"`
}

func (r *StreamsAppResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_streams_app"
}

func (r *StreamsAppResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = streamsAppResourceSchema(ctx)
}

func (r *StreamsAppResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *StreamsAppResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan streamsAppModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var userFixed types.Set
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("fixed_internal_topics"), &userFixed)...)
	resp.Diagnostics.Append(writeOnlyHooks(ctx, req.Config, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultStreamsTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.apply(ctx, &plan, userFixed, nil, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *StreamsAppResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state streamsAppModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var userFixed types.Set
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("fixed_internal_topics"), &userFixed)...)
	resp.Diagnostics.Append(writeOnlyHooks(ctx, req.Config, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultStreamsTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.apply(ctx, &plan, userFixed, &state, &resp.State, resp.Private, &resp.Diagnostics)
}

// apply plans again from the cluster as it is now (a step an earlier apply
// did is not repeated), runs the steps, and records the truth: on failure,
// the counts the cluster shows and the last settled count.
func (r *StreamsAppResource) apply(ctx context.Context, plan *streamsAppModel, userFixed types.Set, state *streamsAppModel, out stateSetter, private privateSetter, diags *diag.Diagnostics) {
	if r.data == nil || r.data.kafka == nil {
		diags.Append(providerNotConfigured())
		return
	}
	x, snap, d := r.plan(ctx, plan, userFixed, state, nil, false)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	if plan.FixedInternalTopics.IsUnknown() {
		plan.FixedInternalTopics = fixedTopicsValue(userFixed, x)
	}
	settled := int64(x.From)
	if state != nil && !state.SettledPartitions.IsNull() {
		settled = state.SettledPartitions.ValueInt64()
	}
	if len(x.Steps) > 0 && !checkPermissions(ctx, r.data.kafka, streamsPermissions(x), "expand Streams app "+x.App,
		func(kafka.Permission) path.Path { return path.Root("partitions") }, diags) {
		return
	}
	if len(x.Steps) > 0 {
		grow := r.data.applyExecutor(ctx, executor.Settings{}, nil, nil)
		run, d := r.runner(ctx, plan, snap, grow)
		diags.Append(d...)
		if diags.HasError() {
			return
		}
		tflog.Info(ctx, "expanding Streams app", map[string]any{"application_id": x.App, "from": x.From, "to": x.To, "steps": strings.Join(streamsPlanLines(x.Steps), "; ")})
		if err := run.Run(ctx, x); err != nil {
			diags.Append(streamsRunDiagnostic(x, err)...)
			r.recordTruth(ctx, plan, settled, nil, out, private, diags)
			return
		}
		r.data.reportLeftThrottles(ctx, grow, diags)
	}
	// What the plan promised, so that the result matches it.
	settled = int64(x.To)
	if !plan.SettledPartitions.IsUnknown() && !plan.SettledPartitions.IsNull() {
		settled = plan.SettledPartitions.ValueInt64()
	}
	if plan.ExpansionOrder.IsUnknown() {
		plan.ExpansionOrder = stringList(streamsPlanLines(x.Steps))
	}
	read := &snap // nothing changed: the app as planned is the app as it is
	if len(x.Steps) > 0 {
		read = nil
	}
	r.recordTruth(ctx, plan, settled, read, out, private, diags)
}

// runner wires the engine's runner to Kafka, the quiesce commands, the
// endpoint and grow, the executor that grows the topics under the
// operation lease.
func (r *StreamsAppResource) runner(ctx context.Context, m *streamsAppModel, snap streamsSnapshot, grow *executor.Executor) (executor.StreamsRun, diag.Diagnostics) {
	app := snap.App
	var diags diag.Diagnostics
	timeout, _ := time.ParseDuration(m.StabilizationTimeout.ValueString())
	quiet, _ := time.ParseDuration(m.QuietPeriod.ValueString())
	run := executor.StreamsRun{
		Kafka:        kafka.StreamsPort{Client: r.data.kafka, Protocol: app.Protocol},
		Clock:        executor.SystemClock{},
		Log:          tflogLogger{},
		Quiet:        quiet,
		Poll:         time.Second,
		AwaitTimeout: timeout,
		Grow:         grow,
		Resource:     fmt.Sprintf("kafkascale_streams_app %q", m.ApplicationID.ValueString()),
	}
	run.Quiesce, run.Notifier = r.appHooks(ctx, m.ApplicationID.ValueString(), m.Quiesce, orWriteOnly(m.OnExpansionURLWO, m.OnExpansionURL), &diags)
	if len(m.CoExpand) > 0 {
		run.Apps = map[string]executor.StreamsRunApp{}
	}
	for i, c := range m.CoExpand {
		id := c.ApplicationID.ValueString()
		a := executor.StreamsRunApp{Kafka: kafka.StreamsPort{Client: r.data.kafka}}
		if i < len(snap.CoExpand) {
			a.Kafka = kafka.StreamsPort{Client: r.data.kafka, Protocol: snap.CoExpand[i].App.Protocol}
		}
		a.Quiesce, a.Notifier = r.appHooks(ctx, id, c.Quiesce, orWriteOnly(c.OnExpansionURLWO, c.OnExpansionURL), &diags)
		run.Apps[id] = a
	}
	return run, diags
}

// appHooks are an app's quiesce commands and endpoint, nil when not set.
func (r *StreamsAppResource) appHooks(ctx context.Context, id string, qm *quiesceModel, url string, diags *diag.Diagnostics) (executor.Quiescer, executor.ExpansionNotifier) {
	var q executor.Quiescer
	var n executor.ExpansionNotifier
	if qm != nil {
		c := &platform.QuiesceCommands{ApplicationID: id, Logger: tflogFunc}
		diags.Append(qm.Stop.ElementsAs(ctx, &c.Stop, false)...)
		diags.Append(qm.Start.ElementsAs(ctx, &c.Start, false)...)
		q = c
	}
	if url != "" {
		n = webhookNotifier{w: &platform.Webhook{URL: url, Logger: tflogFunc}}
	}
	return q, n
}

// streamsPermissions are what an expansion needs: ALTER on every topic it
// grows, and DESCRIBE on the group to wait for it.
func streamsPermissions(x streams.Expansion) []kafka.Permission {
	var need []kafka.Permission
	for _, id := range x.AppIDs() {
		need = append(need, kafka.Permission{Kind: kafka.ResourceGroup, Name: id, Operation: kafka.OpDescribe, Why: "to wait until the app is stable"})
	}
	need = append(need, leasePermissions()...)
	for _, s := range x.Steps {
		for _, t := range s.Topics {
			need = append(need, kafka.Permission{Kind: kafka.ResourceTopic, Name: t, Operation: kafka.OpAlter, Why: "to add partitions"})
		}
	}
	return need
}

// streamsSnapshotKey holds, in the private state, the app as the last
// refresh or apply read it, for the plan.
const streamsSnapshotKey = "streams_snapshot"

type streamsSnapshot struct {
	Declared kafka.StreamsAppTopics `json:"declared"`
	App      streams.App            `json:"app"`
	// CoExpand are the co_expand apps, in the configuration's order.
	CoExpand []streamsSnapshotApp    `json:"co_expand,omitempty"`
	Others   []streams.App           `json:"others,omitempty"`
	Groups   []streams.ConsumerGroup `json:"groups,omitempty"`
}

// streamsSnapshotApp is one co-expanded app as read.
type streamsSnapshotApp struct {
	Declared kafka.DeclaredStreamsApp `json:"declared"`
	App      streams.App              `json:"app"`
}

// matches reports whether the snapshot was read for these declarations.
func (s streamsSnapshot) matches(id string, declared kafka.StreamsAppTopics, co []kafka.DeclaredStreamsApp) bool {
	if s.App.ID != id || !s.Declared.Equal(declared) || len(s.CoExpand) != len(co) {
		return false
	}
	for i, c := range co {
		if s.CoExpand[i].Declared.ID != c.ID || !s.CoExpand[i].Declared.Topics.Equal(c.Topics) {
			return false
		}
	}
	return true
}

func saveStreamsSnapshot(ctx context.Context, p privateSetter, s streamsSnapshot) diag.Diagnostics {
	if p == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return diag.Diagnostics{diag.NewErrorDiagnostic("Could not keep the Streams app snapshot", err.Error()+" "+bugReport)}
	}
	return p.SetKey(ctx, streamsSnapshotKey, b)
}

// loadStreamsSnapshot returns the saved snapshot; an unreadable one counts
// as none, and the plan reads the cluster instead.
func loadStreamsSnapshot(ctx context.Context, p privateGetter) (streamsSnapshot, bool) {
	var s streamsSnapshot
	if p == nil {
		return s, false
	}
	raw, diags := p.GetKey(ctx, streamsSnapshotKey)
	if diags.HasError() || len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return streamsSnapshot{}, false
	}
	return s, true
}

type webhookNotifier struct{ w *platform.Webhook }

func (n webhookNotifier) Notify(ctx context.Context, app string, from, to int32, topics []string) error {
	return n.w.Notify(ctx, platform.ExpansionEvent{ApplicationID: app, OldPartitions: from, NewPartitions: to, Topics: topics})
}

func streamsRunDiagnostic(x streams.Expansion, err error) diag.Diagnostics {
	var diags diag.Diagnostics
	if d, ok := leaseDiagnostic(fmt.Sprintf("expand Streams app %s from %d to %d partitions", x.App, x.From, x.To), path.Root("partitions"), err); ok {
		diags.Append(d)
		return diags
	}
	var se *executor.StreamsStepError
	done := ""
	if errors.As(err, &se) && len(se.Done) > 0 {
		done = "\n\nDone before the failure:\n" + strings.Join(streamsPlanLines(se.Done), "\n")
	}
	diags.AddAttributeError(path.Root("partitions"), "Streams expansion stopped",
		fmt.Sprintf("Expanding Streams app %s from %d to %d partitions stopped: %v.%s\n\nThe state records the counts the "+
			"cluster shows now, and settled_partitions stays below partitions: the next apply skips what was done and "+
			"finishes the rest.", x.App, x.From, x.To, err, done))
	return diags
}

// recordTruth saves what the cluster shows, with settled as the settled
// count: read when given (the apply changed nothing), else the app read
// back.
func (r *StreamsAppResource) recordTruth(ctx context.Context, m *streamsAppModel, settled int64, read *streamsSnapshot, out stateSetter, private privateSetter, diags *diag.Diagnostics) {
	rctx, cancel := afterFailure(ctx)
	defer cancel()
	if read == nil {
		declared, d := declaredTopics(rctx, m)
		diags.Append(d...)
		co, d := coDeclared(rctx, m)
		diags.Append(d...)
		snap, err := r.describe(rctx, m.ApplicationID.ValueString(), declared, co)
		if err != nil {
			diags.Append(kafkaError("read Streams app "+m.ApplicationID.ValueString()+" back", err))
			return
		}
		read = &snap
	}
	app := read.App
	diags.Append(saveStreamsSnapshot(rctx, private, *read)...)
	m.ID = m.ApplicationID
	if n := app.Partitions(); n > 0 {
		m.Partitions = types.Int64Value(int64(n))
	}
	m.InternalTopics = stringList(app.InternalTopics())
	m.Protocol = types.StringValue(string(app.Protocol))
	m.SettledPartitions = types.Int64Value(settled)
	// Write-only values never go into the state, whichever way the apply
	// ended.
	saved := *m
	saved.OnExpansionURLWO = types.StringNull()
	saved.CoExpand = slices.Clone(m.CoExpand)
	for i := range saved.CoExpand {
		saved.CoExpand[i].OnExpansionURLWO = types.StringNull()
	}
	diags.Append(out.Set(rctx, &saved)...)
}

func (r *StreamsAppResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m streamsAppModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.data == nil || r.data.kafka == nil {
		resp.Diagnostics.Append(providerNotConfigured())
		return
	}
	declared, d := declaredTopics(ctx, &m)
	resp.Diagnostics.Append(d...)
	co, d := coDeclared(ctx, &m)
	resp.Diagnostics.Append(d...)
	id := m.ApplicationID.ValueString()
	snap, err := r.describe(ctx, id, declared, co)
	if err != nil {
		resp.Diagnostics.Append(kafkaError("read Streams app "+id, err))
		return
	}
	if len(declared.Sources) == 0 && snap.App.Consumed != nil {
		// Imported: the group tells what it consumes; read the app again
		// with those sources, which give its partition count.
		declared.Sources = snap.App.Consumed
		m.SourceTopics = stringSetValue(declared.Sources)
		if snap, err = r.describe(ctx, id, declared, co); err != nil {
			resp.Diagnostics.Append(kafkaError("read Streams app "+id, err))
			return
		}
	}
	resp.Diagnostics.Append(saveStreamsSnapshot(ctx, resp.Private, snap)...)
	app := snap.App
	n := app.Partitions()
	if n == 0 && !app.GroupExists && len(app.InternalTopics()) == 0 {
		tflog.Warn(ctx, "Streams app gone: no source topic, group or internal topic left; removing it from the state", map[string]any{"application_id": id})
		resp.State.RemoveResource(ctx)
		return
	}
	m.ID = types.StringValue(id)
	if n > 0 {
		// Grown elsewhere (by another app's co_expand, or by hand) after
		// this resource's last expansion settled: nothing is left for this
		// resource to wait for or to notify. An apply of this resource
		// that stopped halfway recorded its grown count with a lower
		// settled count instead, and still finishes.
		if !m.Partitions.IsNull() && !m.SettledPartitions.IsNull() && m.SettledPartitions.Equal(m.Partitions) && int64(n) > m.Partitions.ValueInt64() {
			tflog.Info(ctx, "Streams app grown outside this resource; its count is settled", map[string]any{"application_id": id, "from": m.Partitions.ValueInt64(), "to": n})
			m.SettledPartitions = types.Int64Value(int64(n))
		}
		m.Partitions = types.Int64Value(int64(n))
	}
	m.InternalTopics = stringList(app.InternalTopics())
	m.Protocol = types.StringValue(string(app.Protocol))
	if m.ExpansionOrder.IsNull() {
		m.ExpansionOrder = stringList(nil)
	}
	if m.SettledPartitions.IsNull() {
		m.SettledPartitions = types.Int64Value(int64(n))
	}
	if m.StabilizationTimeout.IsNull() {
		m.StabilizationTimeout = types.StringValue(defaultStabilizationTimeout)
	}
	if m.QuietPeriod.IsNull() {
		m.QuietPeriod = types.StringValue(defaultQuietPeriod)
	}
	if m.StaticPartitioning.IsNull() {
		m.StaticPartitioning = types.BoolValue(false)
	}
	if m.SinkTopics.IsNull() {
		m.SinkTopics = stringSetValue(nil)
	}
	if m.CoExpand == nil {
		m.CoExpand = []coExpandModel{} // an empty block list, as a configuration without blocks gives
	}
	if m.FixedInternalTopics.IsNull() {
		// Imported: what the engine finds, as a plan would show it.
		settled := int32(0)
		if !m.SettledPartitions.IsNull() {
			settled = int32(m.SettledPartitions.ValueInt64())
		}
		m.FixedInternalTopics = stringSetValue(streams.FixedTopicNames(streams.FixedInternalTopics(app, nil, settled, n)))
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete forgets the app: the topics and the app stay as they are, since
// Kafka cannot take partitions back and the app is not ours to stop.
func (r *StreamsAppResource) Delete(ctx context.Context, req resource.DeleteRequest, _ *resource.DeleteResponse) {
	var m streamsAppModel
	if d := req.State.Get(ctx, &m); !d.HasError() {
		tflog.Info(ctx, "forgetting Streams app; its topics keep their partitions", map[string]any{"application_id": m.ApplicationID.ValueString()})
	}
}

// ImportState takes the application id; the sources come from the group.
func (r *StreamsAppResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if strings.TrimSpace(req.ID) == "" {
		resp.Diagnostics.AddError("Missing application id", "Import a kafkascale_streams_app by its application id, e.g. `terraform import kafkascale_streams_app.billing billing`.")
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("application_id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("source_topics"), stringSetValue(nil))...)
}

func stringSet(ctx context.Context, s types.Set) ([]string, diag.Diagnostics) {
	if s.IsNull() || s.IsUnknown() {
		return nil, nil
	}
	var out []string
	d := s.ElementsAs(ctx, &out, false)
	slices.Sort(out)
	return out, d
}

func stringSetValue(xs []string) types.Set {
	vals := make([]attr.Value, len(xs))
	for i, x := range xs {
		vals[i] = types.StringValue(x)
	}
	return types.SetValueMust(types.StringType, vals)
}

func stringList(xs []string) types.List {
	vals := make([]attr.Value, len(xs))
	for i, x := range xs {
		vals[i] = types.StringValue(x)
	}
	return types.ListValueMust(types.StringType, vals)
}

// writeOnlyHooks copies on_expansion_url_wo, of the app and of each
// co_expand block, from the configuration, the only place a write-only
// value exists, into m. The framework keeps write-only values out of the
// plan and the state it saves.
func writeOnlyHooks(ctx context.Context, cfg tfsdk.Config, m *streamsAppModel) diag.Diagnostics {
	diags := cfg.GetAttribute(ctx, path.Root("on_expansion_url_wo"), &m.OnExpansionURLWO)
	for i := range m.CoExpand {
		diags.Append(cfg.GetAttribute(ctx, path.Root("co_expand").AtListIndex(i).AtName("on_expansion_url_wo"), &m.CoExpand[i].OnExpansionURLWO)...)
	}
	return diags
}
