package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

const upTimeout = 5 * time.Minute

func cmdUp(args []string, stdout io.Writer) error {
	var f clusterFlags
	fs := newFlagSet("up")
	f.register(fs)
	token := fs.String("token", "", "bearer token the scaling API requires (default $"+envToken+"; empty: no authentication)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	dir, err := absDir(f.dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	st, err := readState(dir)
	if err != nil {
		return err
	}
	if st.supervisorAlive() {
		fmt.Fprintf(stdout, "A cluster is already up in %s (supervisor pid %d); `kafkascale-local down --dir %s` stops it.\n", dir, st.SupervisorPID, f.dir)
		if st.Ready {
			printReady(stdout, st)
		}
		return nil
	}
	// Whatever a dead supervisor left behind goes first.
	if err := cleanup(context.Background(), dir); err != nil {
		return err
	}

	// Kafka is fetched here, in the foreground, so that a first run shows
	// Maven's progress problems to the user rather than in the log.
	if _, err := kafkatest.EnsureKafka(context.Background()); err != nil {
		return err
	}

	self, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(logPath(dir), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()

	cmd := exec.Command(self, "serve", "--dir", dir, "--brokers", strconv.Itoa(f.brokers),
		"--racks", f.racks, "--api-addr", f.apiAddr, "--cluster-id", f.clusterID)
	// The token travels in the environment, not in argv where ps shows it.
	cmd.Env = os.Environ()
	if *token != "" {
		cmd.Env = append(cmd.Env, envToken+"="+*token)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logFile, logFile
	// A session of its own: the terminal's Ctrl-C and hangup do not reach
	// it, and it outlives this command.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the supervisor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	deadline := time.After(upTimeout)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("the supervisor exited before the cluster was ready (%v); the end of %s:\n%s",
				err, logPath(dir), logTail(dir, 30))
		case <-deadline:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			stopped := "stopped on SIGTERM"
			select {
			case err := <-exited:
				if err != nil {
					stopped = fmt.Sprintf("stopped on SIGTERM: %v", err)
				}
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				stopped = "killed after a minute of ignoring SIGTERM"
			}
			return fmt.Errorf("the cluster was not ready within %v (the supervisor %s); the end of %s:\n%s", upTimeout, stopped, logPath(dir), logTail(dir, 30))
		case <-time.After(200 * time.Millisecond):
		}
		st, err := readState(dir)
		if err == nil && st != nil && st.Ready && st.SupervisorPID == cmd.Process.Pid {
			printReady(stdout, st)
			fmt.Fprintf(stdout, "supervisor pid %d, log %s\n", st.SupervisorPID, logPath(dir))
			return nil
		}
	}
}

func printReady(w io.Writer, st *state) {
	fmt.Fprintf(w, "Kafka %s cluster %q is up: %d brokers in racks %s\n", kafkatest.KafkaVersion, st.ClusterID, st.InitialBrokers, strings.Join(st.Racks, ","))
	fmt.Fprintf(w, "bootstrap servers: %s\n", strings.Join(st.BootstrapServer, ","))
	fmt.Fprintf(w, "scaling API:       %s (cluster id %q)\n", st.APIURL, st.ClusterID)
}

func logTail(dir string, n int) string {
	raw, err := os.ReadFile(logPath(dir))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cleanup removes what a cluster in dir left behind: its JVMs, its files
// and its state. The supervisor's log stays for reading.
func cleanup(ctx context.Context, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := kafkatest.KillNodeProcesses(ctx, clusterDir(dir)); err != nil {
		return err
	}
	if err := os.RemoveAll(clusterDir(dir)); err != nil {
		return err
	}
	if err := os.Remove(statePath(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
