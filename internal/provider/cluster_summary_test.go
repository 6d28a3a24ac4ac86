package provider_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkafake"
)

// A cluster whose planning snapshot passes 1 MiB gzipped keeps only a
// summary in private state. Its plans then come from the live cluster and
// leave planned_moves, planned_bytes, estimated_duration and
// leaving_brokers unknown: the plan Terraform repeats inside apply reads
// the cluster again, and must never contradict figures shown as known.
// The fake cluster (150,000 partitions) answers the read path only, which
// is all a plan uses; it needs no TF_ACC.
func TestClusterResource_largeClusterPlansFromSummary(t *testing.T) {
	fake, err := kafkafake.Start(kafkafake.Config{
		ClusterID: "large", Brokers: 6, Racks: 3, Topics: 5000, PartitionsPerTopic: 30, ReplicationFactor: 3,
		MaxPartitionBytes: 1 << 30, DiskBytes: 64 << 40, Extra: []kafkafake.Topic{{Name: kafka.OperationsTopic, Partitions: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	cfg := func(count int, extra string) string {
		return testAccProviderConfig(fake.Addrs()[:1], "") + fmt.Sprintf(`
resource "kafkascale_cluster" "main" {
  broker_count = %d
  scaling {
    external {}
  }
%s}
`, count, extra)
	}
	unknown := func(attrs ...string) []plancheck.PlanCheck {
		checks := []plancheck.PlanCheck{plancheck.ExpectResourceAction("kafkascale_cluster.main", plancheck.ResourceActionUpdate)}
		for _, a := range attrs {
			checks = append(checks, plancheck.ExpectUnknownValue("kafkascale_cluster.main", tfjsonpath.New(a)))
		}
		return checks
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg(6, ""), ResourceName: "kafkascale_cluster.main",
				ImportState: true, ImportStateId: fake.ClusterID(), ImportStatePersist: true,
			},
			{
				// 6 -> 9 brokers: the cost is in the plan's warning, the
				// planned figures are known after apply.
				Config:             cfg(9, ""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPreRefresh:  unknown("planned_moves", "planned_bytes", "estimated_duration", "leaving_brokers"),
					PostApplyPostRefresh: unknown("planned_moves", "planned_bytes", "estimated_duration", "leaving_brokers"),
				},
			},
			{
				// keep_balanced at the same count: the summary the refresh
				// kept was not asked about balance, so the plan cannot say
				// whether the apply rebalances, and says so.
				Config:             cfg(6, "  rebalance {\n    keep_balanced = true\n  }\n"),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPreRefresh: unknown("planned_moves", "planned_bytes", "estimated_duration"),
				},
			},
			{
				// Forget the resource: destroying it cancels through the
				// operation lease, which the read-only fake cannot hold.
				Config: testAccProviderConfig(fake.Addrs()[:1], "") + `
removed {
  from = kafkascale_cluster.main
  lifecycle {
    destroy = false
  }
}
`,
			},
		},
	})
	for k, n := range fake.Requests() {
		if len(k) > 11 && k[:11] == "unanswered:" {
			t.Errorf("the plans sent %d %s, which the fake does not answer", n, k)
		}
	}
}
