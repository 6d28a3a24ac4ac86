//go:build linux

package provider_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// terraformCLI runs the real terraform binary against a provider built from
// this tree, installed through dev_overrides. terraform-plugin-testing runs
// the provider inside the test process, which a SIGKILL of the provider
// would take down with the test; here the provider is terraform's own child.
type terraformCLI struct {
	t   testing.TB
	bin string // terraform
	dir string // the working directory: main.tf and the state
	env []string
}

func newTerraformCLI(t testing.TB) *terraformCLI {
	t.Helper()
	bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("terraform"); err != nil {
			t.Fatalf("terraform is not on PATH (make tools installs it): %v", err)
		}
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	plugins := builtProvider(t)
	rc := filepath.Join(root, "terraformrc")
	cfg := fmt.Sprintf(`provider_installation {
  dev_overrides {
    "kafkascale/kafkascale" = %q
  }
  direct {}
}
`, plugins)
	if err := os.WriteFile(rc, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// TMPDIR: the provider serves Terraform on a unix socket in its
	// temporary directory, which a killed provider leaves behind.
	env := append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TMPDIR="+t.TempDir(),
		"TF_DATA_DIR="+filepath.Join(work, ".terraform"))
	return &terraformCLI{t: t, bin: bin, dir: work, env: env}
}

// configure writes main.tf: the provider's source, then hcl.
func (tf *terraformCLI) configure(hcl string) {
	tf.t.Helper()
	src := `terraform {
  required_providers {
    kafkascale = { source = "kafkascale/kafkascale" }
  }
}
` + hcl
	if err := os.WriteFile(filepath.Join(tf.dir, "main.tf"), []byte(src), 0o644); err != nil {
		tf.t.Fatal(err)
	}
}

// command builds a terraform command in its own process group, so that it
// and the provider it starts can be killed together, and so that it dies
// with the test process.
func (tf *terraformCLI) command(args ...string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(tf.bin, append(args, "-no-color", "-input=false")...)
	cmd.Dir = tf.dir
	cmd.Env = tf.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, &out
}

// run runs terraform to its end and returns its output and exit code.
func (tf *terraformCLI) run(args ...string) (string, int) {
	tf.t.Helper()
	cmd, out := tf.command(args...)
	start := time.Now()
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		tf.t.Fatalf("terraform %s: %v", args[0], err)
	}
	tf.t.Logf("terraform %s: exit %d after %s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), time.Since(start).Round(time.Millisecond))
	return out.String(), cmd.ProcessState.ExitCode()
}

// mustRun runs terraform and fails the test unless it exits with want.
func (tf *terraformCLI) mustRun(want int, args ...string) string {
	tf.t.Helper()
	out, code := tf.run(args...)
	if code != want {
		tf.t.Fatalf("terraform %s exited %d, want %d:\n%s", strings.Join(args, " "), code, want, out)
	}
	return out
}

// processGroup is a running terraform and everything it started.
type processGroup struct {
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan struct{}
}

// start starts terraform and makes sure its whole process group is killed
// when the test ends, however it ends.
func (tf *terraformCLI) start(args ...string) *processGroup {
	tf.t.Helper()
	cmd, out := tf.command(args...)
	if err := cmd.Start(); err != nil {
		tf.t.Fatalf("starting terraform %s: %v", args[0], err)
	}
	g := &processGroup{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(g.exited) }()
	tf.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-g.exited
		waitGone(tf.t, groupMembers(cmd.Process.Pid))
	})
	return g
}

// groupMembers lists the live processes of process group pgid, by pid, with
// their command names.
func groupMembers(pgid int) map[int]string {
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	out := map[int]string{}
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			out[pid] = s[open+1 : end]
		}
	}
	return out
}

// waitGone waits until none of procs is alive (gone, or a zombie).
func waitGone(t testing.TB, procs map[int]string) {
	deadline := time.Now().Add(30 * time.Second)
	for pid, name := range procs {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d (%s) still runs after SIGKILL", pid, name)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// waitGroupInFlight polls the operations topic and the controller until the
// operation is past its first group and a later group's reassignments are
// running, and returns the operation as stored then. It fails if the apply
// ends first.
func waitGroupInFlight(t *testing.T, c *kafkatest.Cluster, apply *processGroup) *executor.Operation {
	t.Helper()
	deadline := time.After(4 * time.Minute)
	for {
		select {
		case <-apply.exited:
			t.Fatalf("terraform apply ended before a group was seen in flight:\n%s", apply.out)
		case <-deadline:
			t.Fatalf("no group was in flight within 4 minutes:\n%s", apply.out)
		case <-time.After(100 * time.Millisecond):
		}
		op := loadOperation(t, c)
		if op == nil || op.Phase != executor.PhaseReassign || op.Plan == nil || op.Group < 1 || op.StepsSubmitted < 1 {
			continue
		}
		rs, err := listReassignments(c)
		if err == nil && len(rs) > 0 {
			t.Logf("operation %s: group %d/%d in flight, %d partitions reassigning, %d of %d moves done",
				op.ID, op.Group+1, len(op.Plan.Groups), len(rs), op.MovesDone, op.Plan.ReplicaMoves)
			return op
		}
	}
}

// killMidGroup scales the cluster from 3 to 5 brokers with terraform apply
// and SIGKILLs it and the provider it runs in the middle of a group, under
// acks=all load (ledger) with min.insync.replicas=2. Nothing gets to clean
// up: throttles stay, reassignments keep running. It returns the operation
// as stored after the kill.
func killMidGroup(t *testing.T, tf *terraformCLI, c *kafkatest.Cluster, apiURL string) *executor.Operation {
	t.Helper()
	tf.configure(slowConfig(c.BootstrapServers(), apiURL, 3, "30m"))
	tf.mustRun(0, "apply", "-auto-approve")

	tf.configure(slowConfig(c.BootstrapServers(), apiURL, 5, "30m"))
	return killApplyMidGroup(t, tf, c)
}

// killApplyMidGroup starts terraform apply of tf's configuration, SIGKILLs
// it and its provider while a group of the operation is in flight, and
// returns the operation the kill left unfinished, its throttles set.
func killApplyMidGroup(t *testing.T, tf *terraformCLI, c *kafkatest.Cluster) *executor.Operation {
	t.Helper()
	apply := tf.start("apply", "-auto-approve")
	started := time.Now()
	inFlight := waitGroupInFlight(t, c, apply)
	pgid := apply.cmd.Process.Pid
	members := groupMembers(pgid)
	provider := false
	for _, name := range members {
		provider = provider || strings.HasPrefix(name, "terraform-provi") // comm is cut at 15 bytes
	}
	if !provider {
		t.Fatalf("the provider is not among terraform's processes %v:\n%s", members, apply.out)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL to process group %d: %v", pgid, err)
	}
	<-apply.exited
	waitGone(t, members)
	if ws, ok := apply.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("terraform apply ended with %v, not by SIGKILL", apply.cmd.ProcessState)
	}
	t.Logf("SIGKILLed terraform apply and the provider %v after %s", members, time.Since(started).Round(time.Millisecond))

	killed := loadOperation(t, c)
	if killed == nil || killed.ID != inFlight.ID || killed.Done() {
		t.Fatalf("after the kill the stored operation is %+v; want %s unfinished", killed, inFlight.ID)
	}
	left := throttlesSet(t, c)
	if len(left) == 0 {
		t.Fatalf("no throttle is set after the kill: the group was not in flight, so this proves nothing")
	}
	t.Logf("after the kill Kafka still reassigns %d partitions, and %d throttles are left, such as: %s",
		len(reassigning(t, c)), len(left), left[0])
	return killed
}

// startLoadedCluster starts a scalable 3-broker cluster holding 64 MiB in
// topic load and a ledger producing with acks=all to topic ledger
// (min.insync.replicas=2).
func startLoadedCluster(t *testing.T) (*kafkatest.Cluster, string, *ledger) {
	t.Helper()
	c, apiURL := startScalableCluster(t, 3)
	return c, apiURL, loadCluster(t, c, 64<<20)
}

// loadCluster fills topic load (24 partitions) with size bytes and starts a
// ledger producing with acks=all to topic ledger (min.insync.replicas=2).
func loadCluster(t *testing.T, c *kafkatest.Cluster, size int64) *ledger {
	t.Helper()
	createTopicRF(t, c, "load", 24, 3)
	fillTopic(t, c, "load", size)
	two := "2"
	resp, err := c.Admin().CreateTopic(context.Background(), 6, 3, map[string]*string{"min.insync.replicas": &two}, "ledger")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic ledger: %v", err)
	}
	return runLedger(t, c, "ledger")
}

// matchAll reports every pattern that out, with Terraform's box drawing
// removed, does not match.
func matchAll(t *testing.T, what, out string, patterns ...string) {
	t.Helper()
	for _, want := range patterns {
		if !wrapped(want).MatchString(strings.ReplaceAll(out, "│", "")) {
			t.Errorf("%s does not match %q", what, want)
		}
	}
}

// terraform apply and the provider it runs are SIGKILLed in the middle of a
// group of a 3 → 5 scale-out. The next plan shows the operation pending and
// what is left of it, the next apply resumes the same operation and
// completes it, every acknowledged record is readable, and the plan after
// that is empty.
func TestAccClusterResource_sigkillMidGroup(t *testing.T) {
	testAccParallel(t)
	tf := newTerraformCLI(t)
	c, apiURL, ledger := startLoadedCluster(t)
	killed := killMidGroup(t, tf, c, apiURL)

	plan := tf.mustRun(2, "plan", "-detailed-exitcode")
	t.Logf("plan after the kill:\n%s", plan)
	movesLeft := killed.Plan.ReplicaMoves - killed.MovesDone
	account := fmt.Sprintf(`Operation %s \(scale-out to 5 brokers\) stopped in phase reassign at group %d/%d, with %d moves \(\d+ bytes\) left\.`,
		killed.ID, killed.Group+1, len(killed.Plan.Groups), movesLeft)
	matchAll(t, "the plan after the kill", plan,
		`Warning: An interrupted operation will resume`,
		// The warning and the attribute give the one account of it.
		account,
		`pending_operation\s+= "`+account+`.*" -> null`,
		`broker_count\s+= 3 -> 5`,
		fmt.Sprintf(`planned_moves\s+= \d+ -> %d`, movesLeft),
	)

	// The next apply resumes the same operation and completes it.
	tf.mustRun(0, "apply", "-auto-approve")
	done := loadOperation(t, c)
	if done.ID != killed.ID {
		t.Errorf("the apply completed operation %s; want the killed %s resumed", done.ID, killed.ID)
	}
	if done.Phase != executor.PhaseCompleted {
		t.Errorf("operation %s is in phase %s after the apply, want completed", done.ID, done.Phase)
	}
	if fmt.Sprint(done.Plan.Target) != fmt.Sprint(killed.Plan.Target) {
		t.Errorf("the resumed operation's plan changed: it must finish the plan it persisted")
	}
	assertOperationCompleted(t, c, 5)
	assertAssignmentIs(t, c, killed.Plan.Target)
	assertOnlyBrokers(t, c, brokerRange(5))
	assertScaledOut(t, c, countPartitions(t, c))
	assertSettledAndIntact(t, tf, c, ledger)
}

// assertSettledAndIntact checks what every apply after a kill must leave:
// no throttle, nothing reassigning, an empty next plan, every acknowledged
// record of the ledger and all of topic load readable.
func assertSettledAndIntact(t *testing.T, tf *terraformCLI, c *kafkatest.Cluster, ledger *ledger) {
	t.Helper()
	assertNoThrottles(t, c)
	if rs := reassigning(t, c); len(rs) > 0 {
		t.Errorf("%d partitions still reassigning after the apply", len(rs))
	}
	tf.mustRun(0, "plan", "-detailed-exitcode")
	if acked := ledger.stop(); acked == 0 {
		t.Fatal("no record was acknowledged, so none being lost proves nothing")
	}
	// Its callers kill terraform at most, never a broker or a controller:
	// verify allows no failed produce.
	ledger.verify(context.Background())
	assertTopicReadable(t, c, "load", 64<<20)
}

// The same kill, and then the user sets broker_count back to 3. The plan
// is not empty: it says the apply cancels the scale-out and drains the
// brokers it added. The apply ends with brokers 1-3 only, no throttle and
// nothing reassigning, every acknowledged record readable, and the next
// plan empty.
func TestAccClusterResource_sigkillThenRevert(t *testing.T) {
	testAccParallel(t)
	tf := newTerraformCLI(t)
	c, apiURL, ledger := startLoadedCluster(t)
	killed := killMidGroup(t, tf, c, apiURL)

	tf.configure(slowConfig(c.BootstrapServers(), apiURL, 3, "30m"))
	plan := tf.mustRun(2, "plan", "-detailed-exitcode")
	t.Logf("plan after the kill and the revert:\n%s", plan)
	matchAll(t, "the plan after the revert", plan,
		`Warning: An unfinished operation will be cancelled`,
		fmt.Sprintf(`cancels operation %s \(scale-out\): \d+ move\(s\) in flight are reverted, \d+ finished move\(s\) stay`, killed.ID),
		`brokers \[4 5\] are drained and removed, moving \d+ replicas`,
		fmt.Sprintf(`pending_operation\s+= "Operation %s \(scale-out to 5 brokers\) stopped in phase reassign.*" -> null`, killed.ID),
		`1 to change`,
	)

	tf.mustRun(0, "apply", "-auto-approve")
	last := loadOperation(t, c)
	if last.ID == killed.ID || last.Kind != executor.KindScaleIn || last.Phase != executor.PhaseCompleted {
		t.Errorf("the last operation is %s (%s, %s); want a new scale-in, completed, after the killed %s was cancelled",
			last.ID, last.Kind, last.Phase, killed.ID)
	}
	if !slices.Equal(last.RemoveBrokers, []int32{4, 5}) {
		t.Errorf("the scale-in removed %v; want the brokers the cancelled scale-out added, [4 5]", last.RemoveBrokers)
	}
	assertOnlyBrokers(t, c, brokerRange(3))
	// The drain of [4 5] cordoned them; nothing of it may outlive the apply.
	if ids, err := cordonedBrokers(context.Background(), c); err != nil || len(ids) > 0 {
		t.Errorf("after the cancel and the drain, brokers %v are still cordoned (err %v); want none", ids, err)
	}
	assertSettledAndIntact(t, tf, c, ledger)
}

// providerBuild is the provider binary the tests that drive a real
// Terraform CLI share: built once per test binary, not once per working
// directory, since each link of it cost 2 to 11 s of a loaded CPU.
var providerBuild struct {
	once sync.Once
	dir  string
	err  error
}

// builtProvider returns the directory holding this tree's provider binary,
// for dev_overrides: the module's bin/test-provider, a build artifact like
// the rest of bin/ (make clean removes it), written under another name and
// renamed so that no Terraform ever runs half a binary.
func builtProvider(t testing.TB) string {
	t.Helper()
	providerBuild.once.Do(func() {
		modRoot, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			providerBuild.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(modRoot)))
		dir := filepath.Join(root, "bin", "test-provider")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			providerBuild.err = err
			return
		}
		start := time.Now()
		partial := filepath.Join(dir, fmt.Sprintf(".building-%d", os.Getpid()))
		build := exec.Command("go", "build", "-o", partial, ".")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			os.Remove(partial)
			providerBuild.err = fmt.Errorf("building the provider: %w\n%s", err, out)
			return
		}
		if err := os.Rename(partial, filepath.Join(dir, "terraform-provider-kafkascale")); err != nil {
			providerBuild.err = err
			return
		}
		t.Logf("provider built in %s", time.Since(start).Round(time.Millisecond))
		providerBuild.dir = dir
	})
	if providerBuild.err != nil {
		t.Fatal(providerBuild.err)
	}
	return providerBuild.dir
}
