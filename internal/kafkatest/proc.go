package kafkatest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const pollInterval = 200 * time.Millisecond

// NodeProcess is a running Kafka JVM found by its command line.
type NodeProcess struct {
	PID int
	// Args is the process's command line.
	Args []string
}

// FindNodeProcesses lists the running JVMs (kafka.Kafka or StorageTool) whose
// command line refers to a path inside dir. Node command lines carry their
// properties file and log directory, both under the cluster's directory, so
// this finds a cluster's JVMs even when their parent is long gone.
func FindNodeProcesses(dir string) ([]NodeProcess, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var found []NodeProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
		if !isKafkaJVM(args) {
			continue
		}
		for _, a := range args {
			if strings.Contains(a, prefix) {
				found = append(found, NodeProcess{PID: pid, Args: args})
				break
			}
		}
	}
	return found, nil
}

func isKafkaJVM(args []string) bool {
	for _, a := range args {
		if a == "kafka.Kafka" || a == "kafka.tools.StorageTool" {
			return true
		}
	}
	return false
}

// KillNodeProcesses SIGKILLs every JVM of the cluster in dir and waits until
// they are gone or ctx ends.
func KillNodeProcesses(ctx context.Context, dir string) error {
	for {
		procs, err := FindNodeProcesses(dir)
		if err != nil {
			return err
		}
		if len(procs) == 0 {
			return nil
		}
		for _, p := range procs {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return errors.New("JVMs of " + dir + " still running after SIGKILL: " + pidList(procs))
		}
	}
}

func pidList(procs []NodeProcess) string {
	s := make([]string, len(procs))
	for i, p := range procs {
		s[i] = strconv.Itoa(p.PID)
	}
	return strings.Join(s, ",")
}

// ProcessStartTime is the start time of pid in clock ticks since boot. With
// the pid it names one process for good; see ProcessAlive.
func ProcessStartTime(pid int) (uint64, error) { return procStartTime(pid) }

// ProcessAlive reports whether the process pid that started at start (from
// ProcessStartTime) still runs.
func ProcessAlive(pid int, start uint64) bool { return processAlive(pid, start) }

// procStartTime is the start time of pid in clock ticks since boot (field 22
// of /proc/pid/stat). Together with the pid it names one process for good:
// a pid reused by a later process has a later start time.
func procStartTime(pid int) (uint64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after it start after its last ')'.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/" + strconv.Itoa(pid) + "/stat")
	}
	fields := strings.Fields(string(raw[i+1:]))
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0, errors.New("short /proc/" + strconv.Itoa(pid) + "/stat")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// processAlive reports whether the process pid that started at start still
// runs (a zombie counts as gone).
func processAlive(pid int, start uint64) bool {
	got, err := procStartTime(pid)
	if err != nil || got != start {
		return false
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(raw, ')')
	return i >= 0 && len(raw) > i+2 && raw[i+2] != 'Z'
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
