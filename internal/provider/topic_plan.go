package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

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
	if state != nil {
		// Terraform plans a replacement twice: with this state, then as a
		// create without it. The create must not mistake the topic it
		// replaces for one made outside Terraform.
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, topicReplacesKey, mustJSON(state.Name.ValueString()))...)
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
	if !checkMinInsync(name, configs, rf, &resp.Diagnostics) {
		return
	}
	rfChange := !creating && int64(rf) != state.ReplicationFactor.ValueInt64()
	grows := !creating && int64(partitions) > state.Partitions.ValueInt64()
	configChange := !creating && !plan.Config.Equal(state.Config)

	change := topicChange{name: name, create: creating, grow: grows, replicationFactor: rfChange || pending, config: configChange}
	if !warnPermissions(ctx, kc, change.permissions(), "change topic "+name, change.attribute, &resp.Diagnostics) {
		return
	}
	if creating || rfChange {
		if !r.checkBrokerCount(ctx, name, rf, &resp.Diagnostics) {
			return
		}
	}
	switch {
	case creating:
		if !r.validateCreate(ctx, req.Private, name, partitions, rf, configs, &resp.Diagnostics) {
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
	if grows && !r.checkGrowth(ctx, plan, int(state.Partitions.ValueInt64()), &resp.Diagnostics) {
		return
	}
	if creating || rfChange || grows || configChange || pending {
		r.data.warnOrphanedThrottles(ctx, &resp.Diagnostics)
	}
	if rfChange || pending {
		r.previewReplicationFactor(ctx, name, int(state.ReplicationFactor.ValueInt64()), rf, topicThrottle(plan), &resp.Diagnostics)
	}
}

// validateCreate asks Kafka whether it would create the topic. A topic
// already there is one made outside Terraform, unless this plan is the
// create half of its replacement.
func (r *TopicResource) validateCreate(ctx context.Context, private privateGetter, name string, partitions, rf int, configs map[string]string, diags *diag.Diagnostics) bool {
	err := r.data.kafka.ValidateCreateTopic(ctx, name, partitions, rf, configs)
	if te, ok := kafka.TopicErrorOf(err); ok && te.Kind() == kafka.TopicErrorExists {
		// A replacement plans its create while the old topic still
		// exists; any other topic there was made outside Terraform.
		if replaces(ctx, private) != name {
			diags.Append(r.topicExists(ctx, name, partitions, rf, configs))
			return false
		}
		err = nil
	}
	if err != nil {
		diags.Append(topicKafkaError(fmt.Sprintf("validate the creation of topic %s", name), err)...)
		return false
	}
	return true
}

// checkGrowth asks Kafka whether the topic may grow from its from
// partitions to the plan's, refuses the growth of a topic a Streams app
// reads, and warns before a keyed topic grows.
func (r *TopicResource) checkGrowth(ctx context.Context, plan topicResourceModel, from int, diags *diag.Diagnostics) bool {
	name, to := plan.Name.ValueString(), int(plan.Partitions.ValueInt64())
	if err := r.data.kafka.ValidateCreatePartitions(ctx, kafka.NewPartitions{Topic: name, Count: to}); err != nil {
		diags.Append(topicKafkaError(fmt.Sprintf("validate the growth of topic %s to %d partitions", name, to), err)...)
		return false
	}
	if !r.checkTopicConsumers(ctx, name, int64(from), int64(to), true, diags) {
		return false
	}
	if !plan.StaticPartitioning.ValueBool() {
		r.warnIfKeyed(ctx, name, from, to, diags)
	}
	return true
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

// checkBrokerCount refuses a replication factor above the live brokers
// (engine.CheckBrokerCount).
func (r *TopicResource) checkBrokerCount(ctx context.Context, name string, rf int, diags *diag.Diagnostics) bool {
	regs, err := r.data.kafka.Registrations(ctx)
	if err != nil {
		diags.Append(kafkaError("count the brokers", err))
		return false
	}
	var live []int32
	for _, b := range regs {
		if !b.Fenced {
			live = append(live, b.ID)
		}
	}
	var bc *engine.BrokerCountError
	if !errors.As(engine.CheckBrokerCount(name, rf, live), &bc) {
		return true
	}
	diags.Append(brokerCountDiagnostic(bc))
	return false
}

func brokerCountDiagnostic(bc *engine.BrokerCountError) diag.Diagnostic {
	n := len(bc.Live)
	return diag.NewAttributeErrorDiagnostic(path.Root("replication_factor"), "Replication factor above the broker count",
		fmt.Sprintf("replication_factor %d needs %d brokers, one per replica, but the cluster has %d live broker(s) (%s).\n\n"+
			"Lower replication_factor to at most %d, or add brokers first (kafkascale_cluster.broker_count).",
			bc.ReplicationFactor, bc.ReplicationFactor, n, joinInts(bc.Live, ", "), n))
}

// topicReplacesKey is the private-state key under which the plan of an
// existing topic records its name, for the create half of a replacement.
const topicReplacesKey = "replaces"

// replaces is the topic whose replacement this plan is, or "".
func replaces(ctx context.Context, private privateGetter) string {
	raw, diags := private.GetKey(ctx, topicReplacesKey)
	var name string
	if diags.HasError() || len(raw) == 0 || json.Unmarshal(raw, &name) != nil {
		return ""
	}
	return name
}

// checkMinInsync refuses a min.insync.replicas above the replication
// factor (engine.CheckMinInsync).
func checkMinInsync(name string, configs map[string]string, rf int, diags *diag.Diagnostics) bool {
	var mi *engine.MinInsyncError
	if !errors.As(engine.CheckMinInsync(name, configs, rf), &mi) {
		return true
	}
	diags.AddAttributeError(path.Root("config").AtMapKey(engine.ConfigMinInsyncReplicas), "min.insync.replicas above the replication factor",
		fmt.Sprintf("While attempting to plan the topic, min.insync.replicas is %d but replication_factor is %d: a partition "+
			"never has more in-sync replicas than replicas, so every write with acks=all (the default of producers since "+
			"Kafka 3.0) would fail with NOT_ENOUGH_REPLICAS. Kafka itself accepts the setting.\n\n"+
			"Set min.insync.replicas to at most %d (one less than replication_factor lets one broker be down), or raise "+
			"replication_factor.", mi.MinInsync, mi.ReplicationFactor, mi.ReplicationFactor))
	return false
}
