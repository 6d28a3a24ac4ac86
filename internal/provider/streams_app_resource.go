package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
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
	defaultQuietPeriod          = "30s"
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
	ID                   types.String  `tfsdk:"id"`
	ApplicationID        types.String  `tfsdk:"application_id"`
	SourceTopics         types.Set     `tfsdk:"source_topics"`
	SinkTopics           types.Set     `tfsdk:"sink_topics"`
	FixedInternalTopics  types.Set     `tfsdk:"fixed_internal_topics"`
	Partitions           types.Int64   `tfsdk:"partitions"`
	StaticPartitioning   types.Bool    `tfsdk:"static_partitioning"`
	OnExpansionURL       types.String  `tfsdk:"on_expansion_url"`
	StabilizationTimeout types.String  `tfsdk:"stabilization_timeout"`
	QuietPeriod          types.String  `tfsdk:"quiet_period"`
	Quiesce              *quiesceModel `tfsdk:"quiesce"`
	InternalTopics       types.List    `tfsdk:"internal_topics"`
	Protocol             types.String  `tfsdk:"protocol"`
	ExpansionOrder       types.List    `tfsdk:"expansion_order"`
	SettledPartitions    types.Int64   `tfsdk:"settled_partitions"`
}

type quiesceModel struct {
	Stop  types.List `tfsdk:"stop"`
	Start types.List `tfsdk:"start"`
}

func (r *StreamsAppResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_streams_app"
}

func (r *StreamsAppResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = streamsAppResourceSchema()
}

func (r *StreamsAppResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig catches what needs no cluster: a topic named twice.
func (r *StreamsAppResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m streamsAppModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if q := m.Quiesce; q != nil {
		for name, v := range map[string]types.List{"stop": q.Stop, "start": q.Start} {
			if v.IsNull() {
				resp.Diagnostics.AddAttributeError(path.Root("quiesce").AtName(name), "Missing quiesce command",
					fmt.Sprintf("quiesce.%s is required in the quiesce block: kafkascale stops the app, grows its topics and "+
						"starts it again, so it needs both commands.", name))
			}
		}
	}
	sources, _ := stringSet(ctx, m.SourceTopics)
	sinks, _ := stringSet(ctx, m.SinkTopics)
	for _, s := range sinks {
		if slices.Contains(sources, s) {
			resp.Diagnostics.AddAttributeError(path.Root("sink_topics"), "Topic both source and sink",
				fmt.Sprintf("Topic %q is in source_topics and sink_topics. A topic the app consumes is a source: its growth "+
					"must go with the internal topics, not before them. Remove it from sink_topics.", s))
		}
	}
	if !m.ApplicationID.IsNull() && !m.ApplicationID.IsUnknown() {
		id := m.ApplicationID.ValueString()
		for _, s := range append(sources, sinks...) {
			if _, internal := engine.InternalTopicRole(id, s, nil); internal {
				resp.Diagnostics.AddAttributeError(path.Root("source_topics"), "Internal topic listed",
					fmt.Sprintf("Topic %q is one of the app's internal topics, which kafkascale finds by itself and grows "+
						"with the sources; remove it from source_topics and sink_topics.", s))
			}
		}
	}
}

// ModifyPlan reads the app and plans its expansion, so that `terraform
// plan` shows the steps, or refuses with the reason before anything
// changes.
func (r *StreamsAppResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy: nothing changes on the cluster
	}
	var plan streamsAppModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var state *streamsAppModel
	if !req.State.Raw.IsNull() {
		state = &streamsAppModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	var userFixed types.Set
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("fixed_internal_topics"), &userFixed)...)
	if resp.Diagnostics.HasError() || r.data == nil || r.data.kafka == nil {
		return
	}
	if plan.ApplicationID.IsUnknown() || plan.Partitions.IsUnknown() || plan.SourceTopics.IsUnknown() || plan.SinkTopics.IsUnknown() || userFixed.IsUnknown() {
		if userFixed.IsNull() {
			plan.FixedInternalTopics = types.SetUnknown(types.StringType)
		}
		plan.InternalTopics = types.ListUnknown(types.StringType)
		plan.ExpansionOrder = types.ListUnknown(types.StringType)
		plan.Protocol = types.StringUnknown()
		plan.SettledPartitions = types.Int64Unknown()
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	x, snap, diags := r.plan(ctx, &plan, userFixed, state, req.Private, true)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	plan.ID = plan.ApplicationID
	plan.FixedInternalTopics = fixedTopicsValue(userFixed, x)
	if len(x.Steps) > 0 || state == nil {
		warnFixedByCount(x, &resp.Diagnostics)
	}
	plan.InternalTopics = stringList(snap.App.InternalTopics())
	plan.Protocol = types.StringValue(string(snap.App.Protocol))
	// With nothing to do, the last expansion's steps stay as they are, so
	// that a settled app plans no change.
	plan.ExpansionOrder = stringList(x.Lines())
	if len(x.Steps) == 0 && state != nil && !state.ExpansionOrder.IsNull() {
		plan.ExpansionOrder = state.ExpansionOrder
	}
	settled := types.Int64Value(int64(x.From))
	if state != nil {
		settled = state.SettledPartitions
	}
	if len(x.Steps) > 0 {
		settled = plan.Partitions
	}
	plan.SettledPartitions = settled
	if len(x.Steps) > 0 {
		resp.Diagnostics.AddWarning(fmt.Sprintf("Streams app %s grows from %d to %d partitions", x.App, x.From, x.To),
			"The apply runs these steps, in order:\n"+strings.Join(x.Lines(), "\n"))
		r.data.warnOrphanedThrottles(ctx, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// plan describes the app and asks the engine for its expansion to the
// planned count. Problems come back as diagnostics on the attribute they
// are about.
//
// atPlan lets a downstream app that has not grown yet pass with a warning:
// its own resource may grow it earlier in the same apply. The apply checks
// again and refuses.
//
// snapshot, when given (at plan time), is where the last refresh saved the
// app: Terraform plans a resource again during the apply, after the
// resources it depends on have changed the cluster, and that second plan
// must show what the first one did.
//
// It returns the app as it planned from.
//
// userFixed is fixed_internal_topics as configured (null: find them all).
func (r *StreamsAppResource) plan(ctx context.Context, m *streamsAppModel, userFixed types.Set, state *streamsAppModel, snapshot privateGetter, atPlan bool) (engine.StreamsExpansion, streamsSnapshot, diag.Diagnostics) {
	var diags diag.Diagnostics
	declared, d := declaredTopics(ctx, m)
	diags.Append(d...)
	fixed, d := stringSet(ctx, userFixed)
	diags.Append(d...)
	if diags.HasError() {
		return engine.StreamsExpansion{}, streamsSnapshot{}, diags
	}
	id := m.ApplicationID.ValueString()
	snap, found := loadStreamsSnapshot(ctx, snapshot)
	if !found || snap.App.ID != id || !snap.Declared.Equal(declared) {
		var err error
		if snap, err = r.describe(ctx, id, declared); err != nil {
			diags.Append(kafkaError("read Streams app "+id+" and its group", err))
			return engine.StreamsExpansion{}, snap, diags
		}
	}
	req := engine.StreamsExpansionRequest{
		App:                snap.App,
		Target:             int32(m.Partitions.ValueInt64()),
		StaticPartitioning: m.StaticPartitioning.ValueBool(),
		Quiesce:            m.Quiesce != nil,
		Others:             snap.Others,
		DownstreamLater:    atPlan,
		Fixed:              fixed,
	}
	if state != nil && !state.SettledPartitions.IsNull() && !state.SettledPartitions.IsUnknown() {
		req.Settled = int32(state.SettledPartitions.ValueInt64())
	}
	x, err := engine.PlanStreamsExpansion(req, m.OnExpansionURL.ValueString() != "")
	if err != nil {
		diags.Append(streamsPlanDiagnostics(id, err)...)
	}
	for _, w := range x.Warnings {
		diags.AddAttributeWarning(path.Root("sink_topics"), "Downstream Streams app must grow first",
			fmt.Sprintf("Streams app %s: %v.\n\nThe apply checks again before it changes anything, and stops if the "+
				"downstream app has not grown by then.", id, w))
	}
	return x, snap, diags
}

// describe reads the app, its group and the other Streams apps.
func (r *StreamsAppResource) describe(ctx context.Context, id string, declared kafka.StreamsAppTopics) (streamsSnapshot, error) {
	app, others, err := r.data.kafka.DescribeStreamsApp(ctx, id, declared)
	return streamsSnapshot{Declared: declared, App: app, Others: others}, err
}

func declaredTopics(ctx context.Context, m *streamsAppModel) (kafka.StreamsAppTopics, diag.Diagnostics) {
	var t kafka.StreamsAppTopics
	var diags, d diag.Diagnostics
	t.Sources, d = stringSet(ctx, m.SourceTopics)
	diags.Append(d...)
	t.Sinks, d = stringSet(ctx, m.SinkTopics)
	diags.Append(d...)
	return t, diags
}

// fixedTopicsValue is fixed_internal_topics as planned: the configured
// value, or, unset, every fixed topic the engine found.
func fixedTopicsValue(configured types.Set, x engine.StreamsExpansion) types.Set {
	if !configured.IsNull() {
		return configured
	}
	return stringSetValue(x.FixedNames())
}

// warnFixedByCount says, in the plan, which topics kafkascale judged fixed
// by their count alone, since no topology told it.
func warnFixedByCount(x engine.StreamsExpansion, diags *diag.Diagnostics) {
	var lines []string
	for _, f := range x.Fixed {
		if f.By == engine.FixedByCount {
			lines = append(lines, fmt.Sprintf("- %s (%d partitions): %s", f.Name, f.Partitions, f.Why))
		}
	}
	if len(lines) == 0 {
		return
	}
	diags.AddAttributeWarning(path.Root("fixed_internal_topics"), "Internal topics judged fixed by their partition count",
		fmt.Sprintf("Streams app %s: kafkascale leaves these internal topics at their counts, since they differ from the "+
			"sources' %d partitions:\n%s\n\nIf one of them should follow the sources, it is left over from an expansion "+
			"kafkascale did not record: grow it to the sources' count by hand while the app is stopped.", x.App, x.From, strings.Join(lines, "\n")))
}

// streamsPlanDiagnostics turns the engine's refusal into one diagnostic per
// problem, on the attribute the problem is about.
func streamsPlanDiagnostics(app string, err error) diag.Diagnostics {
	var diags diag.Diagnostics
	attr := map[engine.StreamsField]string{
		engine.FieldApp: "application_id", engine.FieldSources: "source_topics", engine.FieldSinks: "sink_topics",
		engine.FieldPartitions: "partitions", engine.FieldStatic: "static_partitioning", engine.FieldQuiesce: "quiesce",
		engine.FieldFixed: "fixed_internal_topics",
	}
	var ie *engine.InputError
	if !errors.As(err, &ie) {
		diags.AddError("Cannot plan the Streams expansion", fmt.Sprintf("Planning the expansion of %s failed: %v. %s", app, err, bugReport))
		return diags
	}
	for _, p := range ie.Problems {
		at := "partitions"
		var sp *engine.StreamsProblem
		if errors.As(p, &sp) {
			at = attr[sp.Field]
		}
		diags.AddAttributeError(path.Root(at), "Streams expansion refused",
			fmt.Sprintf("Streams app %s: %v.\n\nNothing was changed on the cluster.", app, p))
	}
	return diags
}

func (r *StreamsAppResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan streamsAppModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var userFixed types.Set
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("fixed_internal_topics"), &userFixed)...)
	if resp.Diagnostics.HasError() {
		return
	}
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
	if resp.Diagnostics.HasError() {
		return
	}
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
		run, d := r.runner(ctx, plan, snap.App)
		diags.Append(d...)
		if diags.HasError() {
			return
		}
		tflog.Info(ctx, "expanding Streams app", map[string]any{"application_id": x.App, "from": x.From, "to": x.To, "steps": strings.Join(x.Lines(), "; ")})
		if err := run.Run(ctx, x); err != nil {
			diags.Append(streamsRunDiagnostic(x, err)...)
			r.recordTruth(ctx, plan, settled, nil, out, private, diags)
			return
		}
		r.data.clearOrphanedThrottles(ctx, diags)
	}
	// What the plan promised, so that the result matches it.
	settled = int64(x.To)
	if !plan.SettledPartitions.IsUnknown() && !plan.SettledPartitions.IsNull() {
		settled = plan.SettledPartitions.ValueInt64()
	}
	if plan.ExpansionOrder.IsUnknown() {
		plan.ExpansionOrder = stringList(x.Lines())
	}
	read := &snap // nothing changed: the app as planned is the app as it is
	if len(x.Steps) > 0 {
		read = nil
	}
	r.recordTruth(ctx, plan, settled, read, out, private, diags)
}

// runner wires the engine's runner to Kafka, the quiesce commands and the
// endpoint.
func (r *StreamsAppResource) runner(ctx context.Context, m *streamsAppModel, app engine.StreamsApp) (executor.StreamsRun, diag.Diagnostics) {
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
		Grow: executor.New(executor.Deps{Kafka: r.data.kafka.Port(), Placer: r.data.kafka.Port(), Log: tflogLogger{}, Lease: r.data.lease},
			executor.Settings{}),
		Resource: fmt.Sprintf("kafkascale_streams_app %q", m.ApplicationID.ValueString()),
	}
	if m.Quiesce != nil {
		q := &platform.QuiesceCommands{ApplicationID: m.ApplicationID.ValueString(), Logger: tflogFunc}
		diags.Append(m.Quiesce.Stop.ElementsAs(ctx, &q.Stop, false)...)
		diags.Append(m.Quiesce.Start.ElementsAs(ctx, &q.Start, false)...)
		run.Quiesce = q
	}
	if u := m.OnExpansionURL.ValueString(); u != "" {
		run.Notifier = webhookNotifier{w: &platform.Webhook{URL: u, Logger: tflogFunc}}
	}
	return run, diags
}

// streamsPermissions are what an expansion needs: ALTER on every topic it
// grows, and DESCRIBE on the group to wait for it.
func streamsPermissions(x engine.StreamsExpansion) []kafka.Permission {
	need := append([]kafka.Permission{{Kind: kafka.ResourceGroup, Name: x.App, Operation: kafka.OpDescribe, Why: "to wait until the app is stable"}}, leasePermissions()...)
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
	App      engine.StreamsApp      `json:"app"`
	Others   []engine.StreamsApp    `json:"others,omitempty"`
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

func streamsRunDiagnostic(x engine.StreamsExpansion, err error) diag.Diagnostics {
	var diags diag.Diagnostics
	if d, ok := leaseDiagnostic(fmt.Sprintf("expand Streams app %s from %d to %d partitions", x.App, x.From, x.To), err); ok {
		diags.Append(d)
		return diags
	}
	var se *executor.StreamsStepError
	done := ""
	if errors.As(err, &se) && len(se.Done) > 0 {
		var lines []string
		for i, s := range se.Done {
			lines = append(lines, fmt.Sprintf("%d. %s", i+1, s))
		}
		done = "\n\nDone before the failure:\n" + strings.Join(lines, "\n")
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
		snap, err := r.describe(rctx, m.ApplicationID.ValueString(), declared)
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
	diags.Append(out.Set(rctx, m)...)
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
	id := m.ApplicationID.ValueString()
	snap, err := r.describe(ctx, id, declared)
	if err != nil {
		resp.Diagnostics.Append(kafkaError("read Streams app "+id, err))
		return
	}
	if len(declared.Sources) == 0 && snap.App.Consumed != nil {
		// Imported: the group tells what it consumes; read the app again
		// with those sources, which give its partition count.
		declared.Sources = snap.App.Consumed
		m.SourceTopics = stringSetValue(declared.Sources)
		if snap, err = r.describe(ctx, id, declared); err != nil {
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
	if m.FixedInternalTopics.IsNull() {
		// Imported: what the engine finds, as a plan would show it.
		settled := int32(0)
		if !m.SettledPartitions.IsNull() {
			settled = int32(m.SettledPartitions.ValueInt64())
		}
		m.FixedInternalTopics = stringSetValue(engine.FixedTopicNames(engine.FixedInternalTopics(app, nil, settled, n)))
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
