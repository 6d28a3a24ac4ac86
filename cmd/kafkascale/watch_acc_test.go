package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// buildCommand builds kafkascale into a temporary directory, as a user
// runs it: a separate process.
func buildCommand(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kafkascale")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building kafkascale: %v\n%s", err, out)
	}
	return bin
}

type cmdResult struct {
	code           int
	stdout, stderr string
}

func runBinary(ctx context.Context, t *testing.T, bin string, args ...string) cmdResult {
	t.Helper()
	return runCmd(t, exec.CommandContext(ctx, bin, args...))
}

// runCmd runs the command to its end; an exit code is a result, a failure
// to run it fails the test.
func runCmd(t *testing.T, cmd *exec.Cmd) cmdResult {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cmdResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running kafkascale %v: %v", cmd.Args[1:], err)
	}
	return r
}

var shownBytes = regexp.MustCompile(`(\d+(?:\.\d)?) (B|KiB|MiB|GiB)/(\d+(?:\.\d)?) (B|KiB|MiB|GiB)  `)

func parseBytes(num, unit string) int64 {
	v, _ := strconv.ParseFloat(num, 64)
	return int64(v * float64(map[string]int64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]))
}

// TestAccWatchFollowsScaleOut runs a real scale-out 3 -> 4 with the
// executor while `kafkascale watch` follows it from another process, and
// checks the three errors a user meets first.
func TestAccWatchFollowsScaleOut(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3})
	bin := buildCommand(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	servers := "--bootstrap-servers=" + strings.Join(c.BootstrapServers(), ",")

	// An unreachable cluster: a port just closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	r := runBinary(ctx, t, bin, "operations", "--bootstrap-servers="+closed, "--request-timeout=3s")
	if r.code != 1 || !strings.Contains(r.stderr, "no answer from the Kafka cluster at "+closed+" within 3s") {
		t.Fatalf("unreachable cluster: exit %d, stderr %q", r.code, r.stderr)
	}

	// A fresh cluster: no operation has run.
	const noTopic = "kafkascale: no kafkascale operation has run on this cluster: topic __kafkascale_operations does not exist\n"
	for _, args := range [][]string{{"operations"}, {"watch"}, {"operation", "show", "op-x"}} {
		if r := runBinary(ctx, t, bin, append(args, servers)...); r.code != 1 || r.stderr != noTopic {
			t.Fatalf("%v on a fresh cluster: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}

	// 48 MiB on 8 partitions, 3 replicas each: the new broker takes about
	// a quarter of the replicas, copied at 3 MiB/s.
	const throttle = 3 << 20
	if resp, err := c.Admin().CreateTopic(ctx, 8, 3, nil, "load"); err != nil || resp.Err != nil {
		t.Fatalf("creating topic load: %v %v", err, resp.Err)
	}
	if _, err := kafkatest.Fill(ctx, c.BootstrapServers(), "load", 48<<20); err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The pre-check refuses under-replicated partitions: let every
	// follower catch up with the fill first.
	for deadline := time.Now().Add(time.Minute); ; {
		ps, err := cl.Port().Partitions(ctx)
		ready := err == nil && len(ps) >= 8
		for _, p := range ps {
			ready = ready && p.Leader >= 0 && len(p.ISR) == len(p.Replicas)
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partitions not in sync after a minute: %v %+v", err, ps)
		}
		time.Sleep(200 * time.Millisecond)
	}

	opts := engine.DefaultOptions()
	opts.ThrottleBytesPerSec = throttle
	opts.MaxMovesPerBroker = 2
	store := cl.Operations()
	ex := executor.New(executor.Deps{Kafka: cl.Port(), Scaler: kafkatest.Scaler{C: c}, Store: store}, executor.Settings{PollInterval: 500 * time.Millisecond})
	key := "cluster/" + c.ClusterID()
	type scaled struct {
		op  *executor.Operation
		err error
	}
	done := make(chan scaled, 1)
	go func() {
		op, err := ex.Scale(ctx, executor.ScaleRequest{Key: key, ID: "op-acc", TargetBrokerCount: 4, Options: opts, InitialThrottle: throttle})
		done <- scaled{op, err}
	}()

	// Start watching once the operation is recorded, unfinished: the
	// watch follows a running operation, it does not wait for one.
	for {
		op, err := store.Load(ctx, key)
		if err == nil && op != nil && !op.Done() {
			break
		}
		select {
		case s := <-done:
			t.Fatalf("the scale-out ended before the watch could start: %v", s.err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	watch := exec.CommandContext(ctx, bin, "watch", servers)
	var wout, werr bytes.Buffer
	watch.Stdout, watch.Stderr = &wout, &werr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	s := <-done
	if s.err != nil {
		t.Fatalf("scale-out: %v", s.err)
	}
	werrc := make(chan error, 1)
	go func() { werrc <- watch.Wait() }()
	var waitErr error
	select {
	case waitErr = <-werrc:
	case <-time.After(30 * time.Second):
		t.Fatalf("watch still running 30s after the operation completed:\n%s", wout.String())
	}
	t.Logf("watch output:\n%s", wout.String())
	// Its output is a pipe, not a terminal: plain lines, no bar.
	if strings.Contains(wout.String(), "\r") {
		t.Fatalf("watch into a pipe drew a progress bar:\n%q", wout.String())
	}
	if waitErr != nil {
		t.Fatalf("watch exited with %v, want 0; stderr %q", waitErr, werr.String())
	}
	if !strings.Contains(wout.String(), "operation op-acc completed at ") {
		t.Fatalf("watch did not report the completion:\n%s", wout.String())
	}

	// The bytes shown rise while the groups copy, and end at the total.
	var seen []int64
	var total int64
	for _, m := range shownBytes.FindAllStringSubmatch(wout.String(), -1) {
		b := parseBytes(m[1], m[2])
		total = parseBytes(m[3], m[4])
		if len(seen) > 0 && b < seen[len(seen)-1] {
			t.Fatalf("the bytes shown went down from %d to %d:\n%s", seen[len(seen)-1], b, wout.String())
		}
		if len(seen) == 0 || b != seen[len(seen)-1] {
			seen = append(seen, b)
		}
	}
	// One decimal of MiB: the figures shown are rounded.
	if diff := total - s.op.Plan.TotalBytes; len(seen) < 3 || seen[len(seen)-1] != total || diff > 1<<20 || diff < -(1<<20) {
		t.Fatalf("bytes shown %v of %d (plan: %d), want at least 3 rising values ending at the total:\n%s", seen, total, s.op.Plan.TotalBytes, wout.String())
	}
	t.Logf("bytes shown: %v of %d, plan %d bytes in %d group(s)", seen, total, s.op.Plan.TotalBytes, len(s.op.Plan.Groups))

	// The list shows it completed, and an unknown id names the known ones.
	r = runBinary(ctx, t, bin, "operations", servers)
	if r.code != 0 || !regexp.MustCompile(`(?m)^op-acc\s+`+regexp.QuoteMeta(key)+`\s+scale-out\s+completed\s+`).MatchString(r.stdout) {
		t.Fatalf("operations: exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
	t.Logf("kafkascale operations:\n%s", r.stdout)
	r = runBinary(ctx, t, bin, "operation", "show", "op-nope", servers)
	if want := `kafkascale: no operation has the id or key "op-nope"; the recorded ones are: op-acc (` + key + ")\n"; r.code != 1 || r.stderr != want {
		t.Fatalf("unknown id: exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	r = runBinary(ctx, t, bin, "operation", "show", "op-acc", servers)
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("plan: %d move(s) in %d group(s)", len(s.op.Plan.Moves()), len(s.op.Plan.Groups))) {
		t.Fatalf("show: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	// With the operation over, a watch says so and exits 0.
	r = runBinary(ctx, t, bin, "watch", servers)
	if r.code != 0 || !strings.Contains(r.stdout, "no unfinished operation; the last one, op-acc") {
		t.Fatalf("watch after the end: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
