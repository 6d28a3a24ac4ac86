package provider

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// topicFromKafka records what Kafka shows in m: the name, the partition
// count, the replication factor (0 when the partitions differ) and the
// topic's own configs, less kafkascale's throttles. A config that reads
// back in another spelling of the same value keeps the user's spelling.
func topicFromKafka(ctx context.Context, m *topicResourceModel, d kafka.TopicDescription) diag.Diagnostics {
	var diags diag.Diagnostics
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

func topicConfigMap(ctx context.Context, m types.Map) (map[string]string, diag.Diagnostics) {
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

func joinInts[T int | int32](xs []T, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
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
func topicKafkaError(attempt string, err error) diag.Diagnostics {
	var out diag.Diagnostics
	te, ok := kafka.TopicErrorOf(err)
	if !ok {
		out.Append(kafkaError(attempt, err))
		return out
	}
	detail := fmt.Sprintf("While attempting to %s, Kafka refused it: %v.", attempt, te)
	switch te.Kind() {
	case kafka.TopicErrorInvalidName:
		out.AddAttributeError(path.Root("name"), "Invalid topic name", detail+"\n\nChoose another name: Kafka takes "+
			"letters, digits, '.', '_' and '-', and treats '.' and '_' as the same in metric names, so two names differing only "+
			"there collide.")
	case kafka.TopicErrorInvalidPartitions:
		out.AddAttributeError(path.Root("partitions"), "Invalid partition count", detail)
	case kafka.TopicErrorInvalidReplicationFactor:
		out.AddAttributeError(path.Root("replication_factor"), "Invalid replication factor", detail)
	case kafka.TopicErrorInvalidReplicaAssignment:
		// kafkascale sends every placement as an explicit assignment, so
		// this refuses its choice of brokers, not the user's numbers.
		out.AddError("Kafka refused kafkascale's placement", detail+"\n\nkafkascale places every partition on brokers it "+
			"chooses, so this is not a mistake in the configuration: a broker it chose was cordoned, fenced or removed "+
			"meanwhile. Run apply again; it places anew from the cluster as it is then.")
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

// topicCreateError explains why creating topic name at replication factor
// rf failed: the engine's refusal (too few brokers that may receive
// replicas, for one), Kafka's refusal, or a failed request.
func topicCreateError(name string, rf int, err error) diag.Diagnostics {
	var input *engine.InputError
	var infeasible *engine.InfeasibleError
	if errors.As(err, &input) || errors.As(err, &infeasible) {
		return planDiagnostics(replicationFactorTarget(name, rf), err)
	}
	return topicKafkaError("create topic "+name, err)
}

// isTopicErrorKind reports whether err is Kafka's refusal of a topic of
// the kind k.
func isTopicErrorKind(err error, k kafka.TopicErrorKind) bool {
	te, ok := kafka.TopicErrorOf(err)
	return ok && te.Kind() == k
}

// shrinkDiagnostic explains engine.CheckNoShrink's refusal on partitions.
func shrinkDiagnostic(err error) diag.Diagnostic {
	var shrink *engine.ShrinkError
	if !errors.As(err, &shrink) {
		return kafkaError("check the partition count", err)
	}
	return diag.NewAttributeErrorDiagnostic(path.Root("partitions"), "Kafka cannot shrink a topic",
		fmt.Sprintf("Topic %s has %d partitions and the configuration asks for %d. %s, and kafkascale does not delete and "+
			"re-create a topic to get there: that would lose its data.\n\n"+
			"Set partitions to %d or more. To really have fewer partitions, create a new topic under another name and move "+
			"producers and consumers to it.", shrink.Topic, shrink.Partitions, shrink.Target, engine.NoShrinkRule, shrink.Partitions))
}
