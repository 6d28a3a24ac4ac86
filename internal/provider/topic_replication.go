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

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// previewReplicationFactor plans the change now, so that a change the
// brokers cannot hold fails at plan time, and shows its cost.
// An unfinished change of the topic is resumed, or cancelled first: the
// plan says which, and what is left.
func (r *TopicResource) previewReplicationFactor(ctx context.Context, name string, from, to int, throttle int64, diags *diag.Diagnostics) {
	snap, err := r.data.kafka.RecentSnapshot(ctx)
	if err != nil {
		diags.Append(kafkaError("read the cluster to plan the replication factor change", err))
		return
	}
	cost, err := r.data.executor(executor.Settings{}, nil, nil).PreviewReplicationFactorCost(ctx, topicOperationKey(snap.ClusterID, name),
		kafka.EngineCluster(snap), name, to, throttle)
	var read *executor.CostReadError
	switch {
	case errors.As(err, &read) && read.Reassignments:
		diags.Append(kafkaError("list the reassignments in flight", read.Err))
		return
	case errors.As(err, &read):
		diags.Append(kafkaError("read the operation log", read.Err))
		return
	case err != nil:
		diags.Append(planDiagnostics(replicationFactorTarget(name, to), err)...)
		return
	}
	if prev := cost.Resumes; prev != nil {
		diags.AddAttributeWarning(path.Root("replication_factor"), "An interrupted replication factor change will resume",
			pendingOperation(prev, topicOperation(prev, name)))
		return
	}
	p := cost.Plan
	if cost.PendingUpload != "" {
		diags.AddAttributeWarning(path.Root("replication_factor"), "New replicas of idle tiered partitions would not start", cost.PendingUpload)
	}
	if cancels := cost.Cancels; cancels != nil {
		diags.AddAttributeWarning(path.Root("replication_factor"), "An unfinished replication factor change will be cancelled",
			fmt.Sprintf("The configuration asks for %d replicas, so the apply %s; then every partition of topic %s goes to %d "+
				"replicas from where the cancel leaves it: %d replica(s) copied, %d partition(s) changed, %s.",
				to, cancels, name, to, p.ReplicaMoves, len(p.Moves()), p.ETA(engine.ETAInputs{Throttle: throttle})))
		return
	}
	fromText := fmt.Sprint(from)
	if from == 0 {
		fromText = "mixed replication factors"
	}
	diags.AddAttributeWarning(path.Root("replication_factor"), "Cost of the replication factor change",
		fmt.Sprintf("Changing topic %s from %s to %d replicas per partition copies %d replica(s), %d bytes, in %d group(s), "+
			"%s. The apply returns when every partition has its new replicas in sync and the throttle is removed.",
			name, fromText, to, p.ReplicaMoves, p.TotalBytes, len(p.Groups), p.ETA(engine.ETAInputs{Throttle: throttle})))
}

// keepPendingReplicationFactor keeps the replication factor last applied
// while a change that stopped midway is unfinished, even when the
// partitions already read uniform (it stopped after the last move, before
// the preferred leaders were elected and the throttle removed): the next
// plan then shows the change again, and its apply resumes the operation.
//
// The private state names the change when the apply that ran it could save
// it. An apply killed with SIGKILL saved nothing, and the topic may show no
// sign of it either (each finished move already lost its throttle), so the
// topic's key is then looked up in the operation log. The client reads only
// what was written to the log since its last read, so a refresh of many
// topics reads it once.
func (r *TopicResource) keepPendingReplicationFactor(ctx context.Context, name string, applied types.Int64, m *topicResourceModel, in privateGetter, out privateSetter, diags *diag.Diagnostics) {
	m.PendingOperation = types.StringNull()
	raw, ds := in.GetKey(ctx, topicPendingKey)
	diags.Append(ds...)
	if ds.HasError() {
		return
	}
	var key string
	if len(raw) > 0 {
		if json.Unmarshal(raw, &key) != nil || key == "" {
			diags.Append(out.SetKey(ctx, topicPendingKey, nil)...)
			return
		}
	} else {
		clusterID, err := r.data.kafka.ClusterID(ctx)
		if err != nil {
			diags.Append(kafkaError("read the cluster id", err))
			return
		}
		key = topicOperationKey(clusterID, name)
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
	m.PendingOperation = types.StringValue(pendingOperation(op, topicOperation(op, name)))
}

// topicOperation names a replication factor change in messages.
func topicOperation(op *executor.Operation, topic string) string {
	return fmt.Sprintf("replication factor change of topic %s to %d", topic, op.TargetReplicationFactor())
}

// errReported is a failure the diagnostics already explain.
var errReported = errors.New("reported in the diagnostics")

// beforeReplicationFactor records the change's key in the private state
// before it starts, so that an interrupted apply is resumed from it
// (keepPendingReplicationFactor).
func (r *TopicResource) beforeReplicationFactor(ctx context.Context, key string, resp *resource.UpdateResponse) error {
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, topicPendingKey, mustJSON(key))...)
	return nil
}

// updateDiagnostics explains the step of a topic's update that failed
// (executor.UpdateTopic): rf is the replication factor it went to and
// from, to the partition counts of its growth.
func updateDiagnostics(name string, rf, from, to int, err error) diag.Diagnostics {
	var failed *executor.UpdateTopicError
	if !errors.As(err, &failed) {
		return topicKafkaError("change topic "+name, err)
	}
	switch failed.Step {
	case executor.StepConfigs:
		return topicKafkaError("change the configs of topic "+name, failed.Err)
	case executor.StepReplicationFactor:
		if errors.Is(failed.Err, errReported) {
			return nil
		}
		return operationDiagnostics(replicationFactorTarget(name, rf), failed.Operation, failed.Err)
	case executor.StepReplicasInSync:
		var out diag.Diagnostics
		out.AddAttributeError(path.Root("replication_factor"), "Replicas not in sync after the change",
			fmt.Sprintf("The reassignment of topic %s to %d replicas completed, but while waiting for every broker to show every "+
				"partition with %d in-sync replicas the apply gave up: %v.", name, rf, rf, failed.Err))
		return out
	default:
		return operationDiagnostics(growthTarget(name, from, to), nil, failed.Err)
	}
}

func topicOperationKey(clusterID, topic string) string { return "topic/" + clusterID + "/" + topic }

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// forgetOperation removes the record of the topic's replication factor
// changes once the topic is gone (executor.Forget). A record or throttle
// left is a warning: the topic itself is deleted.
func (r *TopicResource) forgetOperation(ctx context.Context, name string, diags *diag.Diagnostics) {
	kc := r.data.kafka
	clusterID, err := kc.ClusterID(ctx)
	if err == nil {
		err = r.data.executor(executor.Settings{}, nil, nil).Forget(ctx, topicOperationKey(clusterID, name), fmt.Sprintf("kafkascale_topic %q", name))
	}
	if err != nil {
		diags.AddWarning("Replication factor change not forgotten",
			fmt.Sprintf("Topic %s is deleted, but its replication factor change's record in %s could not be removed: %v.", name, kafka.OperationsTopic, err))
	}
}
