package kafkatest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ownerRecord is written to the sweep directory for every running cluster. A
// later Start that finds the owner dead kills the cluster's JVMs and removes
// its directory: the last line of defence when both the parent-death signal
// and the reaper were defeated (e.g. the whole process tree was SIGKILLed).
type ownerRecord struct {
	OwnerPID   int    `json:"owner_pid"`
	OwnerStart uint64 `json:"owner_start"`
	Dir        string `json:"dir"`
	RemoveDir  bool   `json:"remove_dir"`
}

// SweepDir holds one owner record per running cluster of this machine.
func SweepDir() string { return filepath.Join(os.TempDir(), "kafkascale-test") }

func writeOwnerRecord(dir string, removeDir bool) (path string, err error) {
	start, err := procStartTime(os.Getpid())
	if err != nil {
		return "", fmt.Errorf("reading this process's start time: %w", err)
	}
	var f *os.File
	err = inSweepDir(func() (err error) {
		f, err = os.CreateTemp(SweepDir(), fmt.Sprintf("owner-%d-*.json", os.Getpid()))
		return err
	})
	if err != nil {
		return "", err
	}
	rec := ownerRecord{OwnerPID: os.Getpid(), OwnerStart: start, Dir: dir, RemoveDir: removeDir}
	if err := json.NewEncoder(f).Encode(rec); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// inSweepDir makes the sweep directory and runs create in it, making the
// directory again when another process's last cluster removed it in
// between (removeOwnerRecord).
func inSweepDir(create func() error) error {
	for try := 0; ; try++ {
		if err := os.MkdirAll(SweepDir(), 0o755); err != nil {
			return err
		}
		err := create()
		if err == nil || !errors.Is(err, fs.ErrNotExist) || try == 2 {
			return err
		}
	}
}

// removeOwnerRecord removes a record, and the sweep directory once it
// holds none, so that no directory of ours outlives the last cluster. The
// directory's removal fails, harmlessly, while another record is there.
func removeOwnerRecord(path string) {
	os.Remove(path)
	os.Remove(SweepDir())
}

// sweepStale cleans up after clusters whose owner process died without
// stopping them. Errors are returned for the caller to log; they never stop
// a new cluster from starting.
func sweepStale(ctx context.Context) error {
	entries, err := os.ReadDir(SweepDir())
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []string
	var liveDirs []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "owner-") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(SweepDir(), e.Name())
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var rec ownerRecord
		if err := json.Unmarshal(raw, &rec); err != nil || rec.Dir == "" {
			// A record being written right now is not stale; only a
			// malformed one old enough to be abandoned is removed.
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
				os.Remove(path)
			}
			continue
		}
		if processAlive(rec.OwnerPID, rec.OwnerStart) {
			liveDirs = append(liveDirs, rec.Dir)
			continue
		}
		if err := KillNodeProcesses(ctx, rec.Dir); err != nil {
			errs = append(errs, err.Error())
			liveDirs = append(liveDirs, rec.Dir) // its JVMs may still write there
			continue
		}
		// Size-limited disks (Options.DiskBytes) go before the directory,
		// which cannot be removed while they are mounted.
		if err := unmountUnder(rec.Dir); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if rec.RemoveDir {
			if err := os.RemoveAll(rec.Dir); err != nil {
				errs = append(errs, err.Error())
				continue
			}
		}
		os.Remove(path)
	}
	// A mount whose record is gone (removed, or never written by a start
	// that died early) is found by its place under the temporary directory.
	if err := sweepMounts(liveDirs); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("sweeping clusters left by dead processes: %s", strings.Join(errs, "; "))
	}
	return nil
}

// reaperScript waits for EOF on stdin, which comes when the owner process
// exits however it exits (its end of the pipe is closed by the kernel), then
// unmounts the brokers' size-limited disks (Options.DiskBytes) and removes
// the cluster directory. The JVMs are gone by then (parent-death signal);
// the retries cover a JVM still writing during its last instant. Once the
// directory is gone, the owner record (the second argument, if any) has
// nothing left to sweep, and goes with the sweep directory if that is
// empty: a SIGKILLed owner leaves nothing in the temporary directory.
const reaperScript = `cat >/dev/null
awk -v d="$1/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
  umount -l "$m" 2>/dev/null
done
for i in 1 2 3 4 5; do
  rm -rf -- "$1" 2>/dev/null
  [ -e "$1" ] || break
  sleep 1
done
if [ -n "$2" ] && [ ! -e "$1" ]; then
  rm -f -- "$2"
  rmdir -- "${2%/*}" 2>/dev/null
fi
exit 0`

// startReaper starts the process that removes dir, then its owner record
// (record, "" for none), when this process dies.
// It runs in its own session so that a Ctrl-C aimed at `go test` does not
// reach it before it has done its work. Closing the returned pipe (done on
// Stop, after the directory is already gone) lets it exit.
func startReaper(dir, record string) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", reaperScript, "kafkascale-reaper", dir, record)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("starting the reaper for %s: %w", dir, err)
	}
	r.Close()
	// Reap the reaper when it exits while we live; if we die first, init does.
	go func() { _ = cmd.Wait() }()
	return w, nil
}
