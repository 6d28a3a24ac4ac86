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

// testAccParallel is testAccPreCheck for an acceptance test that spends its
// time waiting (on throttled copies, on Terraform, on brokers) rather than
// computing, asserts no wall-clock bound, and owns its cluster: it runs
// beside another such test (make test's TEST_PARALLEL), which halves the
// wall time of the waits on this 2-core machine. A test that measures
// rates or times, or loads the CPU (a 5,000-partition cluster, Streams
// apps), stays on testAccPreCheck and runs alone.
func testAccParallel(t *testing.T) {
	t.Helper()
	testAccPreCheck(t)
	t.Parallel()
}
