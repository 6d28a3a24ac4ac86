package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// checkTopicConsumers asks the engine whether the topic may grow on its
// own, given every group on the cluster: a Kafka Streams app that reads it
// refuses the growth, on partitions; each plain consumer group that reads
// it is a warning (at plan only: the apply shows no warnings). It returns
// false when the growth is refused or the groups cannot be read.
func (r *TopicResource) checkTopicConsumers(ctx context.Context, name string, from, to int64, atPlan bool, diags *diag.Diagnostics) bool {
	consumers, err := r.data.kafka.DescribeConsumers(ctx)
	if err != nil {
		diags.AddAttributeError(path.Root("partitions"), "Cannot tell who reads the topic",
			fmt.Sprintf("While attempting to find the consumer groups and Kafka Streams apps that read topic %s before growing it "+
				"from %d to %d partitions, the groups could not be read: %v.\n\nkafkascale does not grow a topic it cannot check: "+
				"a Streams app that reads it would stop. Give the provider's principal DESCRIBE on the cluster's groups, or fix "+
				"the connection, and plan again.", name, from, to, err))
		return false
	}
	warnings, err := streams.CheckTopicGrowth(streams.TopicGrowth{Topic: name, From: int32(from), To: int32(to)}, consumers)
	var refused *streams.ConsumersError
	switch {
	case errors.As(err, &refused):
		diags.AddAttributeError(path.Root("partitions"), "Topic read by a Kafka Streams app", streamsConsumersDetail(refused, atPlan))
		return false
	case err != nil:
		diags.AddError("Cannot check the topic's consumers", fmt.Sprintf("Checking who reads topic %s failed: %v. %s", name, err, bugReport))
		return false
	}
	if atPlan {
		for _, w := range warnings {
			diags.AddAttributeWarning(path.Root("partitions"), "A consumer group reads the growing topic", w)
		}
	}
	return true
}

// streamsConsumersDetail says why the growth is refused and the way that
// works: the app's own resource. kafkascale cannot tell whether this
// configuration declares one (a plan sees one resource at a time), so it
// says what to do in either case.
func streamsConsumersDetail(e *streams.ConsumersError, atPlan bool) string {
	when := "While planning"
	if !atPlan {
		when = "At apply time (the app started or changed after the plan was made), while"
	}
	var decls []string
	for _, a := range e.Apps {
		decls = append(decls, fmt.Sprintf("  resource \"kafkascale_streams_app\" %q {\n    application_id      = %q\n    source_topics       = [%s]\n"+
			"    partitions          = %d\n    static_partitioning = true # only if every producer keeps each key in its partition\n  }",
			a.App, a.App, quoted(a.Sources), e.To))
	}
	return fmt.Sprintf("%s to grow topic %s from %d to %d partitions, kafkascale read the cluster's groups: %v.\n\n"+
		"Nothing was changed on the cluster.\n\n"+
		"Grow it through kafkascale_streams_app (for %s): it grows the app's sources, its internal topics and the downstream "+
		"apps together, in an order the app survives. If this configuration already declares a kafkascale_streams_app for the "+
		"app, set partitions = %d there, keep this topic at %d, and give it lifecycle { ignore_changes = [partitions] } so that "+
		"only the app's resource changes the count. If it does not, declare one, for instance:\n\n%s",
		when, e.Topic, e.From, e.To, e, strings.Join(e.AppIDs(), ", "), e.To, e.From, strings.Join(decls, "\n\n"))
}

func quoted(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
