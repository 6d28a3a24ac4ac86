package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/validators"
)

func clusterResourceSchema(ctx context.Context) schema.Schema {
	return schema.Schema{
		MarkdownDescription: "Owns a Kafka cluster's broker count. Raising `broker_count` adds brokers through the scaling method, " +
			"then moves the fewest replicas onto them with a rack-aware, disk-safe, throttled reassignment, group by group; " +
			"lowering it drains the leaving brokers first, then removes and unregisters them. Apply returns when the cluster is " +
			"stable again: every partition at its target, preferred leaders elected, throttles removed. An interrupted apply " +
			"resumes where it stopped. `terraform plan` shows the cost (`planned_moves`, `planned_bytes`, `estimated_duration`) " +
			"before anything moves; on a cluster whose snapshot passes 1 MiB gzipped (about 100,000 partitions), the private state keeps only a " +
			"summary of it, so these three are known after apply and the plan's cost warning gives them. A rebalance longer than a remote run's time limit can be spread over several applies with " +
			"`rebalance.max_apply_duration`; the [Terraform Cloud guide](https://registry.terraform.io/providers/kafkascale/kafkascale/latest/docs/guides/terraform-cloud) " +
			"says what a run in HCP Terraform or Terraform Enterprise needs.\n\nDestroying the resource only forgets the cluster: no broker is stopped.\n\n" +
			"Kafka enforces a replication throttle over about eleven seconds, and one follower fetch may carry up to " +
			"`replica.fetch.response.max.bytes` (10 MiB by default), so below about 10 MiB/s the copy runs in bursts above the " +
			"rate. Where that matters, lower `replica.fetch.max.bytes` and `replica.fetch.response.max.bytes` on the brokers.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The Kafka cluster id. Import with it.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"broker_count": schema.Int64Attribute{
				Required: true,
				MarkdownDescription: "How many brokers the cluster runs. It must be at least 1 and at least the largest replication " +
					"factor of any topic.",
				Validators: brokerCountValidators(),
			},
			"remove_broker_ids": schema.SetAttribute{
				ElementType: types.Int64Type,
				Optional:    true,
				MarkdownDescription: "The brokers to remove, overriding the default choice. With a lower `broker_count` they are " +
					"drained and removed, and there must be exactly as many as the count drops. With an unchanged `broker_count` " +
					"they are replaced: the scaling method adds as many brokers, the named brokers' replicas move onto them, and " +
					"the named brokers are removed. Use it for a dead broker (the apply heals its under-replicated partitions) or " +
					"for a platform that can only remove given brokers, as a StatefulSet removes its highest ordinals. " +
					"Without it, a scale-in removes fenced or offline brokers first, then keeps the failure domains as even as " +
					"the count allows on every awareness dimension, then moves the fewest bytes, then removes the highest ids. " +
					"Once applied, the ids may stay while `broker_count` stays; remove them (or name current brokers) with the next " +
					"change of `broker_count`, since the brokers they name are gone.",
				Validators: []validator.Set{setvalidator.SizeAtLeast(1), setvalidator.ValueInt64sAre(explainInt64(int64validator.AtLeast(0), explainBrokerID))},
			},
			"demote_broker_ids": schema.SetAttribute{
				ElementType: types.Int64Type,
				Optional:    true,
				MarkdownDescription: "Brokers to demote: they keep their replicas but lead no partition that another replica can " +
					"lead, for a broker about to be patched or with a slow disk. The apply reorders replica lists so that another " +
					"replica comes first and elects it; no data moves, and the plan shows how many leaderships move and where. Every " +
					"later plan (a scale-out, a scale-in, a rebalance) keeps them demoted until they are removed from the list; the " +
					"apply after that rebalances preferred leaders onto them again. A partition whose only in-rack choice is a " +
					"demoted broker (a replication factor of 1, say) keeps it as leader.",
				Validators: []validator.Set{setvalidator.SizeAtLeast(1), setvalidator.ValueInt64sAre(explainInt64(int64validator.AtLeast(0), explainBrokerID))},
			},
			"leaving_brokers": schema.ListAttribute{
				ElementType: types.Int64Type,
				Computed:    true,
				MarkdownDescription: "The brokers the planned change of `broker_count` or `remove_broker_ids` drains and removes, " +
					"sorted by id: known at plan time.",
			},
			"pending_operation": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The unfinished kafkascale operation on this cluster, as the last refresh found it: what it was " +
					"doing, where it stopped and what it has left. Null when there is none. While it is set, the plan always shows " +
					"an update: the apply resumes the operation when the configuration still asks for its target, and otherwise " +
					"cancels it (its reassignments in flight revert and its throttles and cordons go) and then plans from the cluster as it " +
					"is to the configured target.",
			},
			"brokers": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The registered brokers, sorted by id.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":   schema.Int64Attribute{Computed: true, MarkdownDescription: "Broker id."},
					"rack": schema.StringAttribute{Computed: true, MarkdownDescription: "`broker.rack`."},
				}},
			},
			"planned_moves": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Replica moves the last planned change of `broker_count` makes (each copies one replica).",
			},
			"planned_bytes": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Bytes the last planned change of `broker_count` copies between brokers.",
			},
			"estimated_duration": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Estimated duration of the whole apply of the last planned change, as a Go duration: adding brokers " +
					"(as the cluster's last operation measured with this scaling method, or a default), the copy at `initial_throttle`, each " +
					"group's overhead, verifying and electing leaders, and removing brokers. The plan's cost warning gives the parts; the " +
					"operations guide explains them.",
			},
		},
		Blocks: map[string]schema.Block{
			"scaling":   scalingBlock(),
			"rebalance": rebalanceBlock(),
			"timeouts": timeoutsBlock(ctx, defaultOpTimeout, defaultOpTimeout, defaultClusterDeleteTimeout,
				"the whole scaling operation; one cut off by it is resumed by the next apply, and `rebalance.max_apply_duration` "+
					"ends a run cleanly instead"),
		},
	}
}

// scalingBlock is how brokers are added and removed.
func scalingBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "How brokers are added and removed: exactly one of `http`, `command` or `external`.",
		Attributes: map[string]schema.Attribute{
			"broker_start_time": schema.StringAttribute{Optional: true,
				Validators: brokerStartTimeValidators(),
				MarkdownDescription: "How long the platform takes to add a broker, from the request until the broker is registered and " +
					"in the cluster metadata, such as `\"4m\"`. The plan's estimate counts it per added broker until a scale-out with " +
					"this scaling method has measured the real time, which then replaces it. Without it, the first scale-out's plan " +
					"says that the time is unknown and counts a default of 3s per broker, a local broker's start.",
			},
		},
		Blocks: map[string]schema.Block{
			"http": schema.SingleNestedBlock{
				MarkdownDescription: "A platform implementing the HTTP scaling API (see the [scaling API guide](https://registry.terraform.io/providers/kafkascale/kafkascale/latest/docs/guides/scaling-api) and its [OpenAPI contract](https://github.com/kafkascale/terraform-provider-kafkascale/blob/main/docs/scaling-api.openapi.yaml)).",
				Attributes: map[string]schema.Attribute{
					"endpoint": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Base URL of the scaling API, such as `http://127.0.0.1:7070`.",
						Validators:          []validator.String{validators.URL()},
					},
					"cluster_id": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "The platform's id of this cluster.",
						Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
					},
					"token": schema.StringAttribute{
						Optional:  true,
						Sensitive: true,
						MarkdownDescription: "Bearer token. Falls back to the `KAFKASCALE_SCALING_TOKEN` environment variable. " +
							"Terraform stores it in the state (marked sensitive); prefer `token_wo` or the environment variable.",
					},
					"token_wo": schema.StringAttribute{
						Optional:  true,
						Sensitive: true,
						WriteOnly: true,
						MarkdownDescription: "Bearer token, write-only (Terraform 1.11 and later): used by the apply and never " +
							"stored in the plan or the state. Conflicts with `token`.",
						Validators: []validator.String{stringvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("token"))},
					},
				},
			},
			"command": schema.SingleNestedBlock{
				MarkdownDescription: "Commands (argv lists, no shell) that add or remove brokers, for kubectl, Strimzi or Ansible. " +
					"`{broker_count}` and `{remove_broker_ids}` in an argument are replaced, and the environment carries " +
					"`KAFKASCALE_BROKER_COUNT` and `KAFKASCALE_REMOVE_BROKER_IDS`. A command must return once the platform has acted. " +
					"A replacement (`remove_broker_ids` with an unchanged `broker_count`) runs `scale_up` with the ids of the brokers " +
					"being replaced, then, once they are drained, `scale_down` with the same values.",
				Attributes: map[string]schema.Attribute{
					"scale_up": schema.ListAttribute{
						ElementType: types.StringType, Optional: true,
						MarkdownDescription: "argv run to reach a higher broker count.",
						Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
					},
					"scale_down": schema.ListAttribute{
						ElementType: types.StringType, Optional: true,
						MarkdownDescription: "argv run, after the leaving brokers are drained, to stop them.",
						Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
					},
				},
			},
			"external": schema.SingleNestedBlock{
				MarkdownDescription: "Brokers come and go by other means (other resources, an operator). On scale-out the apply " +
					"waits for them to register; on scale-in it drains the leaving brokers and waits for them to stop.",
			},
		},
	}
}

func rebalanceBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "How partitions move. Every attribute is optional.",
		Attributes: map[string]schema.Attribute{
			"initial_throttle": schema.Int64Attribute{Optional: true, Validators: throttleValidators(),
				MarkdownDescription: fmt.Sprintf("Replication throttle the reassignment starts at, bytes/s per broker: at least 1024, and between `min_throttle` and `max_throttle`. Default %d (20 MiB/s).", defaultInitialThrottle)},
			"min_throttle": schema.Int64Attribute{Optional: true, Validators: throttleValidators(),
				MarkdownDescription: fmt.Sprintf("Lowest rate the dynamic throttle may set, bytes/s: at least 1024, and at most `max_throttle`. Default %d (5 MiB/s).", defaultMinThrottle)},
			"max_throttle": schema.Int64Attribute{Optional: true, Validators: throttleValidators(),
				MarkdownDescription: fmt.Sprintf("Highest rate the dynamic throttle may set, bytes/s: at least 1024. Default %d (100 MiB/s).", defaultMaxThrottle)},
			"max_moves_per_step": schema.Int64Attribute{Optional: true, Validators: moveLimitValidators(),
				MarkdownDescription: fmt.Sprintf("Moves submitted in one AlterPartitionAssignments request, at least 1. Default %d.", engine.DefaultMaxMovesPerStep)},
			"max_moves_per_broker": schema.Int64Attribute{Optional: true, Validators: moveLimitValidators(),
				MarkdownDescription: fmt.Sprintf("Moves touching one broker at once, in and out counted, at least 1. Default %d.", engine.DefaultMaxMovesPerBroker)},
			"min_free_disk_percent": schema.Float64Attribute{Optional: true, Validators: freeDiskValidators(),
				MarkdownDescription: fmt.Sprintf("Share of every broker's disk kept free at every step, copies in flight counted, in percent from 0 to 99. Default %d.", engine.DefaultMinFreeDiskPercent)},
			"max_disk_skew_percent": schema.Float64Attribute{Optional: true, Validators: diskSkewValidators(),
				MarkdownDescription: fmt.Sprintf("How far a broker's bytes may stray from its share, in percent from 0.1 to 1000. Default %d.", engine.DefaultMaxDiskSkewPercent)},
			"keep_balanced": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Keep the cluster balanced at its broker count. Refresh and plan compare it with what the " +
					"planner would do at the same count; when replicas per broker spread more than 1 beyond what the racks force, " +
					"preferred leaders spread more than 1, or a broker's bytes stray further than `max_disk_skew_percent` from its " +
					"share, the plan shows an in-place update with `planned_moves`, `planned_bytes` and `estimated_duration`, and the " +
					"apply runs it like any other operation. Preferred leaders alone are fixed by a reorder and an election, with no " +
					"data moved. A balanced cluster plans no change. Default `false`."},
			"keep_leaders_balanced": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Keep preferred leaders balanced at the broker count, and nothing else: when preferred " +
					"leaders per broker spread more than 1 beyond what the racks force, the plan shows an in-place update with " +
					"`planned_moves` and `planned_bytes` of 0, and the apply reorders replica lists and elects the preferred " +
					"leaders. No data moves. `keep_balanced` includes it. Default `false`."},
			"adjust_interval": schema.StringAttribute{Optional: true, Validators: durationValidators(time.Second, time.Hour, explainAdjustInterval),
				MarkdownDescription: "How often the throttle is adjusted from the metrics, between `1s` and `1h`. Default `30s`."},
			"max_apply_duration": schema.StringAttribute{Optional: true,
				Validators: durationValidators(time.Second, maxApplyDurationLimit, explainMaxApplyDuration),
				MarkdownDescription: "Time one apply may spend on an operation, such as `\"90m\"`, counted from the start of the apply. " +
					"Once it has passed, the apply starts no new move: the moves in flight finish, the throttles " +
					"are removed, the progress is saved, and the apply succeeds with a warning that says how far it got. The state " +
					"keeps the old `broker_count` and sets `pending_operation`, so the next plan shows the change again with what is " +
					"left, and each next apply continues the same operation. Every apply finishes at least one group, so applies " +
					"converge whatever the value. It ends a run cleanly; `timeouts` still ends one with an error wherever it falls, " +
					"so whichever comes first wins: set it below `timeouts.update` and the run's time limit by at least one group's " +
					"time (`estimated_duration` divided by the groups), the longest the moves in flight can take. Between `1s` and " +
					"`168h` (a week). Unset means no limit. See the " +
					"[Terraform Cloud guide](https://registry.terraform.io/providers/kafkascale/kafkascale/latest/docs/guides/terraform-cloud)."},
		},
		Blocks: map[string]schema.Block{
			"awareness": schema.SingleNestedBlock{
				MarkdownDescription: "Read `broker.rack` as ordered failure domains, such as `eu-1a/r3` with separator `/` and " +
					"dimensions `[\"zone\", \"rack\"]`: replicas spread over zones first, then racks. Without it the whole rack string is one dimension.",
				Attributes: map[string]schema.Attribute{
					"separator":  schema.StringAttribute{Optional: true, MarkdownDescription: "Separator between the parts of `broker.rack`."},
					"dimensions": schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Names of the parts, highest priority first."},
				},
			},
			"metrics": schema.SingleNestedBlock{
				MarkdownDescription: "Adjust the throttle from broker metrics in Prometheus: additive increase while every throttled broker " +
					"is healthy, halving under pressure, within `[min_throttle, max_throttle]`. Without it, or when metrics are missing, the rate holds.",
				Attributes: map[string]schema.Attribute{
					"prometheus_url": schema.StringAttribute{Optional: true, Validators: []validator.String{validators.URL()},
						MarkdownDescription: "Prometheus base URL, such as `http://127.0.0.1:9090`. Credentials inside the URL are sent as basic auth; " +
							"prefer `basic_auth`, whose password is sensitive and kept out of plan output."},
					"io_pressure_query": schema.StringAttribute{Optional: true,
						MarkdownDescription: "PromQL returning one series per broker, labelled `broker`, higher meaning more disk I/O pressure."},
					"handler_idle_query": schema.StringAttribute{Optional: true,
						MarkdownDescription: "PromQL returning the request handlers' idle ratio (0 to 1) per broker, labelled `broker`."},
					"bearer_token": schema.StringAttribute{Optional: true, Sensitive: true,
						MarkdownDescription: "Token sent as `Authorization: Bearer <token>` with every query, for a Prometheus behind a token " +
							"(Grafana Cloud, Thanos or a proxy). Conflicts with `basic_auth`. Terraform stores it in the state (marked " +
							"sensitive); prefer `bearer_token_wo`."},
					"bearer_token_wo": schema.StringAttribute{Optional: true, Sensitive: true, WriteOnly: true,
						MarkdownDescription: "`bearer_token`, write-only (Terraform 1.11 and later): used by the plan's check and the apply, " +
							"never stored in the plan or the state. Conflicts with `bearer_token` and `basic_auth`.",
						Validators: []validator.String{stringvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("bearer_token"))}},
					"ca_cert": schema.StringAttribute{Optional: true,
						MarkdownDescription: "PEM certificate of the CA that signed the certificate of a Prometheus served over `https`; " +
							"it replaces the system's CAs for these queries. Without it, the system's CAs are trusted."},
				},
				Blocks: map[string]schema.Block{
					"basic_auth": schema.SingleNestedBlock{
						MarkdownDescription: "Log in to Prometheus with HTTP basic auth, as its `--web.config.file` `basic_auth_users` " +
							"or a proxy before it asks. Conflicts with `bearer_token`.",
						Attributes: map[string]schema.Attribute{
							"username": schema.StringAttribute{Optional: true, MarkdownDescription: "User name. Required in the block."},
							"password": schema.StringAttribute{Optional: true, Sensitive: true,
								MarkdownDescription: "Password; this or `password_wo` is required in the block. Terraform stores it in the " +
									"state (marked sensitive); prefer `password_wo`."},
							"password_wo": schema.StringAttribute{Optional: true, Sensitive: true, WriteOnly: true,
								MarkdownDescription: "Password, write-only (Terraform 1.11 and later): never stored in the plan or the state. " +
									"Conflicts with `password`.",
								Validators: []validator.String{stringvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("password"))}},
						},
					},
					"thresholds": schema.SingleNestedBlock{
						MarkdownDescription: "When a broker counts as under pressure.",
						Attributes: map[string]schema.Attribute{
							"max_io_pressure": schema.Float64Attribute{Optional: true,
								MarkdownDescription: fmt.Sprintf("I/O pressure above which the throttle halves. Default %g.", defaultMaxIOPressure)},
							"min_handler_idle": schema.Float64Attribute{Optional: true, Validators: []validator.Float64{float64validator.Between(0, 1)},
								MarkdownDescription: fmt.Sprintf("Handler idle ratio below which the throttle halves. Default %g.", defaultMinHandlerIdle)},
						},
					},
				},
			},
		},
	}
}
