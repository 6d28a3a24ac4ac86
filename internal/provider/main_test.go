package provider_test

import (
	"strings"
	"sync"
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
// beside other such tests (make test's TEST_PARALLEL while the other
// packages' tests run, one more once they end: side_by_side_test.go),
// which halves the wall time of the waits on this 2-core machine. A test
// that measures rates or times, or loads the CPU (a 5,000-partition
// cluster, Streams apps), stays on testAccPreCheck and runs alone.
func testAccParallel(t *testing.T) {
	t.Helper()
	testAccPreCheck(t)
	t.Parallel()
	if !strings.Contains(t.Name(), "/") {
		stopLoneTestsClusters.Do(func() { stopClustersOfLoneTests(t) })
		takeSideBySideSlot(t)
	}
}

// stopLoneTestsClusters stops, once, the clusters that only tests running
// alone use: the shared one (Streams tests, TestAccMistakes) and the
// secured one. Go resumes a top-level parallel test only after every test
// that runs alone has ended, so from then on those clusters' idle JVMs
// would take a third of a core from the tests running side by side, for
// the whole parallel part of the run.
var stopLoneTestsClusters sync.Once

func stopClustersOfLoneTests(t *testing.T) {
	if err := kafkatest.StopShared(); err != nil {
		t.Logf("stopping the shared cluster: %v", err)
	}
	if secureCluster != nil {
		if err := secureCluster.Stop(); err != nil {
			t.Logf("stopping the secured cluster: %v", err)
		}
	}
}
