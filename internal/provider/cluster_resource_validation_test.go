package provider_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// Bad input is refused at plan time, on the attribute at fault, and leaves
// the cluster as it was.
func TestAccClusterResource_badInput(t *testing.T) {
	testAccParallel(t)
	c, apiURL := startScalableCluster(t, 3)
	createTopicRF(t, c, "rf3", 6, 3)
	// Bytes to move, so that a disk limit has something to refuse.
	produceFixed(t, c, "rf3", 6, 20, 1024)
	servers := c.BootstrapServers()

	twoMethods := testAccProviderConfig(servers, "") + fmt.Sprintf(`
resource "kafkascale_cluster" "test" {
  broker_count = 4
  scaling {
    http {
      endpoint   = %q
      cluster_id = "local"
    }
    external {}
  }
}`, apiURL)
	noMethod := testAccProviderConfig(servers, "") + `
resource "kafkascale_cluster" "test" {
  broker_count = 4
}`

	cases := []struct {
		name   string
		config string
		want   string
	}{
		{"zero brokers", clusterConfig(servers, apiURL, 0, ""), `(?s)broker_count.*must be at least 1`},
		{"below largest replication factor", clusterConfig(servers, apiURL, 2, ""),
			`(?s)This change of brokers cannot be made.*broker_count.*leaves 2 brokers, fewer than the replication factor 3`},
		{"min above max throttle", clusterConfig(servers, apiURL, 4, `min_throttle = 20971520
    max_throttle = 10485760`), `(?s)min_throttle above max_throttle.*min_throttle is 20971520 B/s but max_throttle is 10485760 B/s`},
		{"initial outside bounds", clusterConfig(servers, apiURL, 4, `initial_throttle = 1048576`), `(?s)initial_throttle outside \[min_throttle, max_throttle\]`},
		{"two scaling methods", twoMethods, `(?s)Invalid Attribute Combination.*scaling.http,scaling.command,scaling.external`},
		{"no scaling method", noMethod, `(?s)Missing scaling method.*could not add or remove a broker.*Add a scaling block with exactly one of`},
		{"not enough disk", clusterConfig(servers, apiURL, 4, `min_free_disk_percent = 99`), `(?s)Not enough disk for this broker count.*disk capacity.*over by \d+ bytes.*min_free_disk_percent 99`},
		{"bad endpoint", clusterConfig(servers, "127.0.0.1:7070", 4, ""), `(?s)Invalid URL.*127.0.0.1:7070`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      tc.config,
					ExpectError: wrapped(tc.want),
				}},
			})
			assertUntouched(t, c, 3)
		})
	}
}

// assertUntouched checks the cluster still has its brokers, no reassignment
// and no throttle.
func assertUntouched(t *testing.T, c *kafkatest.Cluster, brokers int) {
	t.Helper()
	regs, err := kafkatest.DescribeCluster(context.Background(), c.Client())
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) != brokers {
		t.Errorf("%d brokers registered after a refused plan, want %d", len(regs), brokers)
	}
	if rs := reassigning(t, c); len(rs) != 0 {
		t.Errorf("%d reassignments started by a refused plan", len(rs))
	}
	assertNoThrottles(t, c)
}
