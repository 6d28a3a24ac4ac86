package kafkatest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"
)

// BuildMavenJar packages the Maven project in dir (mvn package, tests
// skipped) and returns the path of target/<jar>, which its pom names. The
// repository's Java test programs (the Streams app, the remote storage
// fixture) build through it on first use, so `make test` on a clean
// machine needs no step of its own for them.
//
// It builds only when pom.xml or a file under src/ changed since the last
// build (a hash of them is kept beside the jar), and concurrent callers, in
// this process or another, build once.
func BuildMavenJar(ctx context.Context, dir, jar string) (string, error) {
	target := filepath.Join(dir, "target")
	if err := os.MkdirAll(target, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, filepath.Join(target, ".build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()

	path := filepath.Join(target, jar)
	stamp := path + ".inputs"
	sum, err := mavenInputsHash(dir)
	if err != nil {
		return "", err
	}
	if old, err := os.ReadFile(stamp); err == nil && string(old) == sum {
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("building %s needs Maven (mvn) on PATH: %w", dir, err)
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
		return "", fmt.Errorf("mvn package in %s failed after %v: %w\n%s", dir, time.Since(began).Round(time.Second), err, tail(out.String(), 40))
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("mvn package in %s succeeded but left no %s: %w", dir, path, err)
	}
	return path, os.WriteFile(stamp, []byte(sum), 0o644)
}

// mavenInputsHash hashes pom.xml and every file under src/, names
// included, so that a rename rebuilds too.
func mavenInputsHash(dir string) (string, error) {
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
	slices.Sort(files)
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
