package streamstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

// appDirRel is the Maven project's place in the repository.
const appDirRel = "test/streams-app"

// AppDir returns the Maven project's directory, found by walking up from the
// working directory (go test runs in the package directory).
func AppDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		candidate := filepath.Join(dir, appDirRel)
		if _, err := os.Stat(filepath.Join(candidate, "pom.xml")); err == nil {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("streamstest: no %s/pom.xml above the working directory", appDirRel)
		}
		dir = parent
	}
}

// Build packages the Streams app with Maven and returns the path of its
// runnable jar. It builds only when pom.xml or a file under src/ changed
// since the last build (a hash of them is kept beside the jar), and
// concurrent callers, in this process or another, build once.
func Build(ctx context.Context) (string, error) {
	dir, err := AppDir()
	if err != nil {
		return "", err
	}
	target := filepath.Join(dir, "target")
	if err := os.MkdirAll(target, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, filepath.Join(target, ".build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()

	jar := filepath.Join(target, "streams-app.jar")
	stamp := jar + ".inputs"
	sum, err := inputsHash(dir)
	if err != nil {
		return "", err
	}
	if old, err := os.ReadFile(stamp); err == nil && string(old) == sum {
		if _, err := os.Stat(jar); err == nil {
			return jar, nil
		}
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("streamstest: building %s needs Maven (mvn) on PATH: %w", dir, err)
	}
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-f", filepath.Join(dir, "pom.xml"), "package", "-DskipTests")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	began := time.Now()
	// The parent-death signal follows the forking thread, not the process;
	// holding the thread for the whole build ties it to this process.
	runtime.LockOSThread()
	err = cmd.Run()
	runtime.UnlockOSThread()
	if err != nil {
		return "", fmt.Errorf("streamstest: mvn package in %s failed after %v: %w\n%s", dir, time.Since(began).Round(time.Second), err, lastLines(out.String(), 40))
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("streamstest: mvn package succeeded but left no %s: %w", jar, err)
	}
	return jar, os.WriteFile(stamp, []byte(sum), 0o644)
}

// inputsHash hashes pom.xml and every file under src/, names included, so
// that a rename rebuilds too.
func inputsHash(dir string) (string, error) {
	files := []string{"pom.xml"}
	err := filepath.WalkDir(filepath.Join(dir, "src"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// lockFile takes an exclusive flock on path, polling so that ctx can end
// the wait.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another build of the Streams app (lock %s): %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
