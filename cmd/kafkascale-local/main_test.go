package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// The test binary doubles as the command: with this variable set it runs
// main, so `up` can re-exec it as the supervisor just as it does itself.
const asMainEnv = "KAFKASCALE_LOCAL_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

type result struct {
	code           int
	stdout, stderr string
}

func runCmd(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), asMainEnv+"=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", args, err)
	}
	return r
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestUpStatusDown(t *testing.T) {
	kafkatest.RequireAcceptance(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	token := []string{envToken + "=s3cret"}
	t.Cleanup(func() {
		if st, _ := readState(dir); st.supervisorAlive() {
			_ = syscall.Kill(st.SupervisorPID, syscall.SIGKILL)
		}
		runCmd(t, nil, "down", "--dir", dir)
	})

	up := runCmd(t, token, "up", "--dir", dir, "--brokers", "2", "--racks", "a,b", "--api-addr", addr)
	if up.code != 0 {
		t.Fatalf("up exited %d:\n%s%s", up.code, up.stdout, up.stderr)
	}
	t.Logf("up:\n%s", up.stdout)
	if !regexp.MustCompile(`bootstrap servers: 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+\n`).MatchString(up.stdout) ||
		!strings.Contains(up.stdout, "scaling API:       http://"+addr) {
		t.Errorf("up printed no bootstrap servers or API URL:\n%s", up.stdout)
	}
	st, err := readState(dir)
	if err != nil || !st.supervisorAlive() || !st.Ready {
		t.Fatalf("after up the state is %+v (%v), want a ready, live supervisor", st, err)
	}
	// The token must not be visible in the supervisor's command line.
	if cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.SupervisorPID), "cmdline")); bytes.Contains(cmdline, []byte("s3cret")) {
		t.Error("the token is in the supervisor's command line")
	}

	again := runCmd(t, token, "up", "--dir", dir)
	if again.code != 0 || !strings.Contains(again.stdout, "already up") {
		t.Errorf("a second up = %d %q, want 0 and 'already up'", again.code, again.stdout)
	}

	status := runCmd(t, token, "status", "--dir", dir)
	if status.code != 0 {
		t.Fatalf("status exited %d:\n%s%s", status.code, status.stdout, status.stderr)
	}
	t.Logf("status:\n%s", status.stdout)
	for _, row := range []string{`(?m)^1\s+a\s+127\.0\.0\.1:\d+\s+RUNNING\s+unfenced$`, `(?m)^2\s+b\s+127\.0\.0\.1:\d+\s+RUNNING\s+unfenced$`} {
		if !regexp.MustCompile(row).MatchString(status.stdout) {
			t.Errorf("status has no row matching %s:\n%s", row, status.stdout)
		}
	}
	anon := runCmd(t, []string{envToken + "="}, "status", "--dir", dir)
	if anon.code != 0 || !strings.Contains(anon.stdout, "401") || !strings.Contains(anon.stdout, "unfenced") {
		t.Errorf("status without the token = %d, want Kafka's view and the API's 401:\n%s", anon.code, anon.stdout)
	}

	down := runCmd(t, nil, "down", "--dir", dir)
	if down.code != 0 || !strings.Contains(down.stdout, "is down") {
		t.Fatalf("down = %d:\n%s%s", down.code, down.stdout, down.stderr)
	}
	assertNothingLeft(t, dir, st)

	down = runCmd(t, nil, "down", "--dir", dir)
	if down.code != 0 || !strings.Contains(down.stdout, "Nothing was running") {
		t.Errorf("a second down = %d %q, want 0 and 'Nothing was running'", down.code, down.stdout)
	}
}

// TestKilledSupervisorTakesItsJVMs kills the supervisor outright: its JVMs
// must die with it, and down must still clean up.
func TestKilledSupervisorTakesItsJVMs(t *testing.T) {
	kafkatest.RequireAcceptance(t)
	dir := t.TempDir()
	t.Cleanup(func() { runCmd(t, nil, "down", "--dir", dir) })
	up := runCmd(t, nil, "up", "--dir", dir, "--brokers", "1", "--racks", "a", "--api-addr", freeAddr(t))
	if up.code != 0 {
		t.Fatalf("up exited %d:\n%s%s", up.code, up.stdout, up.stderr)
	}
	st, err := readState(dir)
	if err != nil || st == nil {
		t.Fatalf("no state after up: %v", err)
	}
	if procs, _ := kafkatest.FindNodeProcesses(clusterDir(dir)); len(procs) != 2 {
		t.Fatalf("the cluster runs %d JVMs, want a controller and a broker", len(procs))
	}
	if err := syscall.Kill(st.SupervisorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		procs, _ := kafkatest.FindNodeProcesses(clusterDir(dir))
		if len(procs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("JVMs %v outlive their killed supervisor", procs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	down := runCmd(t, nil, "down", "--dir", dir)
	if down.code != 0 {
		t.Fatalf("down after a killed supervisor = %d:\n%s%s", down.code, down.stdout, down.stderr)
	}
	assertNothingLeft(t, dir, st)
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nope"},
		{"up", "--brokers", "0"},
		{"up", "--racks", "a,,b"},
		{"up", "--api-addr", "0.0.0.0:7070"},
		{"status", "extra"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}

func assertNothingLeft(t *testing.T, dir string, st *state) {
	t.Helper()
	if st.supervisorAlive() {
		t.Errorf("the supervisor (pid %d) still runs", st.SupervisorPID)
	}
	if procs, _ := kafkatest.FindNodeProcesses(dir); len(procs) != 0 {
		t.Errorf("JVMs %v remain", procs)
	}
	for _, p := range []string{clusterDir(dir), statePath(dir)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s remains (%v)", p, err)
		}
	}
}
