package provider_test

import (
	"flag"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// How many acceptance tests run side by side. go test's -parallel sets the
// most; make test (scripts/test.sh) sets it one above TEST_PARALLEL and
// runs the other packages' tests beside this package's. While they run,
// the file envBesideFile names exists, and only envBesideWidth tests run
// side by side here; once they end, the CPU they used goes to one more
// test. Measured in the CI run of 2026-12-06 (ci30): after the other
// packages ended, the two cores stood idle 5-28 % of each minute with two
// tests side by side, waiting on throttled copies and on Terraform.
const (
	envBesideFile  = "KAFKASCALE_TEST_BESIDE_FILE"
	envBesideWidth = "KAFKASCALE_TEST_BESIDE_WIDTH"
)

var sideBySide struct {
	mu      sync.Mutex
	running int
}

// takeSideBySideSlot blocks until the test may run beside the others that
// run, and gives its slot back when the test ends (its cleanups, its
// cluster's stop among them, run first: they were registered later).
func takeSideBySideSlot(t *testing.T) {
	t.Helper()
	began := time.Now()
	for {
		sideBySide.mu.Lock()
		if sideBySide.running < sideBySideWidth() {
			sideBySide.running++
			sideBySide.mu.Unlock()
			break
		}
		sideBySide.mu.Unlock()
		time.Sleep(time.Second)
	}
	if waited := time.Since(began).Round(time.Second); waited > 0 {
		t.Logf("waited %v for a slot beside the other tests", waited)
	}
	t.Cleanup(func() {
		sideBySide.mu.Lock()
		sideBySide.running--
		sideBySide.mu.Unlock()
	})
}

// sideBySideWidth is -parallel, or envBesideWidth while envBesideFile
// exists.
func sideBySideWidth() int {
	width := 2
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			width = n
		}
	}
	file := os.Getenv(envBesideFile)
	if file == "" {
		return width
	}
	if _, err := os.Stat(file); err != nil {
		return width
	}
	if n, err := strconv.Atoi(os.Getenv(envBesideWidth)); err == nil && n > 0 && n < width {
		return n
	}
	return width
}
