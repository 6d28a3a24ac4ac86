package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
)

// topicExists explains a create of a topic the cluster already has, one
// that is not in the state (a newcomer's first step with an existing
// cluster): how to adopt it, and how it differs from the configuration.
func (r *TopicResource) topicExists(ctx context.Context, name string, partitions, rf int, configs map[string]string) diag.Diagnostic {
	var diffs []string
	d, ok, err := r.data.kafka.Topics().Describe(ctx, name)
	switch {
	case err != nil:
		diffs = append(diffs, fmt.Sprintf("(its settings could not be read: %v)", err))
	case ok:
		if n := len(d.Partitions); n != partitions {
			diffs = append(diffs, fmt.Sprintf("partitions: %d in the cluster, %d in the configuration", n, partitions))
		}
		if rfs := d.ReplicationFactors(); len(rfs) != 1 || rfs[0] != rf {
			diffs = append(diffs, fmt.Sprintf("replication_factor: %v in the cluster, %d in the configuration", rfs, rf))
		}
		for _, k := range slices.Sorted(maps.Keys(configs)) {
			if have, ok := d.Effective[k]; !ok || have != configs[k] {
				diffs = append(diffs, fmt.Sprintf("config %q: %q in the cluster, %q in the configuration", k, have, configs[k]))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(d.Configs)) {
			if _, set := configs[k]; !set && !isKafkascaleConfig(k) {
				diffs = append(diffs, fmt.Sprintf("config %q: %q set on the topic, not in the configuration", k, d.Configs[k]))
			}
		}
	}
	compared := "Its settings match the configuration, so an import plans no change."
	if len(diffs) > 0 {
		compared = "After an import, the next plan changes what differs:\n  - " + strings.Join(diffs, "\n  - ")
	}
	return diag.NewAttributeErrorDiagnostic(path.Root("name"), "Topic already exists",
		fmt.Sprintf("While attempting to create topic %s, it already existed in the cluster and is not in the Terraform state, "+
			"so kafkascale neither created nor changed it.\n\nTo manage the existing topic, adopt it with an import block "+
			"(Terraform 1.5+):\n\n  import {\n    to = <this resource's address>\n    id = %q\n  }\n\nor with "+
			"`terraform import <this resource's address> %s`. %s\n\nTo create a new topic instead, choose another name.",
			name, name, name, compared))
}
