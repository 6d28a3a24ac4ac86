package provider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

var (
	_ resource.Resource                   = &TopicResource{}
	_ resource.ResourceWithConfigure      = &TopicResource{}
	_ resource.ResourceWithImportState    = &TopicResource{}
	_ resource.ResourceWithModifyPlan     = &TopicResource{}
	_ resource.ResourceWithValidateConfig = &TopicResource{}
)

// Default timeouts of kafkascale_topic. A replication factor change copies
// every partition's data under a throttle, so an update may take hours.
const (
	defaultTopicCreateTimeout = 10 * time.Minute
	defaultTopicUpdateTimeout = 6 * time.Hour
	defaultTopicDeleteTimeout = 10 * time.Minute
)

// topicPendingKey is the private-state key naming an unfinished replication
// factor change of the topic (its operation key), kept until it completes.
const topicPendingKey = "pending_replication_factor_change"

// topicNamePattern is what Kafka accepts in a topic name.
var topicNamePattern = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// kafkascaleTopicConfigs are the topic configs kafkascale sets itself while
// it reassigns replicas; they are never drift and never the user's to set.
var kafkascaleTopicConfigs = []string{kafka.ConfigLeaderThrottledReplicas, kafka.ConfigFollowerThrottledReplicas}

// NewTopicResource is the constructor the provider registers.
func NewTopicResource() resource.Resource { return &TopicResource{} }

// TopicResource owns one topic: its partition count, replication factor and
// its own configs.
type TopicResource struct {
	data *providerData
}

type topicResourceModel struct {
	ID                 types.String   `tfsdk:"id"`
	Name               types.String   `tfsdk:"name"`
	Partitions         types.Int64    `tfsdk:"partitions"`
	ReplicationFactor  types.Int64    `tfsdk:"replication_factor"`
	Config             types.Map      `tfsdk:"config"`
	StaticPartitioning types.Bool     `tfsdk:"static_partitioning"`
	Throttle           types.Int64    `tfsdk:"throttle"`
	DeletionProtection types.Bool     `tfsdk:"deletion_protection"`
	PendingOperation   types.String   `tfsdk:"pending_operation"`
	Timeouts           timeouts.Value `tfsdk:"timeouts"`
}

func (r *TopicResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_topic"
}

func (r *TopicResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = topicResourceSchema(ctx)
}

func (r *TopicResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	data, ok := req.ProviderData.(*providerData)
	if !ok {
		resp.Diagnostics.Append(unexpectedProviderData(req.ProviderData))
		return
	}
	r.data = data
}

// ValidateConfig refuses the configs kafkascale owns.
func (r *TopicResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var cfg topicResourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() || cfg.Config.IsNull() || cfg.Config.IsUnknown() {
		return
	}
	for k := range cfg.Config.Elements() {
		for _, own := range kafkascaleTopicConfigs {
			if k == own {
				resp.Diagnostics.AddAttributeError(path.Root("config").AtMapKey(k), "Config managed by kafkascale",
					fmt.Sprintf("%s names the replicas a reassignment throttles. kafkascale sets and removes it while it moves "+
						"replicas, and ignores it when reading the topic; remove it from config.", k))
			}
		}
	}
}

// ModifyPlan refuses at plan time what Kafka would refuse at apply (a
// shrinking topic, a replication factor above the broker count, a config
// Kafka does not take) and the growth of a topic a Kafka Streams app reads,
// and warns before a keyed topic, or one a consumer group reads, grows.
func (r *TopicResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		var state topicResourceModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if !resp.Diagnostics.HasError() {
			r.checkDeletion(ctx, state, "Destroying", &resp.Diagnostics)
		}
		return
	}
	var plan topicResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var state *topicResourceModel
	if !req.State.Raw.IsNull() {
		state = &topicResourceModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	if state != nil && !plan.Name.Equal(state.Name) {
		// A new name replaces the topic: the new one is a creation, not a
		// change of the old one, and the old one is deleted.
		if r.checkDeletion(ctx, *state, "Renaming", &resp.Diagnostics); resp.Diagnostics.HasError() {
			return
		}
		state = nil
	}
	if state == nil && !plan.Name.IsUnknown() {
		plan.ID = plan.Name
	}
	// No change is unfinished after an apply, and one unfinished now
	// (state.PendingOperation) makes the plan an update that resumes or
	// cancels it, never a plan that says "No changes".
	plan.PendingOperation = types.StringNull()
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	pending := state != nil && !state.PendingOperation.IsNull() && !state.PendingOperation.IsUnknown()

	if state != nil && known(plan.Partitions) {
		if err := engine.CheckNoShrink(state.Name.ValueString(), int(state.Partitions.ValueInt64()), int(plan.Partitions.ValueInt64())); err != nil {
			resp.Diagnostics.Append(shrinkDiagnostic(err))
			return
		}
	}
	if r.data == nil || !known(plan.Partitions) || !known(plan.ReplicationFactor) || plan.Name.IsUnknown() || plan.Config.IsUnknown() {
		return // checked again at apply, once everything is known
	}

	kc := r.data.kafka
	name := plan.Name.ValueString()
	partitions, rf := int(plan.Partitions.ValueInt64()), int(plan.ReplicationFactor.ValueInt64())
	configs, diags := topicConfigMap(ctx, plan.Config)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	creating := state == nil
	rfChange := !creating && int64(rf) != state.ReplicationFactor.ValueInt64()
	grows := !creating && int64(partitions) > state.Partitions.ValueInt64()
	configChange := !creating && !plan.Config.Equal(state.Config)

	change := topicChange{name: name, create: creating, grow: grows, replicationFactor: rfChange || pending, config: configChange}
	if !warnPermissions(ctx, kc, change.permissions(), "change topic "+name, change.attribute, &resp.Diagnostics) {
		return
	}
	if creating || rfChange {
		if !r.checkBrokerCount(ctx, rf, &resp.Diagnostics) {
			return
		}
	}
	switch {
	case creating:
		err := kc.ValidateCreateTopic(ctx, name, partitions, rf, configs)
		if te, ok := kafka.TopicErrorOf(err); ok && te.Kind() == kafka.TopicErrorExists {
			// A replacement plans its create while the old topic still
			// exists; a topic created outside Terraform is reported by the
			// apply, with how to import it.
			err = nil
		}
		if err != nil {
			resp.Diagnostics.Append(topicKafkaError(fmt.Sprintf("validate the creation of topic %s", name), err)...)
			return
		}
	case configChange:
		prior, diags := topicConfigMap(ctx, state.Config)
		resp.Diagnostics.Append(diags...)
		set, del := configDelta(prior, configs)
		if err := kc.ValidateAlterTopicConfigs(ctx, name, set, del); err != nil {
			resp.Diagnostics.Append(topicKafkaError(fmt.Sprintf("validate the config change of topic %s", name), err)...)
			return
		}
	}
	if grows {
		if err := kc.ValidateCreatePartitions(ctx, kafka.NewPartitions{Topic: name, Count: partitions}); err != nil {
			resp.Diagnostics.Append(topicKafkaError(fmt.Sprintf("validate the growth of topic %s to %d partitions", name, partitions), err)...)
			return
		}
		if !r.checkTopicConsumers(ctx, name, state.Partitions.ValueInt64(), int64(partitions), true, &resp.Diagnostics) {
			return
		}
		if !plan.StaticPartitioning.ValueBool() {
			r.warnIfKeyed(ctx, name, int(state.Partitions.ValueInt64()), partitions, &resp.Diagnostics)
		}
	}
	if creating || rfChange || grows || configChange || pending {
		r.data.warnOrphanedThrottles(ctx, &resp.Diagnostics)
	}
	if rfChange || pending {
		r.previewReplicationFactor(ctx, name, int(state.ReplicationFactor.ValueInt64()), rf, topicThrottle(plan), &resp.Diagnostics)
	}
}

// checkDeletion refuses a plan that deletes a topic under
// deletion_protection, and otherwise warns with what the deletion loses.
// how says what deletes it: "Destroying", "Renaming".
func (r *TopicResource) checkDeletion(ctx context.Context, state topicResourceModel, how string, diags *diag.Diagnostics) {
	name := state.Name.ValueString()
	if state.DeletionProtection.ValueBool() {
		diags.AddAttributeError(path.Root("deletion_protection"), "Topic "+name+" is protected from deletion",
			fmt.Sprintf("%s the kafkascale_topic would delete topic %s and its data, and deletion_protection = true refuses "+
				"that. To delete it, set deletion_protection = false and apply first.", how, name))
		return
	}
	if r.data == nil {
		return
	}
	d, err := r.data.kafka.DescribeTopicData(ctx, name)
	if err != nil {
		tflog.Warn(ctx, "could not read how much data the topic holds", map[string]any{"topic": name, "error": err.Error()})
		return
	}
	if d.Bytes > 0 || d.Records > 0 {
		diags.AddWarning(fmt.Sprintf("Topic %s and its data will be deleted", name),
			fmt.Sprintf("%s the kafkascale_topic deletes topic %s with %d bytes in %d records (the largest replica of each "+
				"partition; a compacted topic holds at most that many records). Set deletion_protection = true to refuse this.",
				how, name, d.Bytes, d.Records))
	}
}

func known(v types.Int64) bool { return !v.IsNull() && !v.IsUnknown() }

func topicThrottle(m topicResourceModel) int64 {
	if known(m.Throttle) {
		return m.Throttle.ValueInt64()
	}
	return defaultInitialThrottle
}

// checkBrokerCount refuses a replication factor above the live brokers.
func (r *TopicResource) checkBrokerCount(ctx context.Context, rf int, diags *diag.Diagnostics) bool {
	regs, err := r.data.kafka.Registrations(ctx)
	if err != nil {
		diags.Append(kafkaError("count the brokers", err))
		return false
	}
	var live []string
	for _, b := range regs {
		if !b.Fenced {
			live = append(live, fmt.Sprint(b.ID))
		}
	}
	if rf > len(live) {
		diags.AddAttributeError(path.Root("replication_factor"), "Replication factor above the broker count",
			fmt.Sprintf("replication_factor %d needs %d brokers, one per replica, but the cluster has %d live broker(s) (%s).\n\n"+
				"Lower replication_factor to at most %d, or add brokers first (kafkascale_cluster.broker_count).",
				rf, rf, len(live), strings.Join(live, ", "), len(live)))
		return false
	}
	return true
}

// warnIfKeyed warns before a keyed topic grows: the default partitioner
// maps a key to murmur2(key) mod the partition count, so a new count sends
// existing keys elsewhere.
func (r *TopicResource) warnIfKeyed(ctx context.Context, name string, from, to int, diags *diag.Diagnostics) {
	kc := r.data.kafka
	var reason string
	d, ok, err := kc.Topics().Describe(ctx, name)
	if err == nil && ok {
		var ev kafka.KeyEvidence
		ev, err = kc.SampleKeys(ctx, name, kafka.IsCompacted(d.Effective["cleanup.policy"]))
		reason = ev.Reason()
		tflog.Debug(ctx, "sampled topic keys", map[string]any{"topic": name, "compacted": ev.Compacted,
			"sampled_partitions": ev.SampledPartitions, "keyed_partitions": len(ev.KeyedPartitions)})
	}
	if err != nil {
		reason = fmt.Sprintf("kafkascale could not read its records to tell (%v), so it assumes they may be", err)
	}
	if reason == "" {
		return // no key seen: a topic of unkeyed records grows safely
	}
	diags.AddAttributeWarning(path.Root("partitions"), "Growing a keyed topic moves keys to other partitions",
		fmt.Sprintf("Topic %s holds keyed records: %s.\n\n"+
			"Growing it from %d to %d partitions changes which partition the default partitioner sends each key to "+
			"(murmur2 of the key, modulo the partition count). New records of a key that already exists can land in a "+
			"different partition than its old records: consumers that keep state per key (Kafka Streams state stores, caches, "+
			"readers of a compacted topic) then see old keys in new partitions, their state no longer matches their input, and "+
			"the order of a key's records across the change is lost.\n\n"+
			"If every producer partitions statically (a key always goes to the partition it first went to, and only new keys "+
			"use the new partitions), set static_partitioning = true on this topic. For the topics of a Kafka Streams "+
			"application, expand them with kafkascale_streams_app instead.", name, reason, from, to))
}

func (r *TopicResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan topicResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.data == nil {
		resp.Diagnostics.Append(providerNotConfigured())
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultTopicCreateTimeout)
	resp.Diagnostics.Append(diags...)
	configs, diags := topicConfigMap(ctx, plan.Config)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	kc := r.data.kafka
	name := plan.Name.ValueString()
	partitions, rf := int(plan.Partitions.ValueInt64()), int(plan.ReplicationFactor.ValueInt64())
	change := topicChange{name: name, create: true}
	if !checkPermissions(ctx, kc, change.permissions(), "create topic "+name, change.attribute, &resp.Diagnostics) {
		return
	}

	pl, err := kc.BeginPlacement(ctx)
	if err != nil {
		resp.Diagnostics.Append(kafkaError("read the cluster to place topic "+name, err))
		return
	}
	for _, p := range pl.Cluster.Partitions {
		if p.Topic == name {
			// Placing it again would only fail on "partitions must grow":
			// say what the user is looking at, an existing topic.
			pl.Release()
			resp.Diagnostics.Append(r.topicExists(ctx, name, partitions, rf, configs))
			return
		}
	}
	placed, err := engine.PlacePartitions(pl.Cluster, name, partitions, rf, engine.DefaultOptions())
	if err != nil {
		pl.Release()
		resp.Diagnostics.Append(planDiagnostics(replicationFactorTarget(name, rf), err)...)
		return
	}
	err = pl.CreateTopic(ctx, name, placed, configs)
	pl.Release()
	if err != nil {
		if te, ok := kafka.TopicErrorOf(err); ok && te.Kind() == kafka.TopicErrorExists {
			resp.Diagnostics.Append(r.topicExists(ctx, name, partitions, rf, configs))
			return
		}
		resp.Diagnostics.Append(topicKafkaError("create topic "+name, err)...)
		return
	}
	kc.Topics().Forget(name)
	tflog.Info(ctx, "created topic", map[string]any{"topic": name, "partitions": partitions, "replication_factor": rf,
		"assignment": assignmentString(placed)})

	err = kc.AwaitTopicReady(ctx, name, partitions, rf)
	if err == nil {
		err = kc.AwaitTopicConfigs(ctx, name, configs, nil)
	}
	if err == nil {
		r.data.clearOrphanedThrottles(ctx, &resp.Diagnostics)
	}
	// The topic exists from here on: record it even if the wait failed (or
	// timed out), so Terraform tracks (and taints) it instead of losing it.
	rctx, rcancel := afterFailure(ctx)
	defer rcancel()
	r.refreshAfterApply(rctx, &plan, &resp.State, &resp.Diagnostics)
	if err != nil {
		resp.Diagnostics.AddError("Topic created but not ready",
			fmt.Sprintf("While waiting for the new topic %s to have a leader and a full ISR on every partition, the apply gave up: %v.\n\n"+
				"The topic exists and is in the state, marked tainted. Check that the brokers %s hold are running and in sync.",
				name, err, assignmentBrokers(placed)))
	}
}

func (r *TopicResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state topicResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.data == nil {
		resp.Diagnostics.Append(providerNotConfigured())
		return
	}
	name := state.Name.ValueString()
	d, ok, err := r.data.kafka.Topics().Describe(ctx, name)
	if err != nil {
		resp.Diagnostics.Append(kafkaError("read topic "+name, err))
		return
	}
	if !ok {
		tflog.Info(ctx, "topic no longer exists; removing it from the state", map[string]any{"topic": name})
		resp.State.RemoveResource(ctx)
		return
	}
	applied := state.ReplicationFactor
	resp.Diagnostics.Append(topicFromKafka(ctx, &state, d)...)
	if state.ReplicationFactor.ValueInt64() == 0 {
		resp.Diagnostics.AddAttributeWarning(path.Root("replication_factor"), "Partitions have different replication factors",
			fmt.Sprintf("The partitions of topic %s have %s replicas: a reassignment is running or was interrupted, or some "+
				"partitions were changed outside Terraform. replication_factor reads as 0, so the next apply brings every "+
				"partition to the configured value.", name, joinInts(d.ReplicationFactors(), " or ")))
	}
	suspect := len(d.ReplicationFactors()) != 1 || d.Configs[kafka.ConfigLeaderThrottledReplicas] != "" || d.Configs[kafka.ConfigFollowerThrottledReplicas] != ""
	r.keepPendingReplicationFactor(ctx, name, applied, suspect, &state, req.Private, resp.Private, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *TopicResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state topicResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.data == nil {
		resp.Diagnostics.Append(providerNotConfigured())
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultTopicUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	want, diags := topicConfigMap(ctx, plan.Config)
	resp.Diagnostics.Append(diags...)
	prior, diags := topicConfigMap(ctx, state.Config)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	kc := r.data.kafka
	name := state.Name.ValueString()
	rf := int(plan.ReplicationFactor.ValueInt64())
	defer kc.Topics().Forget(name)
	set, del := configDelta(prior, want)
	// An unfinished change is resumed or cancelled even when the factor
	// reads as configured.
	pending := !state.PendingOperation.IsNull() && !state.PendingOperation.IsUnknown()
	change := topicChange{name: name, config: len(set)+len(del) > 0, grow: plan.Partitions.ValueInt64() > state.Partitions.ValueInt64(),
		replicationFactor: int64(rf) != state.ReplicationFactor.ValueInt64() || pending}
	if !checkPermissions(ctx, kc, change.permissions(), "change topic "+name, change.attribute, &resp.Diagnostics) {
		return
	}
	// Checked again before anything changes: a Streams app that started
	// after the plan was made must not be broken by it.
	if change.grow && !r.checkTopicConsumers(ctx, name, state.Partitions.ValueInt64(), plan.Partitions.ValueInt64(), false, &resp.Diagnostics) {
		return
	}

	// Configs first: a lower min.insync.replicas must be in force before
	// the replication factor drops under the old one.
	if change.config {
		err := kc.AlterTopicConfigs(ctx, name, set, del)
		if err == nil {
			err = kc.AwaitTopicConfigs(ctx, name, set, del)
		}
		if err != nil {
			resp.Diagnostics.Append(topicKafkaError("change the configs of topic "+name, err)...)
			r.recordAfterFailure(ctx, &plan, &state, resp)
			return
		}
		tflog.Info(ctx, "changed topic configs", map[string]any{"topic": name, "set": sortedKeys(set), "deleted": strings.Join(del, ",")})
	}

	// Then the replication factor, so that new partitions are created
	// with the new one and nothing is copied twice.
	if change.replicationFactor {
		if !r.changeReplicationFactor(ctx, name, rf, topicThrottle(plan), resp) {
			r.recordAfterFailure(ctx, &plan, &state, resp)
			return
		}
	}

	if plan.Partitions.ValueInt64() > state.Partitions.ValueInt64() {
		if !r.growPartitions(ctx, name, int(plan.Partitions.ValueInt64()), rf, &resp.Diagnostics) {
			r.recordAfterFailure(ctx, &plan, &state, resp)
			return
		}
	}
	r.data.clearOrphanedThrottles(ctx, &resp.Diagnostics)
	r.refreshAfterApply(ctx, &plan, &resp.State, &resp.Diagnostics)
}

// recordAfterFailure writes what the cluster shows after a failed update,
// so the state tells the truth and the next plan shows what is left. A
// change of replication factor left unfinished keeps the old value.
func (r *TopicResource) recordAfterFailure(ctx context.Context, plan, state *topicResourceModel, resp *resource.UpdateResponse) {
	ctx, cancel := afterFailure(ctx)
	defer cancel()
	m := *plan
	var ds diag.Diagnostics
	r.refreshAfterApply(ctx, &m, &resp.State, &ds)
	if ds.HasError() {
		// Unreadable: keep the prior state, which Terraform already holds.
		resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
		return
	}
	raw, _ := resp.Private.GetKey(ctx, topicPendingKey)
	if len(raw) > 0 && m.ReplicationFactor.ValueInt64() != state.ReplicationFactor.ValueInt64() {
		m.ReplicationFactor = state.ReplicationFactor
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

// afterFailure gives the read that records the truth after a failed or
// timed-out apply a context of its own: the apply's may have ended.
func afterFailure(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), kafka.DefaultRequestTimeout)
}

// growPartitions adds partitions under the cluster's operation lease: it
// places replicas, so it must not run while another operation moves them.
func (r *TopicResource) growPartitions(ctx context.Context, name string, target, rf int, diags *diag.Diagnostics) bool {
	grown := false
	attempt := fmt.Sprintf("grow topic %s to %d partitions", name, target)
	w := executor.LeaseWork{Operation: newOperationID(), Resource: fmt.Sprintf("kafkascale_topic %q", name), What: attempt}
	err := r.data.lease.Hold(ctx, w, func(ctx context.Context, _ *executor.Held) error {
		grown = r.addPartitions(ctx, name, target, rf, diags)
		return nil
	})
	if err != nil {
		d, ok := leaseDiagnostic(attempt, err)
		if !ok {
			d = kafkaError(attempt, err)
		}
		diags.Append(d)
		return false
	}
	return grown
}

// addPartitions places the new partitions with the engine, sends them as
// an explicit assignment, and waits for their leaders and full ISRs.
func (r *TopicResource) addPartitions(ctx context.Context, name string, target, rf int, diags *diag.Diagnostics) bool {
	kc := r.data.kafka
	pl, err := kc.BeginPlacement(ctx)
	if err != nil {
		diags.Append(kafkaError("read the cluster to place the new partitions of "+name, err))
		return false
	}
	existing := 0
	for _, p := range pl.Cluster.Partitions {
		if p.Topic == name {
			existing++
		}
	}
	if target <= existing {
		pl.Release()
		if err := engine.CheckNoShrink(name, existing, target); err != nil {
			diags.Append(shrinkDiagnostic(err))
			return false
		}
		return true
	}
	added, err := engine.PlacePartitions(pl.Cluster, name, target, 0, engine.DefaultOptions())
	if err != nil {
		pl.Release()
		diags.Append(planDiagnostics(replicationFactorTarget(name, rf), err)...)
		return false
	}
	err = pl.CreatePartitions(ctx, name, added)
	pl.Release()
	if err != nil {
		diags.Append(topicKafkaError(fmt.Sprintf("grow topic %s from %d to %d partitions", name, existing, target), err)...)
		return false
	}
	tflog.Info(ctx, "added partitions", map[string]any{"topic": name, "from": existing, "to": target, "assignment": assignmentString(added)})
	if err := kc.AwaitTopicReady(ctx, name, target, 0); err != nil {
		diags.AddAttributeError(path.Root("partitions"), "New partitions not ready",
			fmt.Sprintf("Topic %s grew from %d to %d partitions, but while waiting for every new partition to have a leader and a "+
				"full ISR the apply gave up: %v.\n\nThe partitions exist (Kafka cannot take them back); check that brokers %s "+
				"are running and in sync, then apply again.", name, existing, target, err, assignmentBrokers(added)))
		return false
	}
	return true
}

func (r *TopicResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state topicResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.data == nil {
		resp.Diagnostics.Append(providerNotConfigured())
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, defaultTopicDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	kc := r.data.kafka
	name := state.Name.ValueString()
	if state.DeletionProtection.ValueBool() {
		resp.Diagnostics.AddAttributeError(path.Root("deletion_protection"), "Topic "+name+" is protected from deletion",
			"deletion_protection = true refuses to delete topic "+name+". To delete it, set deletion_protection = false and apply first.")
		return
	}
	defer kc.Topics().Forget(name)
	change := topicChange{name: name, destroy: true}
	if !checkPermissions(ctx, kc, change.permissions(), "delete topic "+name, change.attribute, &resp.Diagnostics) {
		return
	}
	if err := kc.DeleteTopic(ctx, name); err != nil {
		resp.Diagnostics.Append(topicKafkaError("delete topic "+name, err)...)
		return
	}
	if err := kc.AwaitTopicGone(ctx, name); err != nil {
		resp.Diagnostics.AddError("Topic deletion not confirmed",
			fmt.Sprintf("Kafka accepted the deletion of topic %s, but not every broker stopped listing it in time: %v.\n\n"+
				"Brokers finish a deletion on their own; run the destroy again to confirm.", name, err))
		return
	}
	r.forgetOperation(ctx, name, &resp.Diagnostics)
	tflog.Info(ctx, "deleted topic", map[string]any{"topic": name})
}

func (r *TopicResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !topicNamePattern.MatchString(req.ID) || len(req.ID) > 249 {
		resp.Diagnostics.AddError("Invalid topic name",
			fmt.Sprintf("%q is not a Kafka topic name. Import a topic by its name, such as `terraform import kafkascale_topic.orders orders`.", req.ID))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

// refreshAfterApply reads the topic afresh (not from the refresh batch) and
// records it with the plan's own settings.
func (r *TopicResource) refreshAfterApply(ctx context.Context, m *topicResourceModel, state stateSetter, diags *diag.Diagnostics) {
	name := m.Name.ValueString()
	got, err := r.data.kafka.DescribeTopics(ctx, []string{name})
	if err != nil {
		diags.Append(kafkaError("read topic "+name+" after the change", err))
		return
	}
	d, ok := got[name]
	if !ok {
		diags.AddError("Topic vanished", fmt.Sprintf("Topic %s was not found right after the apply changed it: someone deleted it meanwhile.", name))
		return
	}
	diags.Append(topicFromKafka(ctx, m, d)...)
	m.PendingOperation = types.StringNull()
	diags.Append(state.Set(ctx, m)...)
}

// topicExists explains a create of a topic the cluster already has, one
// that is not in the state (a newcomer's first step with an existing
// cluster): how to adopt it, and how it differs from the configuration.
func (r *TopicResource) topicExists(ctx context.Context, name string, partitions, rf int, configs map[string]string) diag.Diagnostic {
	var diffs []string
	d, ok, err := r.data.kafka.Topics().Describe(ctx, name)
	switch {
	case err != nil:
		diffs = append(diffs, fmt.Sprintf("(its settings could not be read: %v)", err))
	case ok:
		if n := len(d.Partitions); n != partitions {
			diffs = append(diffs, fmt.Sprintf("partitions: %d in the cluster, %d in the configuration", n, partitions))
		}
		if rfs := d.ReplicationFactors(); len(rfs) != 1 || rfs[0] != rf {
			diffs = append(diffs, fmt.Sprintf("replication_factor: %v in the cluster, %d in the configuration", rfs, rf))
		}
		for _, k := range slices.Sorted(maps.Keys(configs)) {
			if have, ok := d.Effective[k]; !ok || have != configs[k] {
				diffs = append(diffs, fmt.Sprintf("config %q: %q in the cluster, %q in the configuration", k, have, configs[k]))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(d.Configs)) {
			if _, set := configs[k]; !set && !isKafkascaleConfig(k) {
				diffs = append(diffs, fmt.Sprintf("config %q: %q set on the topic, not in the configuration", k, d.Configs[k]))
			}
		}
	}
	compared := "Its settings match the configuration, so an import plans no change."
	if len(diffs) > 0 {
		compared = "After an import, the next plan changes what differs:\n  - " + strings.Join(diffs, "\n  - ")
	}
	return diag.NewAttributeErrorDiagnostic(path.Root("name"), "Topic already exists",
		fmt.Sprintf("While attempting to create topic %s, it already existed in the cluster and is not in the Terraform state, "+
			"so kafkascale neither created nor changed it.\n\nTo manage the existing topic, adopt it with an import block "+
			"(Terraform 1.5+):\n\n  import {\n    to = <this resource's address>\n    id = %q\n  }\n\nor with "+
			"`terraform import <this resource's address> %s`. %s\n\nTo create a new topic instead, choose another name.",
			name, name, name, compared))
}
