package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// warnIfKeyed warns before a keyed topic grows: the default partitioner
// maps a key to murmur2(key) mod the partition count, so a new count sends
// existing keys elsewhere.
func (r *TopicResource) warnIfKeyed(ctx context.Context, name string, from, to int, diags *diag.Diagnostics) {
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
