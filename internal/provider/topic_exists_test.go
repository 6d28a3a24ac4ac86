package provider_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/twmb/franz-go/pkg/kadm"
)

// A newcomer's first step with an existing cluster: declaring a topic that
// already exists. The plan says so, shows how to adopt it and how it
// differs from the configuration, and changes nothing on the cluster.
func TestAccTopicResource_existingTopicDeclaredAsNew(t *testing.T) {
	testAccPreCheck(t) // alone: it uses the shared cluster (streamsCluster)
	c := streamsCluster(t)
	const topic = "adopt-me"
	createTopicRF(t, c, topic, 6, 2)
	ctx := context.Background()
	retention := "3600000"
	resps, err := c.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention}}, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resps.On(topic, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatalf("setting retention.ms on %s: %v", topic, err)
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: topicConfig(c.BootstrapServers(), topic, 6, 3, `config = { "retention.ms" = "7200000" }`),
			ExpectError: wrapped(`(?s)Topic already exists.*not in the Terraform state.*import \{.*id = "adopt-me".*` +
				`replication_factor: \[2\] in the cluster, 3 in the configuration.*` +
				`config "retention.ms": "3600000" in the cluster, "7200000" in the configuration`),
		}},
	})
	// Nothing changed: still 6 partitions at 2 replicas, its config kept.
	assertTopicOnEveryBroker(t, c, topic, 6, 2)
	rc, err := c.Admin().DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range cfg.Configs {
		if v.Key == "retention.ms" && (v.Value == nil || *v.Value != "3600000") {
			t.Errorf("retention.ms is now %v, want the topic's own 3600000 kept", v.MaybeValue())
		}
	}
}
