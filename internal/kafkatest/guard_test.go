package kafkatest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The helper process modes re-run this test binary as a process that the
// test then kills, to prove what survives an owner's death.
const helperEnv = "KAFKATEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		Main(m, nil)
	case "reaper":
		helperReaper()
	case "reaper-disk":
		helperReaperDisk()
	case "cluster":
		helperCluster()
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

// helperReaper starts a reaper for a new directory, prints the directory
// and waits to be killed.
func helperReaper() {
	dir, err := os.MkdirTemp("", "kafkatest-reaper-")
	if err != nil {
		panic(err)
	}
	os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644)
	if _, err := startReaper(dir, ""); err != nil {
		panic(err)
	}
	fmt.Println(dir)
	time.Sleep(time.Hour)
}

// helperCluster starts a one-broker cluster, prints its directory and waits
// to be killed.
func helperCluster() {
	c, err := Start(context.Background(), Options{Brokers: 1, Racks: []string{"a"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(c.Dir())
	time.Sleep(time.Hour)
}

// startHelper runs the helper and returns it with the directory it printed.
func startHelper(t *testing.T, mode string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper %s printed no directory: %v", mode, err)
	}
	return cmd, strings.TrimSpace(line)
}

func waitGone(t *testing.T, dir string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		procs, err := FindNodeProcesses(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, statErr := os.Stat(dir)
		if len(procs) == 0 && os.IsNotExist(statErr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after the owner died: JVMs %v remain, directory stat error %v", within, procs, statErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestReaperRemovesDirWhenOwnerIsKilled(t *testing.T) {
	cmd, dir := startHelper(t, "reaper")
	if _, err := os.Stat(filepath.Join(dir, "file")); err != nil {
		t.Fatalf("helper did not create %s: %v", dir, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, dir, 10*time.Second)
}

// TestClusterDiesWithOwner kills a process that runs a real cluster with
// SIGKILL, so that no cleanup of its own runs: the parent-death signal must
// end its JVMs and the reaper must remove its directory.
func TestClusterDiesWithOwner(t *testing.T) {
	RequireAcceptance(t)
	cmd, dir := startHelper(t, "cluster")
	procs, err := FindNodeProcesses(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) != 2 {
		t.Fatalf("the helper's cluster runs %d JVMs, want a controller and a broker", len(procs))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, dir, 20*time.Second)
}

// TestSweepCleansUpAfterDeadOwner plays a cluster whose owner, reaper and
// parent-death signal all failed: a record names a dead owner, and a process
// that looks like one of its nodes still runs.
func TestSweepCleansUpAfterDeadOwner(t *testing.T) {
	dir, err := os.MkdirTemp("", "kafkatest-sweep-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	props := filepath.Join(dir, "broker-1", "node.properties")
	// A stand-in for a JVM: its command line has the marks FindNodeProcesses
	// looks for. The trailing "; true" keeps sh from exec'ing sleep.
	node := exec.Command("/bin/sh", "-c", "sleep 300; true", "kafka.Kafka", props)
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = node.Wait(); close(exited) }()
	t.Cleanup(func() { _ = node.Process.Kill(); <-exited })

	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(SweepDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(SweepDir(), fmt.Sprintf("owner-%d-test.json", dead.Process.Pid))
	raw, _ := json.Marshal(ownerRecord{OwnerPID: dead.Process.Pid, OwnerStart: 1, Dir: dir, RemoveDir: true})
	if err := os.WriteFile(record, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeOwnerRecord(record) })

	// sh forks before it execs sleep, and for that moment the child has
	// sh's command line too: wait until only the stand-in is left.
	var procs []NodeProcess
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		procs, _ = FindNodeProcesses(dir)
		if len(procs) == 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(procs) != 1 {
		t.Fatalf("FindNodeProcesses(%s) = %v, want the stand-in node", dir, procs)
	}
	if err := sweepStale(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the sweep left the dead owner's node running")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the sweep left the dead owner's directory: %v", err)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Errorf("the sweep left the record: %v", err)
	}
}

func TestProcStartTimeNamesOneProcess(t *testing.T) {
	self, err := procStartTime(os.Getpid())
	if err != nil || self == 0 {
		t.Fatalf("procStartTime(self) = %d, %v", self, err)
	}
	if !processAlive(os.Getpid(), self) {
		t.Error("this process is not alive by its own start time")
	}
	if processAlive(os.Getpid(), self+1) {
		t.Error("a different start time must name a different process")
	}
}

// The last cluster's record takes the sweep directory with it: no
// directory of ours outlives the tests. Records of other processes' running
// clusters may keep it, never empty.
func TestLastOwnerRecordTakesTheSweepDir(t *testing.T) {
	path, err := writeOwnerRecord(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	removeOwnerRecord(path)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("record %s is still there: %v", path, err)
	}
	if entries, err := os.ReadDir(SweepDir()); err == nil && len(entries) == 0 {
		t.Fatalf("%s is left empty", SweepDir())
	}
}
