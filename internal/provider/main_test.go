package provider_test

import (
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// TestMain stops every Kafka cluster the tests started, even when a test
// panics or the run is interrupted.
func TestMain(m *testing.M) { kafkatest.Main(m, nil) }

// testAccPreCheck is the acceptance tests' gate: they need TF_ACC (as
// `make test` sets) and a Terraform CLI.
func testAccPreCheck(t *testing.T) {
	t.Helper()
	kafkatest.RequireAcceptance(t)
}
