package kafkatest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// KafkaVersion is the Apache Kafka release a cluster runs by default. It must
// match <kafka.version> in tools/kafka/pom.xml (a test checks that).
const KafkaVersion = "4.4.0"

// KafkaVersion39 is the Kafka 3.9 release (KRaft) of the compatibility
// subset: Options.KafkaVersion selects it. It is resolved from the same pom
// with -Dkafka.version, so its dependency set is the one its own POMs give.
const KafkaVersion39 = "3.9.2"

// KafkaVersions are the releases `make kafka` (kafkascale-local fetch)
// caches, so that a test run needs no download.
var KafkaVersions = []string{KafkaVersion, KafkaVersion39}

const (
	// EnvCache overrides the cache root (default: the user cache dir + "/kafkascale").
	EnvCache = "KAFKASCALE_CACHE"
	// EnvPom overrides where tools/kafka/pom.xml is looked for.
	EnvPom = "KAFKASCALE_KAFKA_POM"

	// completeMarker sits beside libs/ and holds the sha256 of the pom that
	// produced it, so a changed pom refreshes the cache and a half-finished
	// download (no marker) is never used.
	completeMarker = "libs.complete"
)

// requiredJars are the jars whose absence means the cache of version is not
// usable: the broker and controller, the storage formatter, the log4j2
// binding, and the log4j 1 API bridge that Kafka 3.9's broker calls.
func requiredJars(version string) []string {
	return []string{
		"kafka_2.13-" + version + ".jar",
		"kafka-tools-" + version + ".jar",
		"kafka-clients-" + version + ".jar",
		"log4j-core-",
		"log4j-slf4j-impl-",
		"log4j-1.2-api-",
	}
}

// validVersion accepts a release number such as 4.4.0: it becomes a cache
// directory name and a Maven property, so nothing else may pass.
func validVersion(v string) error {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return fmt.Errorf("kafkatest: Kafka version %q is not major.minor.patch", v)
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return fmt.Errorf("kafkatest: Kafka version %q is not major.minor.patch", v)
		}
	}
	return nil
}

// majorVersion is the major release of a version validVersion accepted.
func majorVersion(v string) int {
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}

// CacheRoot is where Kafka releases are cached: $KAFKASCALE_CACHE, or
// kafkascale under the user's cache directory (~/.cache/kafkascale).
func CacheRoot() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the cache directory for Kafka jars (set %s to choose one): %w", EnvCache, err)
	}
	return filepath.Join(base, "kafkascale"), nil
}

// PomPath locates tools/kafka/pom.xml: $KAFKASCALE_KAFKA_POM, else relative
// to this source file, which works for `go test` and for binaries built from
// the work tree without -trimpath.
func PomPath() (string, error) {
	if p := os.Getenv(EnvPom); p != "" {
		return filepath.Abs(p)
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("cannot locate tools/kafka/pom.xml from the build (built with -trimpath?); set %s", EnvPom)
	}
	p := filepath.Join(filepath.Dir(file), "..", "..", "tools", "kafka", "pom.xml")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("tools/kafka/pom.xml is not beside this build's sources (%s); set %s: %w", p, EnvPom, err)
	}
	return filepath.Clean(p), nil
}

// EnsureKafka returns the directory of the runtime jars of KafkaVersion; see
// EnsureKafkaVersion.
func EnsureKafka(ctx context.Context) (libsDir string, err error) {
	return EnsureKafkaVersion(ctx, KafkaVersion)
}

// EnsureKafkaVersion returns the directory of the runtime jars of Kafka
// version, fetching them with Maven into the cache first when they are
// missing, incomplete or were resolved from another version of the pom. Every
// version resolves through tools/kafka/pom.xml with -Dkafka.version, so its
// jar set is what that release's own POMs depend on. The download goes to a
// temporary directory that is renamed into place only once complete, under a
// file lock, so concurrent test binaries neither fetch twice nor see half a
// download.
func EnsureKafkaVersion(ctx context.Context, version string) (libsDir string, err error) {
	if err := validVersion(version); err != nil {
		return "", err
	}
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	versionDir := filepath.Join(root, "kafka-"+version)
	libs := filepath.Join(versionDir, "libs")

	pom, pomErr := PomPath()
	var want string
	if pomErr == nil {
		sum, err := fileSHA256(pom)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", pom, err)
		}
		want = sum
	}
	if cacheComplete(versionDir, version, want) {
		return libs, nil
	}
	if pomErr != nil {
		return "", fmt.Errorf("the Kafka %s jars are not cached in %s and cannot be fetched: %w", version, libs, pomErr)
	}

	if err := os.MkdirAll(versionDir, 0o755); err != nil {
		return "", fmt.Errorf("creating the Kafka cache %s: %w", versionDir, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(versionDir, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another process may have completed the fetch while we waited for the lock.
	if cacheComplete(versionDir, version, want) {
		return libs, nil
	}

	tmp, err := os.MkdirTemp(versionDir, "libs.tmp-")
	if err != nil {
		return "", fmt.Errorf("creating a download directory in %s: %w", versionDir, err)
	}
	defer os.RemoveAll(tmp)

	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("fetching Kafka %s needs Maven (mvn) on PATH, e.g. apt-get install maven: %w", version, err)
	}
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-f", pom,
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-Dkafka.version="+version, "-DoutputDirectory="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("fetching Kafka %s with %s: %w\n%s", version, strings.Join(cmd.Args, " "), err, tail(out.String(), 40))
	}
	if missing := missingJars(tmp, version); len(missing) > 0 {
		return "", fmt.Errorf("maven resolved %s but the jars %s are missing from it; check the pom's dependencies", pom, strings.Join(missing, ", "))
	}

	// Swap in the complete directory. The marker goes last, so a crash at any
	// point leaves a cache that the next call fetches again.
	_ = os.Remove(filepath.Join(versionDir, completeMarker))
	if _, err := os.Stat(libs); err == nil {
		old, err := os.MkdirTemp(versionDir, "libs.old-")
		if err != nil {
			return "", err
		}
		if err := os.Rename(libs, filepath.Join(old, "libs")); err != nil {
			return "", fmt.Errorf("moving the old Kafka jars out of %s: %w", libs, err)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, libs); err != nil {
		return "", fmt.Errorf("moving the fetched Kafka jars into %s: %w", libs, err)
	}
	if err := os.WriteFile(filepath.Join(versionDir, completeMarker), []byte(want+"\n"), 0o644); err != nil {
		return "", err
	}
	return libs, nil
}

// cacheComplete reports whether versionDir holds a usable libs/. With
// wantSum empty (no pom to compare against) any complete cache is accepted.
func cacheComplete(versionDir, version, wantSum string) bool {
	got, err := os.ReadFile(filepath.Join(versionDir, completeMarker))
	if err != nil {
		return false
	}
	if wantSum != "" && strings.TrimSpace(string(got)) != wantSum {
		return false
	}
	return len(missingJars(filepath.Join(versionDir, "libs"), version)) == 0
}

func missingJars(dir, version string) []string {
	required := requiredJars(version)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return required
	}
	var missing []string
	for _, prefix := range required {
		found := false
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), ".jar") {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, prefix)
		}
	}
	return missing
}

func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// lockFile takes an exclusive flock on path, giving up when ctx ends.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the lock %s: %w", path, err)
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
		if err := sleepCtx(ctx, pollInterval); err != nil {
			f.Close()
			return nil, fmt.Errorf("waiting for the lock %s, which another process holds while it fetches or builds: %w", path, err)
		}
	}
}
