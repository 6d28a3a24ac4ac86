package provider

import (
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/validators"
)

// Why each bounded attribute is bounded, and what to do about a value out
// of bounds: one entry per rule, shared by every attribute that has it. The
// bounds themselves are the validators' below, which the messages quote.
var (
	explainBrokerCount = explanation{
		summary: "Fewer than one broker",
		why:     "Every partition's replicas live on brokers, so a cluster without brokers would hold no topic at all.",
		fix:     "Set broker_count to 1 or more, and to at least the largest replication_factor of any topic.",
	}
	explainBrokerID = explanation{
		summary: "Negative broker id",
		why:     "Kafka's broker ids (node.id) are 0 or more, so a negative id names no broker; Kafka writes -1 only where there is none, such as a partition without a leader.",
		fix:     "Name the ids of registered brokers, as data.kafkascale_cluster lists them in brokers.",
	}
	explainThrottle = explanation{
		summary: "Throttle below 1 KiB/s",
		why:     "Throttles are in bytes per second per broker: below 1024 B/s, copying a single 1 GiB replica would take more than 12 days, so a value this low is almost always a rate written in KiB/s or MiB/s.",
		fix:     "Give the rate in bytes per second, for example 10485760 for 10 MiB/s, or leave the attribute out for its default.",
	}
	explainMaxMoves = explanation{
		summary: "Negative move count",
		why:     "max_moves is how many moves the data source lists in moves, and a list cannot hold fewer than none.",
		fix:     fmt.Sprintf("Set it to 0 to list no move, to at least planned_moves to list them all, or leave it out for the default %d.", defaultMaxMoves),
	}
	explainMoveLimit = explanation{
		summary: "Move limit below 1",
		why:     "The move limits cap how many replica moves run at once; with none allowed, no replica could move and the change could never finish.",
		fix: fmt.Sprintf("Set it to 1 or more, or leave it out for the default (%d per step, %d per broker).",
			engine.DefaultMaxMovesPerStep, engine.DefaultMaxMovesPerBroker),
	}
	explainFreeDisk = explanation{
		summary: "Free disk share out of range",
		why:     "min_free_disk_percent is the percentage of every broker's disk kept free at every step, copies in flight counted: at 100 or more no broker could take a byte, so no replica could move, and below 0 it would mean nothing.",
		fix:     fmt.Sprintf("Give a percentage, for example 10 for 10%%, or leave it out for the default %d.", engine.DefaultMinFreeDiskPercent),
	}
	explainDiskSkew = explanation{
		summary: "Disk skew out of range",
		why:     "max_disk_skew_percent is how far, in percent, a broker's bytes may stray from its share: partitions are whole, so below 0.1 no placement could ever count as balanced, and above 1000 no imbalance would ever count.",
		fix:     fmt.Sprintf("Give a percentage, for example 10, or leave it out for the default %d.", engine.DefaultMaxDiskSkewPercent),
	}
	explainPartitions = explanation{
		summary: "Partition count out of range",
		why:     "A topic keeps its records in partitions, so it needs at least one; each partition is a log with open files on every broker holding a replica, so a count above 2^20 is far beyond what a cluster can serve.",
		fix:     "Set partitions to the number the topic should have. It can only grow later, so start with what its consumers need now.",
	}
	explainReplicationFactor = explanation{
		summary: "Replication factor out of range",
		why:     "Every partition needs at least one replica to hold its records, and Kafka stores the replication factor as a 16-bit number.",
		fix:     "Set replication_factor between 1 and the number of brokers; 3 lets one broker be down while writes with acks=all go on.",
	}
	explainAppPartitions = explanation{
		summary: "Partition count below 1",
		why:     "partitions is the partition count of every topic of the app, and a topic needs at least one partition to hold records.",
		fix:     "Set partitions to the count the app's topics should have: at least the partitions of its source topics now, as topics only grow.",
	}
	explainTopicNameChars = explanation{
		summary: "Character not allowed in a topic name",
		why:     "Kafka refuses to create a topic whose name has any other character, as the name is also a directory name on every broker and part of metric names.",
		fix:     "Replace the other characters, for example orders/eu with orders.eu or orders-eu.",
	}
	explainTopicNameLength = explanation{
		summary: "Topic name length out of range",
		why:     "Kafka refuses a topic name that is empty or longer than 249 characters, as each partition's directory on the brokers is named after it.",
		fix:     "Shorten the name, or give one if it is empty.",
	}
	explainTopicNameDots = explanation{
		summary: "Topic name not allowed",
		why:     "Kafka refuses the names \".\" and \"..\", as a topic's name is also a directory name on every broker, and these two name directories that already exist.",
		fix:     "Choose a name with at least one other character.",
	}

	explainRequestTimeout = explanation{
		summary: "request_timeout out of range",
		why:     "It bounds each admin request to Kafka, dial included: below 1s, a healthy cluster's slower requests (creating a topic, describing log directories) would time out, and above 1h, an unreachable cluster would hold a plan for hours before it says so.",
		fix:     fmt.Sprintf("Set it within that range, or leave it out for the default %s.", validators.FormatDuration(kafka.DefaultRequestTimeout)),
	}
	explainLeaseExpireAfter = explanation{
		summary: "Lease expiry out of range",
		why: "A holder heartbeats five times in this period: below the lowest bound, a short network or garbage-collection pause could let a live holder's lease expire, " +
			"so that a second run takes over the cluster in the middle of an operation; above the highest, a holder that died would block every other run that long, and readers replay the lease log only that far back.",
		fix: fmt.Sprintf("Set expire_after within that range, or leave it out for the default %s.", validators.FormatDuration(executor.DefaultLeaseExpireAfter)),
	}
	explainAdjustInterval = explanation{
		summary: "adjust_interval out of range",
		why:     "It is how often the dynamic throttle reads the brokers' metrics and adjusts: below 1s, Prometheus would not have a new sample between two adjustments, and above 1h, the throttle would not react to the load during a reassignment.",
		fix:     fmt.Sprintf("Set it within that range, or leave it out for the default %s.", validators.FormatDuration(defaultAdjustInterval)),
	}
	explainMaxApplyDuration = explanation{
		summary: "max_apply_duration out of range",
		why:     "It is how long one apply may spend on an operation before it stops cleanly between groups: below 1s, no apply could do more than its first group, and a week is beyond any limit a remote runner sets.",
		fix:     "Set it within that range, for example \"90m\" for a runner that stops runs after two hours, or leave it out to run until done.",
	}
	explainBrokerStartTime = explanation{
		summary: "broker_start_time out of range",
		why:     "It is what the plan's estimate counts per added broker until a scale-out has measured it: below 1s, no platform starts a broker, and above 24h, the estimate would say nothing a plan can use.",
		fix:     "Set it to about how long the platform takes to add one broker, for example \"4m\" for a platform that creates a machine, or leave it out.",
	}
	explainStabilizationTimeout = explanation{
		summary: "stabilization_timeout out of range",
		why:     "It is how long the apply waits for the app's group to become stable after its topics grew: below 1s, no group could rebalance in time, and above 24h, an app that never comes back would hold the apply for days.",
		fix:     fmt.Sprintf("Set it within that range, or leave it out for the default %s.", defaultStabilizationTimeout),
	}
	explainQuietPeriod = explanation{
		summary: "quiet_period out of range",
		why:     "It is how long the app's group must stay stable before the app counts as stable: a negative period means nothing, and above 1h, the apply would wait that long even for a healthy app.",
		fix:     fmt.Sprintf("Set it within that range (0 counts the app as stable at once), or leave it out for the default %s.", defaultQuietPeriod),
	}
)

// The explained validators of the attributes above, built where several
// attributes share them.

func brokerCountValidators() []validator.Int64 {
	return []validator.Int64{explainInt64(int64validator.AtLeast(1), explainBrokerCount)}
}

func topicNameValidators() []validator.String {
	return []validator.String{
		explainString(stringvalidator.LengthBetween(1, 249), explainTopicNameLength),
		explainString(stringvalidator.RegexMatches(topicNamePattern, "may contain only ASCII letters, digits, '.', '_' and '-'"), explainTopicNameChars),
		explainString(stringvalidator.NoneOf(".", ".."), explainTopicNameDots),
	}
}

// durationValidators check that a value is a duration, then that it lies
// within [lowest, highest], explaining e.
func durationValidators(lowest, highest time.Duration, e explanation) []validator.String {
	return []validator.String{validators.Duration(), explainString(validators.DurationBetween(lowest, highest), e)}
}

// The rebalance settings' bounds, shared by kafkascale_cluster.rebalance and
// data.kafkascale_rebalance_plan so that both accept exactly the same values.
func throttleValidators() []validator.Int64 {
	return []validator.Int64{explainInt64(int64validator.AtLeast(1024), explainThrottle)}
}

func brokerStartTimeValidators() []validator.String {
	return durationValidators(time.Second, 24*time.Hour, explainBrokerStartTime)
}

func maxMovesValidators() []validator.Int64 {
	return []validator.Int64{explainInt64(int64validator.AtLeast(0), explainMaxMoves)}
}

func moveLimitValidators() []validator.Int64 {
	return []validator.Int64{explainInt64(int64validator.AtLeast(1), explainMoveLimit)}
}

func freeDiskValidators() []validator.Float64 {
	return []validator.Float64{explainFloat64(float64validator.Between(0, 99), explainFreeDisk)}
}

func diskSkewValidators() []validator.Float64 {
	return []validator.Float64{explainFloat64(float64validator.Between(0.1, 1000), explainDiskSkew)}
}
