package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

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
				Validators:    topicNameValidators(),
			},
			"partitions": schema.Int64Attribute{
				Required: true,
				MarkdownDescription: "Number of partitions, from 1 to 1048576. It can only grow. Growing a topic whose records are keyed changes which " +
					"partition the default partitioner sends a key to; see `static_partitioning`. Growing a topic that a Kafka " +
					"Streams app reads is refused: grow it through `kafkascale_streams_app`.",
				Validators: []validator.Int64{explainInt64(int64validator.Between(1, 1<<20), explainPartitions)},
			},
			"replication_factor": schema.Int64Attribute{
				Required: true,
				MarkdownDescription: "Replicas per partition: at least 1, at most the number of brokers. Changing it reassigns every " +
					"partition, one replica at a time, under `throttle`. Reads as 0 while the partitions have different replication " +
					"factors (an interrupted change, or one made outside Terraform); the next apply brings them all to this value.",
				Validators: []validator.Int64{explainInt64(int64validator.Between(1, 32767), explainReplicationFactor)},
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
			"deletion_protection": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Refuse, at plan time, to destroy this topic or to replace it (a new `name`), either of which " +
					"deletes its data. To delete it, set `deletion_protection = false` and apply first. Without it, a plan that " +
					"deletes a topic holding records warns with how many bytes and records go. Default `false`.",
			},
			"pending_operation": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The unfinished replication factor change of this topic, as the last refresh found it: where it " +
					"stopped and what it has left. Null when there is none. While it is set, the plan always shows an update: the " +
					"apply resumes the change when `replication_factor` still asks for its target, and otherwise cancels it (its " +
					"reassignments in flight revert and its throttles go) and brings every partition to the configured factor.",
			},
			"throttle": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("Replication throttle of a replication factor change, bytes/s per broker, at least 1024. "+
					"Default %d (20 MiB/s).", defaultInitialThrottle),
				Validators: throttleValidators(),
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeoutsBlock(ctx, defaultTopicCreateTimeout, defaultTopicUpdateTimeout, defaultTopicDeleteTimeout,
				"a change of replication factor or of partitions copies data, and one cut off by it is resumed by the next apply"),
		},
	}
}
