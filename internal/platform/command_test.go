//go:build unix

package platform_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

// record is a command that writes what it was given, by env and by argv, to
// a file, so that the test reads what the program really saw.
func record(out, tag string) []string {
	return []string{"sh", "-c",
		`printf '%s env=%s/%s argv=%s/%s' "$0" "$KAFKASCALE_BROKER_COUNT" "$KAFKASCALE_REMOVE_BROKER_IDS" "$1" "$2" > "` + out + `"`,
		tag, "--count={broker_count}", "ids[{remove_broker_ids}]"}
}

func TestCommandScalerPassesTheTargetByEnvAndPlaceholders(t *testing.T) {
	dir := t.TempDir()
	up, down := filepath.Join(dir, "up"), filepath.Join(dir, "down")
	s := &platform.CommandScaler{ScaleUp: record(up, "UP"), ScaleDown: record(down, "DOWN")}

	if err := s.ScaleTo(context.Background(), 5, nil); err != nil {
		t.Fatalf("scale up: %v", err)
	}
	if err := s.ScaleTo(context.Background(), 3, []int32{4, 5}); err != nil {
		t.Fatalf("scale down: %v", err)
	}
	for file, want := range map[string]string{
		up:   "UP env=5/ argv=--count=5/ids[]",
		down: "DOWN env=3/4,5 argv=--count=3/ids[4,5]",
	} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("the command did not run: %v", err)
		}
		if string(got) != want {
			t.Errorf("%s saw %q, want %q", filepath.Base(file), got, want)
		}
	}
}

// A replacement runs scale_up with the replaced brokers named, so the
// command can start their successors where they ran; the same arguments to
// ScaleTo, once they are drained, run scale_down.
func TestCommandScalerReplaceRunsScaleUpWithTheIDs(t *testing.T) {
	dir := t.TempDir()
	up, down := filepath.Join(dir, "up"), filepath.Join(dir, "down")
	s := &platform.CommandScaler{ScaleUp: record(up, "UP"), ScaleDown: record(down, "DOWN")}
	if err := s.ReplaceBrokers(context.Background(), 4, []int32{4}); err != nil {
		t.Fatalf("replace: %v", err)
	}
	if err := s.ScaleTo(context.Background(), 4, []int32{4}); err != nil {
		t.Fatalf("remove the replaced broker: %v", err)
	}
	for file, want := range map[string]string{
		up:   "UP env=4/4 argv=--count=4/ids[4]",
		down: "DOWN env=4/4 argv=--count=4/ids[4]",
	} {
		if got, err := os.ReadFile(file); err != nil || string(got) != want {
			t.Errorf("%s saw %q (%v), want %q", filepath.Base(file), got, err, want)
		}
	}
	if err := (&platform.CommandScaler{ScaleDown: record(down, "DOWN")}).ReplaceBrokers(context.Background(), 4, []int32{4}); err == nil ||
		!strings.Contains(err.Error(), "set scaling.command.scale_up") {
		t.Errorf("replace without scale_up: %v; want an error naming scale_up", err)
	}
}

func TestCommandScalerRunsNoShell(t *testing.T) {
	// Shell syntax in an argv element reaches the program as it is.
	out := filepath.Join(t.TempDir(), "args")
	s := &platform.CommandScaler{ScaleUp: []string{"sh", "-c", `printf '%s' "$1" > "` + out + `"`, "sh", "$(echo no); {broker_count}"}}
	if err := s.ScaleTo(context.Background(), 2, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); string(got) != "$(echo no); 2" {
		t.Errorf("argument = %q", got)
	}
}

func TestCommandScalerFailureCarriesExitStatusAndOutputTail(t *testing.T) {
	// 10,000 bytes of noise, then the reason: only the end is kept.
	script := `i=0; while [ $i -lt 100 ]; do printf '%099d\n' $i; i=$((i+1)); done; echo "error: replicas 3 > nodes 2" >&2; exit 3`
	s := &platform.CommandScaler{ScaleUp: []string{"sh", "-c", script}}

	err := s.ScaleTo(context.Background(), 6, nil)
	var ce *platform.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a CommandError", err)
	}
	if ce.ExitCode != 3 || ce.Which != "scale_up" || ce.Program != "sh" {
		t.Errorf("CommandError = %+v", ce)
	}
	if !strings.HasPrefix(err.Error(), `scale_up command "sh" exited with status 3 after `) ||
		!strings.HasSuffix(err.Error(), "error: replicas 3 > nodes 2") {
		t.Errorf("err = %v", err)
	}
	if len(ce.Output) > 4096+len("…") || !strings.HasPrefix(ce.Output, "…") {
		t.Errorf("output kept = %d bytes starting %q, want the last 4096 marked as cut", len(ce.Output), ce.Output[:10])
	}
}

func TestCommandScalerMissingProgramAndMissingCommand(t *testing.T) {
	s := &platform.CommandScaler{ScaleUp: []string{"kafkascale-no-such-program-7f2"}}
	err := s.ScaleTo(context.Background(), 4, nil)
	if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), `scale_up command "kafkascale-no-such-program-7f2" failed`) {
		t.Errorf("err = %v, want exec.ErrNotFound named", err)
	}

	err = s.ScaleTo(context.Background(), 2, []int32{3, 4})
	want := "scaling to 2 brokers, removing broker(s) 3,4: the scale_down command is not set, so kafkascale cannot ask for it; set scaling.command.scale_down"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if got := s.Describe(); got != `command: scale_up runs "kafkascale-no-such-program-7f2", scale_down runs (not set)` {
		t.Errorf("Describe = %q", got)
	}
}

func TestCommandScalerCancelKillsTheProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The script starts a child and waits on it: cancelling must kill both.
	s := &platform.CommandScaler{ScaleUp: []string{"sh", "-c", `sleep 60 & echo $! > "` + pidFile + `"; wait`}}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.ScaleTo(ctx, 4, nil) }()

	child := waitForPID(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	cancel()

	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("ScaleTo did not return after cancel")
	}
	var ce *platform.CommandError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ce) || !strings.Contains(err.Error(), "its process group killed") {
		t.Errorf("err = %v, want a CommandError wrapping context.Canceled", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the script's child %d outlived the cancel", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCommandScalerReturnsWhenABackgroundChildKeepsTheOutput(t *testing.T) {
	// A scale_up that starts a broker in the background and exits 0: the
	// broker keeps stdout open, and ScaleTo must not wait on it forever.
	pidFile := filepath.Join(t.TempDir(), "pid")
	logs := &logCapture{}
	s := &platform.CommandScaler{
		ScaleUp: []string{"sh", "-c", `sleep 60 & echo $! > "` + pidFile + `"; echo started; exit 0`},
		Logger:  logs.fn,
	}
	err := s.ScaleTo(context.Background(), 4, nil)
	child := waitForPID(t, pidFile)
	defer func() { _ = syscall.Kill(child, syscall.SIGKILL) }()

	if err != nil {
		t.Fatalf("ScaleTo = %v, want success: the command exited 0", err)
	}
	if !strings.Contains(logs.text(), "still holds its output") {
		t.Errorf("no warning about the held output:\n%s", logs.text())
	}
	if !alive(child) {
		t.Error("the background child was killed after a successful command")
	}
}

func waitForPID(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the script never wrote %s", file)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive treats a zombie as dead: killed and only waiting to be reaped.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
