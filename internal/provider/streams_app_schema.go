package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/validators"
)

// streamsAppResourceSchema is kafkascale_streams_app's schema, built by a
// function so that a later version can keep this one for UpgradeState.
func streamsAppResourceSchema(ctx context.Context) schema.Schema {
	return schema.Schema{
		MarkdownDescription: "Grows the partitions of a live Kafka Streams application: its sinks first, then its sources " +
			"together with its internal topics (repartition, changelog and foreign-key topics) in one CreatePartitions " +
			"request, then waits until the application's group is stable on the new count for `quiet_period`, then calls " +
			"`on_expansion_url`. `expansion_order` shows the steps in the plan. Apps that share a source topic grow " +
			"together: declare the others in `co_expand` blocks.\n\n" +
			"The resource manages the partition count only: it creates no topic, and destroying it changes nothing on " +
			"the cluster. An expansion is refused unless `static_partitioning` is true, and a live app on the classic " +
			"rebalance protocol needs a `quiesce` block. See the Streams expansion guide for why.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The application id.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"application_id": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The app's `application.id`, which is also its group id and the prefix of its internal " +
					"topics. Changing it forces a new resource.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{stringvalidator.LengthBetween(1, 249)},
			},
			"source_topics": streamsTopicSet("Every topic the app consumes (not its internal topics). The app's group must not "+
				"consume a topic missing here: it would stay behind while its co-partitioned sources grow.", true),
			"sink_topics": streamsTopicSet("The topics the app only writes to. They grow first, since the app does not consume them.", false),
			"fixed_internal_topics": schema.SetAttribute{
				ElementType: types.StringType, Optional: true, Computed: true,
				MarkdownDescription: "Internal topics whose partition count does not follow the sources, which neither " +
					"an adoption nor an expansion ever grows: Streams expects them at their own count and stops the app " +
					"when it finds another. Unset, kafkascale finds them and the plan shows them: under the streams " +
					"rebalance protocol from the group's topology (a repartition topic fixed by " +
					"`Repartitioned.withNumberOfPartitions`, and the changelogs and repartition topics of the " +
					"subtopologies that read only fixed topics); under the classic protocol, whose broker does not know " +
					"the topology, every internal topic whose count differs from the sources', unless an expansion " +
					"kafkascale recorded as unfinished (`settled_partitions` below `partitions`) explains it. Set, the " +
					"attribute keeps your list, and kafkascale leaves alone both your topics and those it finds (the " +
					"grow step in `expansion_order` names them all): list a fixed topic whose count happens to equal " +
					"the sources', which kafkascale cannot tell apart.",
				Validators: []validator.Set{setvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 249))},
			},
			"partitions": schema.Int64Attribute{
				Required: true,
				MarkdownDescription: "The partition count of every source, sink and internal topic. It can only grow: " +
					"Kafka cannot remove partitions. Read back as the most partitions of any source topic.",
				Validators: []validator.Int64{explainInt64(int64validator.AtLeast(1), explainAppPartitions)},
			},
			"static_partitioning": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Your word that every producer to the sources, and every repartition step, keeps each " +
					"existing key in its partition and sends only new keys to new partitions (KIP-878). Growing a topic " +
					"otherwise moves keys away from their state. Must be true to expand.",
			},
			"on_expansion_url": schema.StringAttribute{
				Optional: true,
				// Webhook URLs often carry their secret in the path or query.
				Sensitive: true,
				MarkdownDescription: "Called with `POST` and a JSON body `{application_id, old_partitions, new_partitions, " +
					"topics}` once the app is stable on the new count, with an `Idempotency-Key` header. A 429 or 503 " +
					"and a refused connection are retried with backoff. Sensitive: webhook URLs often carry a secret, so " +
					"Terraform never shows it; it is still stored in the state, so prefer `on_expansion_url_wo`.",
				Validators: []validator.String{validators.URL()},
			},
			"on_expansion_url_wo": schema.StringAttribute{
				Optional: true, Sensitive: true, WriteOnly: true,
				MarkdownDescription: "`on_expansion_url`, write-only (Terraform 1.11 and later): called the same way, never " +
					"stored in the plan or the state. Conflicts with `on_expansion_url`.",
				Validators: []validator.String{validators.URL(), stringvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("on_expansion_url"))},
			},
			"stabilization_timeout": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultStabilizationTimeout),
				MarkdownDescription: "How long to wait for the group to become stable (and, with `quiesce`, to empty) " +
					"before the apply fails, between `1s` and `24h`. Default `" + defaultStabilizationTimeout + "`.",
				Validators: durationValidators(time.Second, 24*time.Hour, explainStabilizationTimeout),
			},
			"quiet_period": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultQuietPeriod),
				MarkdownDescription: "How long the group must stay stable, its assignment covering every partition of " +
					"every topic it consumes, before the app counts as stable, between `0s` and `1h`. Default `" + defaultQuietPeriod + "`.",
				Validators: durationValidators(0, time.Hour, explainQuietPeriod),
			},
			"internal_topics": schema.ListAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "The app's internal topics found on the cluster by Streams' naming rules: " +
					"`<application_id>-…-repartition`, `-changelog` and the foreign-key join topics.",
			},
			"protocol": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The rebalance protocol of the app's group: `classic`, `streams`, or empty when the " +
					"group does not exist.",
			},
			"expansion_order": schema.ListAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "The ordered steps the apply runs, shown in the plan. After the apply it keeps the " +
					"steps of the last expansion until the next one is planned.",
			},
			"settled_partitions": schema.Int64Attribute{
				Computed: true,
				MarkdownDescription: "The count at which kafkascale last saw the app stable (and called " +
					"`on_expansion_url`). When it is below `partitions`, an apply stopped before it finished, and the " +
					"next apply finishes the wait and the call.",
			},
		},
		Blocks: map[string]schema.Block{
			"quiesce":   quiesceBlock(),
			"co_expand": coExpandBlock(),
			"timeouts": timeoutsBlock(ctx, defaultStreamsTimeout, defaultStreamsTimeout, 0,
				"every step of the expansion, its waits for a stable group included (each also bounded by `stabilization_timeout`)"),
		},
	}
}

// coExpandBlock is the co_expand block: another app grown with this one.
func coExpandBlock() schema.ListNestedBlock {
	return schema.ListNestedBlock{
		MarkdownDescription: "Another Streams app that shares a source topic with this one, grown with it to " +
			"`partitions`, in the same apply. Declare one block for every Streams app that reads a source any " +
			"app of the expansion grows, live or stopped: the plan is refused, naming the apps and topics, " +
			"when one is missing. The apps' sinks grow first; every live classic app with a `quiesce` block is " +
			"stopped, one CreatePartitions request grows every app's sources and non-fixed internal topics, " +
			"the stopped apps start again, kafkascale waits until every group is stable, then calls each " +
			"app's `on_expansion_url`. `static_partitioning`, `stabilization_timeout` and `quiet_period` " +
			"apply to every app. If an app here also has a `kafkascale_streams_app` of its own, give that one " +
			"`lifecycle { ignore_changes = [partitions] }`: it then plans no change after this one grew it.",
		NestedObject: schema.NestedBlockObject{
			Attributes: map[string]schema.Attribute{
				"application_id": schema.StringAttribute{
					Required: true, MarkdownDescription: "The app's `application.id`: its group id and the prefix of its internal topics.",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 249)},
				},
				"source_topics": schema.SetAttribute{
					ElementType: types.StringType, Required: true,
					MarkdownDescription: "Every topic the app consumes (not its internal topics).",
					Validators:          []validator.Set{setvalidator.SizeAtLeast(1), setvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 249))},
				},
				"sink_topics": schema.SetAttribute{
					ElementType: types.StringType, Optional: true,
					MarkdownDescription: "The topics the app only writes to.",
					Validators:          []validator.Set{setvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 249))},
				},
				"fixed_internal_topics": schema.SetAttribute{
					ElementType: types.StringType, Optional: true,
					MarkdownDescription: "As `fixed_internal_topics` above, for this app: internal topics whose count " +
						"does not follow the sources, in addition to those kafkascale finds.",
					Validators: []validator.Set{setvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 249))},
				},
				"on_expansion_url": schema.StringAttribute{
					Optional: true, Sensitive: true,
					MarkdownDescription: "Called as `on_expansion_url` above, with this app's id and topics, once " +
						"every app of the expansion is stable.",
					Validators: []validator.String{validators.URL()},
				},
				"on_expansion_url_wo": schema.StringAttribute{
					Optional: true, Sensitive: true, WriteOnly: true,
					MarkdownDescription: "`on_expansion_url` of this app, write-only (Terraform 1.11 and later). Conflicts with `on_expansion_url`.",
					Validators:          []validator.String{validators.URL(), stringvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("on_expansion_url"))},
				},
			},
			Blocks: map[string]schema.Block{"quiesce": quiesceBlock()},
		},
	}
}

// quiesceBlock is the quiesce block of an app.
func quiesceBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Commands that stop and start the app, needed to expand a live app on the classic " +
			"rebalance protocol. Each is an argv list run without a shell, with `KAFKASCALE_APPLICATION_ID` set. " +
			"`stop` must return once the app is stopping; kafkascale waits for the group to empty, grows the " +
			"topics, runs `start`, and waits for the group to be stable. If a step after `stop` fails, `start` " +
			"still runs. With `co_expand`, every app's `stop` runs before the one growth and every `start` after " +
			"it, so that the apps share one outage window.",
		Attributes: map[string]schema.Attribute{
			"stop":  argvAttribute("The command that stops every instance of the app."),
			"start": argvAttribute("The command that starts the app again."),
		},
	}
}

// streamsTopicSet is a set of topic names; an optional one defaults to
// none.
func streamsTopicSet(desc string, required bool) schema.SetAttribute {
	a := schema.SetAttribute{
		ElementType:         types.StringType,
		MarkdownDescription: desc,
		Validators:          []validator.Set{setvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 249))},
	}
	if required {
		a.Required = true
		a.Validators = append(a.Validators, setvalidator.SizeAtLeast(1))
	} else {
		a.Optional, a.Computed = true, true
		a.Default = setdefault.StaticValue(types.SetValueMust(types.StringType, nil))
	}
	return a
}

// argvAttribute is a command as an argv list. Optional in the schema: a block's
// required attribute is required even when the block is absent.
// ValidateConfig asks for both.
func argvAttribute(desc string) schema.ListAttribute {
	return schema.ListAttribute{
		ElementType: types.StringType, Optional: true, MarkdownDescription: desc + " Required in the block.",
		Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
	}
}
