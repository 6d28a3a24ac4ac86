package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
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
	Timeouts           timeouts.Value `tfsdk:"timeouts"`
}

func (r *TopicResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_topic"
}

func (r *TopicResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = topicResourceSchema(ctx)
}

func topicResourceSchema(ctx context.Context) schema.Schema {
	return schema.Schema{
		MarkdownDescription: "A Kafka topic. Every replica is placed explicitly by kafkascale's planner: rack-aware, on the " +
			"least-loaded brokers, preferred leaders spread. Raising `partitions` places the new partitions the same way and " +
			"waits for their leaders and full ISRs; Kafka cannot remove partitions, so lowering it is refused at plan time. " +
			"Changing `replication_factor` runs a throttled reassignment through the same resumable executor as " +
			"`kafkascale_cluster` and returns when it is done.\n\n" +
			"**Topics that a Kafka Streams app reads grow only through `kafkascale_streams_app`.** Growing one alone leaves " +
			"its co-partitioned topics and the app's internal topics behind, and the app stops on its next rebalance. So, " +
			"before it grows a topic (at plan, and again at apply), kafkascale reads the cluster's groups: when a Streams app " +
			"reads the topic (a source, or another app's sink that it reads), running or stopped, on either rebalance " +
			"protocol, the growth is refused on `partitions`, naming the app and the topics co-partitioned with this one. " +
			"Declare the app's `kafkascale_streams_app`, set its `partitions`, and give its topics " +
			"`lifecycle { ignore_changes = [partitions] }`. Each plain consumer group that reads a growing topic is named in " +
			"a warning. A replication factor change adds no partition, so this check never refuses it. Only the groups that the " +
			"provider's principal may DESCRIBE are seen.\n\n" +
			"Drift is detected on the topic's own configs (those set on the topic, `DYNAMIC_TOPIC_CONFIG`): values inherited " +
			"from the brokers are never drift, and the throttled-replica lists kafkascale sets during a reassignment are ignored.\n\n" +
			"A refresh reads the topics of the whole configuration in a few batched requests, not two per topic.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The topic name.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The topic name: up to 249 of `a-z A-Z 0-9 . _ -`. Changing it creates a new topic and deletes " +
					"this one with its data. Import with it.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{
					stringvalidator.LengthBetween(1, 249),
					stringvalidator.RegexMatches(topicNamePattern, "may contain only ASCII letters, digits, '.', '_' and '-'"),
					stringvalidator.NoneOf(".", ".."),
				},
			},
			"partitions": schema.Int64Attribute{
				Required: true,
				MarkdownDescription: "Number of partitions. It can only grow. Growing a topic whose records are keyed changes which " +
					"partition the default partitioner sends a key to; see `static_partitioning`. Growing a topic that a Kafka " +
					"Streams app reads is refused: grow it through `kafkascale_streams_app`.",
				Validators: []validator.Int64{int64validator.Between(1, 1<<20)},
			},
			"replication_factor": schema.Int64Attribute{
				Required: true,
				MarkdownDescription: "Replicas per partition: at least 1, at most the number of brokers. Changing it reassigns every " +
					"partition, one replica at a time, under `throttle`. Reads as 0 while the partitions have different replication " +
					"factors (an interrupted change, or one made outside Terraform); the next apply brings them all to this value.",
				Validators: []validator.Int64{int64validator.Between(1, 32767)},
			},
			"config": schema.MapAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "The topic's own configs, such as `retention.ms` or `min.insync.replicas`. Keys not listed are " +
					"removed from the topic, so it inherits them from the brokers; Kafka checks every key and value at plan time. " +
					"The throttled-replica lists are kafkascale's and cannot be set here.",
				Validators: []validator.Map{mapvalidator.KeysAre(stringvalidator.LengthAtLeast(1))},
			},
			"static_partitioning": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Declare that every producer to this topic partitions statically: a key, once written, always " +
					"goes to the same partition, and only new keys use new partitions. Without it, growing a topic that holds keyed " +
					"records (or is compacted) shows a warning in the plan. Default `false`.",
			},
			"throttle": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("Replication throttle of a replication factor change, bytes/s per broker. "+
					"Default %d (20 MiB/s).", defaultInitialThrottle),
				Validators: []validator.Int64{int64validator.AtLeast(1024)},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
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
		return // destroy
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
		// change of the old one.
		state = nil
	}
	if state == nil && !plan.Name.IsUnknown() {
		plan.ID = plan.Name
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	}

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

	change := topicChange{name: name, create: creating, grow: grows, replicationFactor: rfChange, config: configChange}
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
	if rfChange {
		r.previewReplicationFactor(ctx, name, int(state.ReplicationFactor.ValueInt64()), rf, topicThrottle(plan), &resp.Diagnostics)
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
func (r *TopicResource) checkBrokerCount(ctx context.Context, rf int, diags *diagList) bool {
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
func (r *TopicResource) warnIfKeyed(ctx context.Context, name string, from, to int, diags *diagList) {
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

// previewReplicationFactor plans the change now, so that a change the
// brokers cannot hold fails at plan time, and shows its cost.
func (r *TopicResource) previewReplicationFactor(ctx context.Context, name string, from, to int, throttle int64, diags *diagList) {
	snap, err := r.data.kafka.Snapshot(ctx)
	if err != nil {
		diags.Append(kafkaError("read the cluster to plan the replication factor change", err))
		return
	}
	opts := engine.DefaultOptions()
	opts.ThrottleBytesPerSec = throttle
	p, err := engine.PlanReassignment(topicOnly(kafka.EngineCluster(snap), name), engine.Change{ReplicationFactor: map[string]int{name: to}}, opts)
	if err != nil {
		diags.Append(planDiagnostics(replicationFactorTarget(name, to), err)...)
		return
	}
	fromText := fmt.Sprint(from)
	if from == 0 {
		fromText = "mixed replication factors"
	}
	diags.AddAttributeWarning(path.Root("replication_factor"), "Cost of the replication factor change",
		fmt.Sprintf("Changing topic %s from %s to %d replicas per partition copies %d replica(s), %d bytes, in %d group(s): "+
			"about %s at %d B/s per broker. The apply returns when every partition has its new replicas in sync and the "+
			"throttle is removed.", name, fromText, to, p.ReplicaMoves, p.TotalBytes, len(p.Groups), p.EstimatedDuration(throttle), throttle))
}

// topicOnly keeps every broker but only the topic's partitions, so that a
// replication factor change moves this topic's replicas and nothing else.
// Brokers keep their used bytes, so the other topics still count on disk.
func topicOnly(c engine.Cluster, topic string) engine.Cluster {
	out := engine.Cluster{Brokers: c.Brokers}
	for _, p := range c.Partitions {
		if p.Topic == topic {
			out.Partitions = append(out.Partitions, p)
		}
	}
	return out
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
			resp.Diagnostics.AddAttributeError(path.Root("name"), "Topic already exists",
				fmt.Sprintf("Topic %s already exists in the cluster, so it was not created. To manage it with Terraform, import it:\n\n"+
					"  terraform import <resource address> %s\n\nor choose another name.", name, name))
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
	r.keepPendingReplicationFactor(ctx, name, applied, &state, req.Private, resp.Private, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// keepPendingReplicationFactor keeps the replication factor last applied
// while a change that stopped midway is unfinished, even when the
// partitions already read uniform (it stopped after the last move, before
// the throttle was removed): the next plan then shows the change again, and
// its apply resumes the operation.
func (r *TopicResource) keepPendingReplicationFactor(ctx context.Context, name string, applied types.Int64, m *topicResourceModel, in privateGetter, out privateSetter, diags *diagList) {
	raw, ds := in.GetKey(ctx, topicPendingKey)
	diags.Append(ds...)
	if len(raw) == 0 || ds.HasError() {
		return
	}
	var key string
	if json.Unmarshal(raw, &key) != nil || key == "" {
		diags.Append(out.SetKey(ctx, topicPendingKey, nil)...)
		return
	}
	op, err := r.data.kafka.Operations().Load(ctx, key)
	if err != nil {
		diags.Append(kafkaError("read the operation log", err))
		return
	}
	if op == nil || op.Done() {
		diags.Append(out.SetKey(ctx, topicPendingKey, nil)...)
		return
	}
	if known(applied) {
		m.ReplicationFactor = applied
	}
	diags.AddAttributeWarning(path.Root("replication_factor"), "An interrupted replication factor change is pending",
		pendingOperation(op, "replication factor change of topic "+name))
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
	change := topicChange{name: name, config: len(set)+len(del) > 0, grow: plan.Partitions.ValueInt64() > state.Partitions.ValueInt64(),
		replicationFactor: int64(rf) != state.ReplicationFactor.ValueInt64()}
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
	if int64(rf) != state.ReplicationFactor.ValueInt64() {
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
	r.refreshAfterApply(ctx, &plan, &resp.State, &resp.Diagnostics)
}

// recordAfterFailure writes what the cluster shows after a failed update,
// so the state tells the truth and the next plan shows what is left. A
// change of replication factor left unfinished keeps the old value.
func (r *TopicResource) recordAfterFailure(ctx context.Context, plan, state *topicResourceModel, resp *resource.UpdateResponse) {
	ctx, cancel := afterFailure(ctx)
	defer cancel()
	m := *plan
	var ds diagList
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
func (r *TopicResource) growPartitions(ctx context.Context, name string, target, rf int, diags *diagList) bool {
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
func (r *TopicResource) addPartitions(ctx context.Context, name string, target, rf int, diags *diagList) bool {
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

// changeReplicationFactor runs the change as a throttled reassignment
// through the executor, persisted under the topic's operation key so that
// an interrupted apply resumes it. It returns when the change is done.
func (r *TopicResource) changeReplicationFactor(ctx context.Context, name string, rf int, throttle int64, resp *resource.UpdateResponse) bool {
	kc := r.data.kafka
	diags := &resp.Diagnostics
	clusterID, err := kc.ClusterID(ctx)
	if err != nil {
		diags.Append(kafkaError("read the cluster id", err))
		return false
	}
	key := topicOperationKey(clusterID, name)
	ex := executor.New(executor.Deps{Kafka: kc.Port(), Store: kc.Operations(), Log: tflogLogger{}, Lease: r.data.lease}, executor.Settings{PollInterval: time.Second})
	// The plan is made under the lease too: one made while another
	// operation moves this topic's replicas would be stale by its start.
	done := false
	work := executor.Work{Key: key, ID: newOperationID(), Resource: fmt.Sprintf("kafkascale_topic %q", name),
		What: fmt.Sprintf("change topic %s to %d replicas", name, rf)}
	err = ex.Exclusive(ctx, work, func(ctx context.Context) error {
		done = r.reassignReplicationFactor(ctx, ex, key, name, rf, throttle, resp)
		return nil
	})
	if err != nil {
		diags.Append(operationDiagnostics(replicationFactorTarget(name, rf), nil, err)...)
		return false
	}
	return done
}

// reassignReplicationFactor is the change proper, run under the lease.
func (r *TopicResource) reassignReplicationFactor(ctx context.Context, ex *executor.Executor, key, name string, rf int, throttle int64, resp *resource.UpdateResponse) bool {
	kc := r.data.kafka
	diags := &resp.Diagnostics
	store := kc.Operations()
	if err := store.Ensure(ctx); err != nil {
		diags.Append(kafkaError("create the operations topic "+kafka.OperationsTopic, err))
		return false
	}
	if err := kc.AwaitTopicReady(ctx, kafka.OperationsTopic, 1, 0); err != nil {
		diags.Append(kafkaError("wait for the operations topic "+kafka.OperationsTopic, err))
		return false
	}
	diags.Append(resp.Private.SetKey(ctx, topicPendingKey, mustJSON(key))...)

	// An unfinished change of this topic finishes first, and the new plan
	// starts from what it left: a plan made before the resume would expect
	// replicas the resume moves.
	if prev, err := store.Load(ctx, key); err != nil {
		diags.Append(kafkaError("read the operation log", err))
		return false
	} else if prev != nil && !prev.Done() {
		tflog.Info(ctx, "resuming an interrupted replication factor change", map[string]any{"topic": name, "operation": prev.ID,
			"phase": string(prev.Phase), "throttle_before": prev.ThrottleRate, "throttle": throttle})
		if prev.ThrottleRate != throttle {
			// The rate is set again on resume: a user who raised throttle
			// to finish sooner gets the new rate.
			prev.ThrottleRate = throttle
			if err := store.Save(ctx, prev); err != nil {
				diags.Append(kafkaError("record the new throttle of operation "+prev.ID, err))
				return false
			}
		}
		if op, err := ex.RunPlan(ctx, key, newOperationID(), executor.KindReplicationFactor, &engine.Plan{}, throttle); err != nil {
			diags.Append(operationDiagnostics(replicationFactorTarget(name, rf), op, err)...)
			return false
		}
	}

	snap, err := kc.Snapshot(ctx)
	if err != nil {
		diags.Append(kafkaError("read the cluster to plan the replication factor change", err))
		return false
	}
	opts := engine.DefaultOptions()
	opts.ThrottleBytesPerSec = throttle
	p, err := engine.PlanReassignment(topicOnly(kafka.EngineCluster(snap), name), engine.Change{ReplicationFactor: map[string]int{name: rf}}, opts)
	if err != nil {
		diags.Append(planDiagnostics(replicationFactorTarget(name, rf), err)...)
		return false
	}
	tflog.Info(ctx, "planned replication factor change", map[string]any{"topic": name, "replication_factor": rf,
		"moves": p.ReplicaMoves, "bytes": p.TotalBytes, "groups": len(p.Groups), "throttle": throttle,
		"estimated_duration": p.EstimatedDuration(throttle).String()})
	op, err := ex.RunPlan(ctx, key, newOperationID(), executor.KindReplicationFactor, p, throttle)
	if err != nil {
		diags.Append(operationDiagnostics(replicationFactorTarget(name, rf), op, err)...)
		return false
	}
	if err := kc.AwaitTopicReady(ctx, name, 0, rf); err != nil {
		diags.AddAttributeError(path.Root("replication_factor"), "Replicas not in sync after the change",
			fmt.Sprintf("The reassignment of topic %s to %d replicas completed, but while waiting for every broker to show every "+
				"partition with %d in-sync replicas the apply gave up: %v.", name, rf, rf, err))
		return false
	}
	diags.Append(resp.Private.SetKey(ctx, topicPendingKey, nil)...)
	return true
}

func topicOperationKey(clusterID, topic string) string { return "topic/" + clusterID + "/" + topic }

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
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

// forgetOperation removes the record of the topic's replication factor
// changes. An unfinished one also loses its broker throttle, which nothing
// else would remove now that its partitions are gone.
func (r *TopicResource) forgetOperation(ctx context.Context, name string, diags *diagList) {
	kc := r.data.kafka
	clusterID, err := kc.ClusterID(ctx)
	if err != nil {
		diags.AddWarning("Operation record not removed", fmt.Sprintf("While removing topic %s's operation record: %v", name, err))
		return
	}
	key := topicOperationKey(clusterID, name)
	op, err := kc.Operations().Load(ctx, key)
	if err != nil || op == nil {
		return
	}
	if !op.Done() && len(op.ThrottledBrokers) > 0 {
		if err := kc.ClearBrokerThrottle(ctx, op.ThrottledBrokers); err != nil {
			diags.AddWarning("Replication throttle left on brokers",
				fmt.Sprintf("Topic %s had an unfinished replication factor change (operation %s) whose throttle on brokers %v "+
					"could not be removed: %v. Remove leader.replication.throttled.rate and follower.replication.throttled.rate "+
					"from those brokers.", name, op.ID, op.ThrottledBrokers, err))
		}
	}
	if err := kc.PutOperation(ctx, key, nil); err != nil {
		diags.AddWarning("Operation record not removed", fmt.Sprintf("While removing topic %s's record from %s: %v", name, kafka.OperationsTopic, err))
	}
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
func (r *TopicResource) refreshAfterApply(ctx context.Context, m *topicResourceModel, state stateSetter, diags *diagList) {
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
	diags.Append(state.Set(ctx, m)...)
}

// topicFromKafka records what Kafka shows in m: the name, the partition
// count, the replication factor (0 when the partitions differ) and the
// topic's own configs, less kafkascale's throttles. A config that reads
// back in another spelling of the same value keeps the user's spelling.
func topicFromKafka(ctx context.Context, m *topicResourceModel, d kafka.TopicDescription) diagList {
	var diags diagList
	m.ID = types.StringValue(d.Name)
	m.Name = types.StringValue(d.Name)
	m.Partitions = types.Int64Value(int64(len(d.Partitions)))
	if rfs := d.ReplicationFactors(); len(rfs) == 1 {
		m.ReplicationFactor = types.Int64Value(int64(rfs[0]))
	} else {
		m.ReplicationFactor = types.Int64Value(0)
	}
	prior := map[string]string{}
	if !m.Config.IsNull() && !m.Config.IsUnknown() {
		diags.Append(m.Config.ElementsAs(ctx, &prior, false)...)
	}
	own := make(map[string]string, len(d.Configs))
	for k, v := range d.Configs {
		if isKafkascaleConfig(k) {
			continue
		}
		if p, ok := prior[k]; ok && kafka.SameConfigValue(p, v) {
			v = p
		}
		own[k] = v
	}
	if len(own) == 0 && (m.Config.IsNull() || m.Config.IsUnknown()) {
		m.Config = types.MapNull(types.StringType)
		return diags
	}
	cfg, ds := types.MapValueFrom(ctx, types.StringType, own)
	diags.Append(ds...)
	m.Config = cfg
	return diags
}

func isKafkascaleConfig(k string) bool {
	for _, own := range kafkascaleTopicConfigs {
		if k == own {
			return true
		}
	}
	return false
}

func topicConfigMap(ctx context.Context, m types.Map) (map[string]string, diagList) {
	out := map[string]string{}
	if m.IsNull() || m.IsUnknown() {
		return out, nil
	}
	diags := m.ElementsAs(ctx, &out, false)
	return out, diags
}

// configDelta is what turns prior into want: keys to set (new or changed)
// and keys to delete, never kafkascale's own.
func configDelta(prior, want map[string]string) (set map[string]string, del []string) {
	set = map[string]string{}
	for k, v := range want {
		if p, ok := prior[k]; !ok || p != v {
			set[k] = v
		}
	}
	for k := range prior {
		if _, ok := want[k]; !ok && !isKafkascaleConfig(k) {
			del = append(del, k)
		}
	}
	sort.Strings(del)
	return set, del
}

func sortedKeys(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}

func assignmentString(ps []engine.Partition) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("p%d:%v", p.Partition, p.Replicas)
	}
	return strings.Join(parts, " ")
}

func assignmentBrokers(ps []engine.Partition) string {
	seen := map[int32]bool{}
	var ids []int
	for _, p := range ps {
		for _, b := range p.Replicas {
			if !seen[b] {
				seen[b] = true
				ids = append(ids, int(b))
			}
		}
	}
	sort.Ints(ids)
	return joinInts(ids, ", ")
}

// topicKafkaError puts a topic Kafka refused on the attribute the user can
// change, with the broker's explanation.
func topicKafkaError(attempt string, err error) diagList {
	var out diagList
	te, ok := kafka.TopicErrorOf(err)
	if !ok {
		out.Append(kafkaError(attempt, err))
		return out
	}
	detail := fmt.Sprintf("While attempting to %s, Kafka refused it: %v.", attempt, te)
	switch te.Kind() {
	case kafka.TopicErrorInvalidName:
		out.AddAttributeError(path.Root("name"), "Invalid topic name", detail)
	case kafka.TopicErrorInvalidPartitions:
		out.AddAttributeError(path.Root("partitions"), "Invalid partition count", detail)
	case kafka.TopicErrorInvalidReplicationFactor, kafka.TopicErrorInvalidReplicaAssignment:
		out.AddAttributeError(path.Root("replication_factor"), "Invalid replication factor", detail)
	case kafka.TopicErrorInvalidConfig:
		out.AddAttributeError(path.Root("config"), "Invalid topic config", detail+"\n\nFix the key or value in config.")
	case kafka.TopicErrorPolicy:
		out.AddError("Refused by the cluster's topic policy", detail+"\n\nThe brokers' create.topic.policy or alter.config.policy rejects this topic; ask the cluster's operators.")
	case kafka.TopicErrorNotFound:
		out.AddError("Topic not found", detail+"\n\nIt was deleted outside Terraform; refresh, and the next apply creates it again.")
	default:
		out.Append(kafkaError(attempt, err))
	}
	return out
}

// shrinkDiagnostic explains engine.CheckNoShrink's refusal on partitions.
func shrinkDiagnostic(err error) diag.Diagnostic {
	var shrink *engine.ShrinkError
	if !errors.As(err, &shrink) {
		return kafkaError("check the partition count", err)
	}
	return diag.NewAttributeErrorDiagnostic(path.Root("partitions"), "Kafka cannot shrink a topic",
		fmt.Sprintf("Topic %s has %d partitions and the configuration asks for %d. Kafka can add partitions to a topic but "+
			"never remove them, and kafkascale does not delete and re-create a topic to get there: that would lose its data.\n\n"+
			"Set partitions to %d or more. To really have fewer partitions, create a new topic under another name and move "+
			"producers and consumers to it.", shrink.Topic, shrink.Partitions, shrink.Target, shrink.Partitions))
}
