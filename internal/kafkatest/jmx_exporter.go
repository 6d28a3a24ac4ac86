package kafkatest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// The JMX exporter agent the brokers load for their metrics: resolved by
// Maven from tools/jmx-exporter/pom.xml into the cache, and fetched again
// only when the pom changes.

// JMXExporterDir locates tools/jmx-exporter: $KAFKASCALE_JMX_EXPORTER_DIR,
// else relative to this source file (see PomPath).
func JMXExporterDir() (string, error) {
	if d := os.Getenv(EnvJMXExporterDir); d != "" {
		return filepath.Abs(d)
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("cannot locate tools/jmx-exporter from the build (built with -trimpath?); set %s", EnvJMXExporterDir)
	}
	d := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "tools", "jmx-exporter"))
	if _, err := os.Stat(filepath.Join(d, "pom.xml")); err != nil {
		return "", fmt.Errorf("tools/jmx-exporter is not beside this build's sources (%s); set %s: %w", d, EnvJMXExporterDir, err)
	}
	return d, nil
}

// EnsureJMXExporter returns the path of the JMX exporter agent jar pinned by
// tools/jmx-exporter/pom.xml, fetching it with Maven into the cache
// (CacheRoot()/jmx-exporter) when it is missing or was resolved from another
// version of the pom. Like EnsureKafka, it downloads into a temporary
// directory renamed into place under a file lock.
func EnsureJMXExporter(ctx context.Context) (jar string, err error) {
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	tools, err := JMXExporterDir()
	if err != nil {
		return "", err
	}
	pom := filepath.Join(tools, "pom.xml")
	want, err := fileSHA256(pom)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", pom, err)
	}
	cache := filepath.Join(root, "jmx-exporter")
	agentDir := filepath.Join(cache, "agent")
	if jar, ok := agentCached(cache, want); ok {
		return jar, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("creating the JMX exporter cache %s: %w", cache, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(cache, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if jar, ok := agentCached(cache, want); ok {
		return jar, nil
	}
	tmp, err := os.MkdirTemp(cache, "agent.tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("fetching the JMX exporter agent needs Maven (mvn) on PATH, e.g. apt-get install maven: %w", err)
	}
	// The agent jar is shaded: it needs nothing transitive.
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-f", pom,
		"dependency:copy-dependencies", "-DexcludeTransitive=true", "-DoutputDirectory="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("fetching the JMX exporter agent with %s: %w\n%s", strings.Join(cmd.Args, " "), err, tail(out.String(), 40))
	}
	if _, err := agentJar(tmp); err != nil {
		return "", fmt.Errorf("maven resolved %s: %w", pom, err)
	}
	_ = os.Remove(filepath.Join(cache, agentMarker))
	if err := os.RemoveAll(agentDir); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, agentDir); err != nil {
		return "", fmt.Errorf("moving the fetched JMX exporter agent into %s: %w", agentDir, err)
	}
	if err := os.WriteFile(filepath.Join(cache, agentMarker), []byte(want+"\n"), 0o644); err != nil {
		return "", err
	}
	return agentJar(agentDir)
}

func agentCached(cache, wantSum string) (string, bool) {
	got, err := os.ReadFile(filepath.Join(cache, agentMarker))
	if err != nil || strings.TrimSpace(string(got)) != wantSum {
		return "", false
	}
	jar, err := agentJar(filepath.Join(cache, "agent"))
	return jar, err == nil
}

func agentJar(dir string) (string, error) {
	jars, _ := filepath.Glob(filepath.Join(dir, agentJarPrefix+"*.jar"))
	if len(jars) != 1 {
		return "", fmt.Errorf("want exactly one %s*.jar in %s, found %d", agentJarPrefix, dir, len(jars))
	}
	return jars[0], nil
}
