package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

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

func known(v types.Int64) bool { return !v.IsNull() && !v.IsUnknown() }

func topicThrottle(m topicResourceModel) int64 {
	if known(m.Throttle) {
		return m.Throttle.ValueInt64()
	}
	return defaultInitialThrottle
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

	ex := r.data.applyExecutor(ctx, executor.Settings{}, nil, nil)
	res, err := ex.CreateTopic(ctx, executor.CreateTopicRequest{
		Resource: fmt.Sprintf("kafkascale_topic %q", name), Topic: name, Partitions: partitions, ReplicationFactor: rf, Configs: configs})
	var exists *executor.TopicExistsError
	var notReady *executor.PartitionsNotReadyError
	switch {
	case errors.As(err, &exists) || isTopicErrorKind(err, kafka.TopicErrorExists):
		resp.Diagnostics.Append(r.topicExists(ctx, name, partitions, rf, configs))
		return
	case errors.As(err, &notReady):
		// The topic exists from here on: record it even though the wait
		// failed (or timed out), so Terraform tracks (and taints) it
		// instead of losing it.
		kc.Topics().Invalidate(name)
		r.refreshAfterApply(ctx, &plan, &resp.State, &resp.Diagnostics)
		resp.Diagnostics.AddError("Topic created but not ready",
			fmt.Sprintf("While waiting for the new topic %s to have a leader and a full ISR on every partition, the apply gave up: %v.\n\n"+
				"The topic exists and is in the state, marked tainted. Check that the brokers %s hold are running and in sync.",
				name, notReady.Err, assignmentBrokers(notReady.Added)))
		return
	case err != nil:
		resp.Diagnostics.Append(topicCreateError(name, rf, err)...)
		return
	}
	kc.Topics().Invalidate(name)
	r.data.reportLeftThrottles(ctx, ex, &resp.Diagnostics)
	r.refreshAfterApply(ctx, &plan, &resp.State, &resp.Diagnostics)
	if len(res.Leaving) > 0 {
		tflog.Info(ctx, "placed the new topic around the brokers an unfinished operation drains", map[string]any{"topic": name, "leaving": fmt.Sprint(res.Leaving)})
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
	defer kc.Topics().Invalidate(name)
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

	// The executor orders the steps (configs, replication factor, growth).
	ureq := executor.UpdateTopicRequest{ID: newOperationID(), Resource: fmt.Sprintf("kafkascale_topic %q", name), Topic: name}
	if change.config {
		ureq.Set, ureq.Delete = set, del
	}
	if change.replicationFactor {
		clusterID, err := kc.ClusterID(ctx)
		if err != nil {
			resp.Diagnostics.Append(kafkaError("read the cluster id", err))
			return
		}
		ureq.ReplicationFactor, ureq.Key, ureq.Throttle = rf, topicOperationKey(clusterID, name), topicThrottle(plan)
		ureq.BeforeReplicationFactor = func(ctx context.Context) error { return r.beforeReplicationFactor(ctx, ureq.Key, resp) }
	}
	from, to := int(state.Partitions.ValueInt64()), int(plan.Partitions.ValueInt64())
	if change.grow {
		ureq.Partitions = to
	}
	ex := r.data.applyExecutor(ctx, executor.Settings{PollInterval: time.Second, MinPollInterval: executor.DefaultMinPollInterval}, nil, nil)
	err := ex.UpdateTopic(ctx, ureq)
	var failed *executor.UpdateTopicError
	if change.replicationFactor && (err == nil || errors.As(err, &failed) && failed.Step == executor.StepGrowth) {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, topicPendingKey, nil)...)
	}
	if err != nil {
		resp.Diagnostics.Append(updateDiagnostics(name, rf, from, to, err)...)
		r.recordAfterFailure(ctx, &plan, &state, resp)
		return
	}
	r.data.reportLeftThrottles(ctx, ex, &resp.Diagnostics)
	r.refreshAfterApply(ctx, &plan, &resp.State, &resp.Diagnostics)
}

// recordAfterFailure writes what the cluster shows after a failed update,
// so the state tells the truth and the next plan shows what is left. A
// change of replication factor left unfinished keeps the old value.
func (r *TopicResource) recordAfterFailure(ctx context.Context, plan, state *topicResourceModel, resp *resource.UpdateResponse) {
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

// afterFailure gives the read that records the truth after an apply a
// context of its own: the apply's may have ended, after a failure or a
// timeout, or just as Kafka finished the change.
func afterFailure(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), kafka.DefaultRequestTimeout)
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
	change := topicChange{name: name, destroy: true}
	if !checkPermissions(ctx, kc, change.permissions(), "delete topic "+name, change.attribute, &resp.Diagnostics) {
		return
	}
	err := r.data.executor(executor.Settings{}, nil, nil).DeleteTopic(ctx, executor.TopicDeleteRequest{ID: newOperationID(),
		Resource: fmt.Sprintf("kafkascale_topic %q", name), Topic: name})
	if err != nil {
		resp.Diagnostics.Append(topicKafkaError("delete topic "+name, err)...)
		return
	}
	r.forgetOperation(ctx, name, &resp.Diagnostics)
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
// records it with the plan's own settings. The read has a deadline of its
// own: the change is made by then, and an apply whose timeout ran out
// just after Kafka created the topic must still record it, or the topic
// exists outside the state and every later plan stops at "Topic already
// exists".
func (r *TopicResource) refreshAfterApply(ctx context.Context, m *topicResourceModel, state stateSetter, diags *diag.Diagnostics) {
	ctx, cancel := afterFailure(ctx)
	defer cancel()
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
