package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// previewReplicationFactor plans the change now, so that a change the
// brokers cannot hold fails at plan time, and shows its cost.
func (r *TopicResource) previewReplicationFactor(ctx context.Context, name string, from, to int, throttle int64, diags *diag.Diagnostics) {
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

// keepPendingReplicationFactor keeps the replication factor last applied
// while a change that stopped midway is unfinished, even when the
// partitions already read uniform (it stopped after the last move, before
// the throttle was removed): the next plan then shows the change again, and
// its apply resumes the operation.
func (r *TopicResource) keepPendingReplicationFactor(ctx context.Context, name string, applied types.Int64, m *topicResourceModel, in privateGetter, out privateSetter, diags *diag.Diagnostics) {
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

// forgetOperation removes the record of the topic's replication factor
// changes. An unfinished one also loses its broker throttle, which nothing
// else would remove now that its partitions are gone.
func (r *TopicResource) forgetOperation(ctx context.Context, name string, diags *diag.Diagnostics) {
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
