package platform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Environment variables and argv placeholders through which CommandScaler
// hands the target to the command.
const (
	EnvBrokerCount       = "KAFKASCALE_BROKER_COUNT"
	EnvRemoveBrokerIDs   = "KAFKASCALE_REMOVE_BROKER_IDS"
	PlaceholderCount     = "{broker_count}"
	PlaceholderRemoveIDs = "{remove_broker_ids}"
)

const (
	// outputTail is how much of a command's combined output is kept for
	// its error: the end is where the reason usually is.
	outputTail = 4096
	// commandWaitDelay bounds the wait for a command's output after it
	// exited (or was killed). A program it started in the background that
	// keeps stdout open would otherwise hold ScaleTo forever.
	commandWaitDelay = 3 * time.Second
)

// CommandScaler scales by running a program, for users of kubectl, Strimzi
// or Ansible. Each command is an argv list, run without a shell.
//
// ScaleDown runs when brokers are named for removal, ScaleUp otherwise. The
// command gets the target broker count and the ids to remove (comma
// separated, empty on a scale-up) twice: in the environment variables
// KAFKASCALE_BROKER_COUNT and KAFKASCALE_REMOVE_BROKER_IDS, and in place of
// the placeholders {broker_count} and {remove_broker_ids} in any argv
// element. It inherits the provider's environment otherwise.
//
// Exit status 0 is success; the executor then waits, through Kafka, for the
// brokers to register or leave. A non-zero status is an error carrying the
// tail of the combined output. It is never retried: the command may have
// done part of its work. When ctx ends, the command's whole process group is
// killed (SIGKILL on Unix), so that nothing it started outlives the apply.
type CommandScaler struct {
	ScaleUp   []string
	ScaleDown []string
	// Logger receives a line when a command starts and ends. Nil discards.
	// The argv is not logged, since it may hold credentials; only the
	// program name is.
	Logger LogFunc
}

// CommandError is a command that could not start, exited non-zero, or was
// stopped because ctx ended (then Err wraps ctx.Err()).
type CommandError struct {
	Which    string // "scale_up" or "scale_down"
	Program  string // argv[0]
	ExitCode int    // -1 when it did not exit by itself
	Elapsed  time.Duration
	Output   string // tail of the combined stdout and stderr
	Err      error
}

func (e *CommandError) Error() string {
	var b strings.Builder
	switch {
	case e.ExitCode > 0:
		fmt.Fprintf(&b, "%s command %q exited with status %d after %s", e.Which, e.Program, e.ExitCode, e.Elapsed.Round(time.Millisecond))
	default:
		fmt.Fprintf(&b, "%s command %q failed after %s: %v", e.Which, e.Program, e.Elapsed.Round(time.Millisecond), e.Err)
	}
	if e.Output != "" {
		fmt.Fprintf(&b, "; its output ends with:\n%s", e.Output)
	} else {
		b.WriteString("; it printed nothing")
	}
	return b.String()
}

func (e *CommandError) Unwrap() error { return e.Err }

// ScaleTo runs ScaleDown when removeBrokerIDs is not empty and ScaleUp
// otherwise, and returns a *CommandError when it fails.
func (s *CommandScaler) ScaleTo(ctx context.Context, brokerCount int, removeBrokerIDs []int32) error {
	if brokerCount < 1 {
		return fmt.Errorf("broker count %d is not positive; a cluster needs at least one broker", brokerCount)
	}
	which, argv := "scale_up", s.ScaleUp
	if len(removeBrokerIDs) > 0 {
		which, argv = "scale_down", s.ScaleDown
	}
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("%s: the %s command is not set, so kafkascale cannot ask for it; set scaling.command.%s", scaleWhat(brokerCount, removeBrokerIDs), which, which)
	}
	return s.run(ctx, which, argv, brokerCount, removeBrokerIDs)
}

func (s *CommandScaler) run(ctx context.Context, which string, argv []string, brokerCount int, removeBrokerIDs []int32) error {
	count, ids := strconv.Itoa(brokerCount), joinIDs(removeBrokerIDs)
	args := make([]string, len(argv))
	for i, a := range argv {
		a = strings.ReplaceAll(a, PlaceholderCount, count)
		args[i] = strings.ReplaceAll(a, PlaceholderRemoveIDs, ids)
	}

	return runCommand(ctx, logger{ctx: ctx, fn: s.Logger}, which, args,
		[]string{EnvBrokerCount + "=" + count, EnvRemoveBrokerIDs + "=" + ids},
		map[string]any{"broker_count": brokerCount, "remove_broker_ids": ids})
}

// ReplaceBrokers asks for brokers to replace removeBrokerIDs, the count
// staying brokerCount: it runs ScaleUp, with the ids of the brokers being
// replaced in KAFKASCALE_REMOVE_BROKER_IDS and {remove_broker_ids}, so the
// command can start the new brokers where the old ones ran. Once they are
// drained, ScaleTo with the same arguments runs ScaleDown to remove them.
func (s *CommandScaler) ReplaceBrokers(ctx context.Context, brokerCount int, removeBrokerIDs []int32) error {
	if len(s.ScaleUp) == 0 || s.ScaleUp[0] == "" {
		return fmt.Errorf("replacing broker(s) %s: the scale_up command is not set, so kafkascale cannot ask for new brokers; set scaling.command.scale_up", joinIDs(removeBrokerIDs))
	}
	return s.run(ctx, "scale_up", s.ScaleUp, brokerCount, removeBrokerIDs)
}

// runCommand runs argv without a shell, with env added to the provider's
// environment, and returns a *CommandError naming the command as which when
// it fails. The argv is not logged, since it may hold credentials; only the
// program name and fields are.
func runCommand(ctx context.Context, lg logger, which string, args, env []string, fields map[string]any) error {
	out := &tailBuffer{max: outputTail}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = commandWaitDelay
	killGroupOnCancel(cmd)

	with := func(more map[string]any) map[string]any {
		m := map[string]any{"command": which, "program": args[0]}
		for k, v := range fields {
			m[k] = v
		}
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	lg.log(LogInfo, "running "+which+" command", with(nil))
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)

	if err != nil && errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil {
		// It exited 0, but something it started kept the output open.
		lg.log(LogWarn, which+" command exited, but a process it started still holds its output; not waiting for it", with(nil))
		err = nil
	}
	if err == nil {
		lg.log(LogInfo, which+" command done", with(map[string]any{"elapsed": elapsed.Round(time.Millisecond).String()}))
		return nil
	}
	ce := &CommandError{Which: which, Program: args[0], ExitCode: -1, Elapsed: elapsed, Output: out.String(), Err: err}
	if ctxErr := ctx.Err(); ctxErr != nil {
		ce.Err = fmt.Errorf("stopped, and its process group killed: %w", ctxErr)
	} else if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		ce.ExitCode = ee.ExitCode()
	}
	lg.log(LogWarn, which+" command failed", with(map[string]any{"exit_code": ce.ExitCode, "error": err}))
	return ce
}

// Describe names the programs, not their arguments, which may hold secrets.
func (s *CommandScaler) Describe() string {
	name := func(argv []string) string {
		if len(argv) == 0 {
			return "(not set)"
		}
		return strconv.Quote(argv[0])
	}
	return fmt.Sprintf("command: scale_up runs %s, scale_down runs %s", name(s.ScaleUp), name(s.ScaleDown))
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.truncated = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(strings.ToValidUTF8(string(t.buf), ""))
	if t.truncated && s != "" {
		s = "…" + s
	}
	return s
}
