package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

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
			if _, internal := streams.InternalTopicRole(id, s, nil); internal {
				resp.Diagnostics.AddAttributeError(path.Root("source_topics"), "Internal topic listed",
					fmt.Sprintf("Topic %q is one of the app's internal topics, which kafkascale finds by itself and grows "+
						"with the sources; remove it from source_topics and sink_topics.", s))
			}
		}
	}
	ids := map[string]bool{}
	if knownString(m.ApplicationID) {
		ids[m.ApplicationID.ValueString()] = true
	}
	for i, c := range m.CoExpand {
		at := path.Root("co_expand").AtListIndex(i)
		if q := c.Quiesce; q != nil {
			for name, v := range map[string]types.List{"stop": q.Stop, "start": q.Start} {
				if v.IsNull() {
					resp.Diagnostics.AddAttributeError(at.AtName("quiesce").AtName(name), "Missing quiesce command",
						fmt.Sprintf("co_expand[%d].quiesce.%s is required in the quiesce block: kafkascale stops the app, grows "+
							"the topics and starts it again, so it needs both commands.", i, name))
				}
			}
		}
		if !knownString(c.ApplicationID) {
			continue
		}
		id := c.ApplicationID.ValueString()
		if ids[id] {
			resp.Diagnostics.AddAttributeError(at.AtName("application_id"), "Streams app declared twice",
				fmt.Sprintf("Streams app %q is this resource's application_id or another co_expand block's. Declare each app "+
					"of the expansion once.", id))
		}
		ids[id] = true
		cs, _ := stringSet(ctx, c.SourceTopics)
		ck, _ := stringSet(ctx, c.SinkTopics)
		for _, s := range ck {
			if slices.Contains(cs, s) {
				resp.Diagnostics.AddAttributeError(at.AtName("sink_topics"), "Topic both source and sink",
					fmt.Sprintf("Topic %q is in co_expand[%d]'s source_topics and sink_topics. A topic the app consumes is a "+
						"source; remove it from sink_topics.", s, i))
			}
		}
		for _, s := range append(cs, ck...) {
			if _, internal := streams.InternalTopicRole(id, s, nil); internal {
				resp.Diagnostics.AddAttributeError(at.AtName("source_topics"), "Internal topic listed",
					fmt.Sprintf("Topic %q is one of %s's internal topics, which kafkascale finds by itself and grows with the "+
						"sources; remove it from co_expand[%d]'s source_topics and sink_topics.", s, id, i))
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
	if q := plan.Quiesce; q != nil {
		checkCommand(ctx, q.Stop, path.Root("quiesce").AtName("stop"), "quiesce.stop", &resp.Diagnostics)
		checkCommand(ctx, q.Start, path.Root("quiesce").AtName("start"), "quiesce.start", &resp.Diagnostics)
	}
	unknown := false
	for i, c := range plan.CoExpand {
		if q := c.Quiesce; q != nil {
			at := path.Root("co_expand").AtListIndex(i).AtName("quiesce")
			checkCommand(ctx, q.Stop, at.AtName("stop"), fmt.Sprintf("co_expand[%d].quiesce.stop", i), &resp.Diagnostics)
			checkCommand(ctx, q.Start, at.AtName("start"), fmt.Sprintf("co_expand[%d].quiesce.start", i), &resp.Diagnostics)
		}
		unknown = unknown || c.ApplicationID.IsUnknown() || c.SourceTopics.IsUnknown() || c.SinkTopics.IsUnknown() || c.FixedInternalTopics.IsUnknown()
	}
	if resp.Diagnostics.HasError() {
		return
	}
	if unknown || plan.ApplicationID.IsUnknown() || plan.Partitions.IsUnknown() || plan.SourceTopics.IsUnknown() || plan.SinkTopics.IsUnknown() || userFixed.IsUnknown() {
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
	// The write-only endpoints decide whether the steps call them; they
	// are read into a copy, never into the plan.
	hooked := plan
	hooked.CoExpand = slices.Clone(plan.CoExpand)
	resp.Diagnostics.Append(writeOnlyHooks(ctx, req.Config, &hooked)...)
	x, snap, diags := r.plan(ctx, &hooked, userFixed, state, req.Private, true)
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
	plan.ExpansionOrder = stringList(streamsPlanLines(x.Steps))
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
		what := "Streams app " + x.App + " grows"
		if len(x.Apps) > 1 {
			what = "Streams apps " + strings.Join(x.AppIDs(), ", ") + " grow"
		}
		resp.Diagnostics.AddWarning(fmt.Sprintf("%s from %d to %d partitions", what, x.From, x.To),
			"The apply runs these steps, in order:\n"+strings.Join(streamsPlanLines(x.Steps), "\n"))
		for _, w := range x.GroupWarnings {
			resp.Diagnostics.AddAttributeWarning(path.Root("partitions"), "A consumer group reads a growing topic", w)
		}
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
func (r *StreamsAppResource) plan(ctx context.Context, m *streamsAppModel, userFixed types.Set, state *streamsAppModel, snapshot privateGetter, atPlan bool) (streams.Expansion, streamsSnapshot, diag.Diagnostics) {
	var diags diag.Diagnostics
	declared, d := declaredTopics(ctx, m)
	diags.Append(d...)
	fixed, d := stringSet(ctx, userFixed)
	diags.Append(d...)
	if diags.HasError() {
		return streams.Expansion{}, streamsSnapshot{}, diags
	}
	id := m.ApplicationID.ValueString()
	co, d := coDeclared(ctx, m)
	diags.Append(d...)
	if diags.HasError() {
		return streams.Expansion{}, streamsSnapshot{}, diags
	}
	snap, found := loadStreamsSnapshot(ctx, snapshot)
	if !found || !snap.matches(id, declared, co) {
		var err error
		if snap, err = r.describe(ctx, id, declared, co); err != nil {
			diags.Append(kafkaError("read Streams app "+id+" and its group", err))
			return streams.Expansion{}, snap, diags
		}
	}
	req := streams.ExpansionRequest{
		App:                snap.App,
		Target:             int32(m.Partitions.ValueInt64()),
		StaticPartitioning: m.StaticPartitioning.ValueBool(),
		Quiesce:            m.Quiesce != nil,
		Others:             snap.Others,
		Groups:             snap.Groups,
		DownstreamLater:    atPlan,
		Fixed:              fixed,
	}
	for i, c := range m.CoExpand {
		cfixed, d := stringSet(ctx, c.FixedInternalTopics)
		diags.Append(d...)
		req.CoExpand = append(req.CoExpand, streams.CoApp{App: snap.CoExpand[i].App, Quiesce: c.Quiesce != nil, Notify: orWriteOnly(c.OnExpansionURLWO, c.OnExpansionURL) != "", Fixed: cfixed})
	}
	if state != nil && !state.SettledPartitions.IsNull() && !state.SettledPartitions.IsUnknown() {
		req.Settled = int32(state.SettledPartitions.ValueInt64())
	}
	x, err := streams.PlanExpansion(req, orWriteOnly(m.OnExpansionURLWO, m.OnExpansionURL) != "")
	if err != nil {
		diags.Append(streamsPlanDiagnostics(id, coIDs(co), err)...)
	}
	for _, w := range x.Warnings {
		streamsDownstreamWarning(id, len(co) > 0, w, &diags)
	}
	return x, snap, diags
}

// describe reads the app, the apps it co-expands, their groups, the other
// Streams apps and the plain consumer groups, in one read.
func (r *StreamsAppResource) describe(ctx context.Context, id string, declared kafka.StreamsAppTopics, co []kafka.DeclaredStreamsApp) (streamsSnapshot, error) {
	read, err := r.data.kafka.DescribeStreamsApps(ctx, append([]kafka.DeclaredStreamsApp{{ID: id, Topics: declared}}, co...))
	if err != nil {
		return streamsSnapshot{Declared: declared, App: streams.App{ID: id}}, err
	}
	snap := streamsSnapshot{Declared: declared, App: read.Declared[0], Others: read.Others, Groups: read.Groups}
	for i, c := range co {
		snap.CoExpand = append(snap.CoExpand, streamsSnapshotApp{Declared: c, App: read.Declared[i+1]})
	}
	return snap, nil
}

// coDeclared are the co_expand apps as declared, in order.
func coDeclared(ctx context.Context, m *streamsAppModel) ([]kafka.DeclaredStreamsApp, diag.Diagnostics) {
	var out []kafka.DeclaredStreamsApp
	var diags, d diag.Diagnostics
	for _, c := range m.CoExpand {
		a := kafka.DeclaredStreamsApp{ID: c.ApplicationID.ValueString()}
		a.Topics.Sources, d = stringSet(ctx, c.SourceTopics)
		diags.Append(d...)
		a.Topics.Sinks, d = stringSet(ctx, c.SinkTopics)
		diags.Append(d...)
		out = append(out, a)
	}
	return out, diags
}

func coIDs(co []kafka.DeclaredStreamsApp) []string {
	out := make([]string, len(co))
	for i, c := range co {
		out[i] = c.ID
	}
	return out
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
func fixedTopicsValue(configured types.Set, x streams.Expansion) types.Set {
	if !configured.IsNull() {
		return configured
	}
	return stringSetValue(x.FixedNames())
}

// warnFixedByCount says, in the plan, which topics kafkascale judged fixed
// by their count alone, since no topology told it.
func warnFixedByCount(x streams.Expansion, diags *diag.Diagnostics) {
	var lines []string
	for _, f := range x.Fixed {
		if f.By == streams.FixedByCount {
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
