package provider_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// cliWorkspace is a Terraform working directory driven by the real CLI
// against a provider binary built from this tree (dev_overrides), so that
// the provider runs as its own process, which a test can kill.
type cliWorkspace struct {
	t   *testing.T
	dir string
	env []string
}

func newCLIWorkspace(t *testing.T, config string) *cliWorkspace {
	t.Helper()
	bin := builtProvider(t)
	home := t.TempDir()
	rc := filepath.Join(home, "terraformrc")
	if err := os.WriteFile(rc, []byte(fmt.Sprintf(`provider_installation {
  dev_overrides {
    "registry.terraform.io/kafkascale/kafkascale" = %q
  }
  direct {}
}
`, bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  required_providers {
    kafkascale = { source = "kafkascale/kafkascale" }
  }
}
`+config), 0o600); err != nil {
		t.Fatal(err)
	}
	// TMPDIR: the provider serves Terraform on a unix socket in its
	// temporary directory, which a killed provider leaves behind.
	return &cliWorkspace{t: t, dir: dir, env: append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TMPDIR="+t.TempDir())}
}

// start runs `terraform apply` in the background; the returned function
// waits for it and returns its output and error.
func (w *cliWorkspace) start() func() (string, error) {
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		tf = "terraform"
	}
	cmd := exec.Command(tf, "apply", "-auto-approve", "-input=false", "-no-color")
	cmd.Dir, cmd.Env = w.dir, w.env
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	w.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	return func() (string, error) {
		select {
		case err := <-done:
			return out.String(), err
		case <-time.After(10 * time.Minute):
			_ = cmd.Process.Kill()
			return out.String(), fmt.Errorf("terraform apply did not end within 10 minutes")
		}
	}
}

// A provider killed (SIGKILL) in the middle of a broker count change stops
// heartbeating, and the next apply of the same configuration, which resumes
// the same operation, takes the lease over at once: it does not wait for
// the expiry, and it finishes the change. The expiry is three minutes, far
// above what the resume takes even beside other tests, so the test can run
// side by side and still tell "at once" from "after the expiry".
func TestAccOperationLease_killedHolderIsTakenOverByItsResume(t *testing.T) {
	testAccParallel(t)
	c, apiURL := leaseTestCluster(t)
	createTopicRF(t, c, "load", 12, 2)
	fillTopic(t, c, "load", 48<<20)
	const expireAfter = 3 * time.Minute
	ws := newCLIWorkspace(t, testAccProviderConfig(c.BootstrapServers(), `operation_lease {
    expire_after = "3m"
  }`)+fmt.Sprintf(`
resource "kafkascale_cluster" "test" {
  broker_count = 4
  scaling {
    http {
      endpoint   = %q
      cluster_id = "local"
      token      = "s3cret-token"
    }
  }
  rebalance {
    initial_throttle = 1048576
    min_throttle     = 1048576
  }
}
`, apiURL))
	cluster := fmt.Sprintf("kafkascale_cluster %q", c.ClusterID())

	wait := ws.start()
	holder := awaitReassigning(t, c, cluster)
	t.Logf("killing the provider process %d, which holds the lease for operation %s", holder.holder.PID, holder.holder.Operation)
	if err := syscall.Kill(holder.holder.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the provider: %v", err)
	}
	killedAt := time.Now()
	if out, err := wait(); err == nil {
		t.Fatalf("the apply whose provider was killed succeeded:\n%s", out)
	}
	if op := loadOperationByKey(t, c, "cluster/"+c.ClusterID()); op == nil || op.Done() || op.ID != holder.holder.Operation {
		t.Fatalf("after the kill the operation is %+v; want %s saved unfinished", op, holder.holder.Operation)
	}

	resumedAt := time.Now()
	if out, err := ws.start()(); err != nil {
		t.Fatalf("the resuming apply failed: %v\n%s", err, out)
	}
	holds := readLeaseHolds(t, c)
	var dead, resumed leaseHold
	for _, h := range holds {
		switch {
		case h.claim == holder.claim:
			dead = h
		case h.holder.Operation == holder.holder.Operation && h.holding >= 0:
			resumed = h
		}
	}
	if resumed.claim == "" {
		t.Fatalf("no later claim of operation %s held the lease: %v", holder.holder.Operation, holds)
	}
	took := resumed.holdingAt.Sub(killedAt)
	if took >= expireAfter {
		t.Errorf("the resuming apply held the lease %s after the kill; want at once, before the %s expiry", took, expireAfter)
	}
	if dead.ended >= 0 {
		t.Errorf("the killed holder released its claim (%s); a SIGKILL leaves no release", dead)
	}
	op := loadOperationByKey(t, c, "cluster/"+c.ClusterID())
	if op == nil || op.Phase != executor.PhaseCompleted || op.ID != holder.holder.Operation {
		t.Errorf("after the resume the operation is %+v; want %s completed", op, holder.holder.Operation)
	}
	assertNoThrottles(t, c)
	t.Logf("killed the holder %s after it started; the resuming apply (started %s after the kill) held the lease %s after the kill, %s before the expiry",
		killedAt.Sub(holder.holdingAt).Round(time.Millisecond), resumedAt.Sub(killedAt).Round(time.Millisecond),
		took.Round(time.Millisecond), (expireAfter - took).Round(time.Millisecond))
}

// awaitReassigning waits until resource holds the lease and its operation
// is reassigning with a move in flight.
func awaitReassigning(t *testing.T, c *kafkatest.Cluster, resource string) leaseHold {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		for _, h := range readLeaseHolds(t, c) {
			if h.holder.Resource != resource || h.holding < 0 || h.ended >= 0 {
				continue
			}
			op := loadOperationByKey(t, c, "cluster/"+c.ClusterID())
			if op != nil && op.Phase == executor.PhaseReassign && len(reassigning(t, c)) > 0 {
				return h
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s never held the lease while reassigning", resource)
	return leaseHold{}
}
