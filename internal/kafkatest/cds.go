package kafkatest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// EnvCDS set to "0" turns the class-data archives off.
const EnvCDS = "KAFKASCALE_CDS"

// Class-data sharing (AppCDS). Starting a Kafka JVM is mostly loading and
// verifying some ten thousand classes; on a two-core machine four JVMs
// starting together take ~15 s. A dynamic CDS archive, dumped once by a JVM
// of the same role on exit (-XX:ArchiveClassesAtExit), lets later JVMs map
// those classes instead: a controller then starts in ~1 s instead of ~3 s
// and uses a third of the CPU. The archives are made once per cache by a
// training cluster (one controller, one broker, stopped gracefully, since a
// JVM dumps its archive only on an orderly exit) of the same Kafka version,
// kept beside that version's jars, and are keyed by the jars and the java
// binary. A stale or unreadable archive costs nothing but a
// warning in stdout.log: -Xshare:auto falls back to loading classes.

type cdsArchives struct {
	controller, broker string
}

// cdsKey names the archives of one jar set and one java binary.
func cdsKey(libsDir, java string) (string, error) {
	marker, err := os.ReadFile(filepath.Join(filepath.Dir(libsDir), completeMarker))
	if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(java)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%d\n%d\n", marker, resolved, info.Size(), info.ModTime().UnixNano())
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// ensureCDS returns the class-data archives for libs and java, training
// them first if needed. It returns empty archives (and logs why) when CDS is
// off or training failed; a failed training is not retried for the same key.
func ensureCDS(ctx context.Context, version, libs, java string, logf func(string, ...any)) cdsArchives {
	if os.Getenv(EnvCDS) == "0" {
		return cdsArchives{}
	}
	key, err := cdsKey(libs, java)
	if err != nil {
		logf("kafkatest: no class-data archive: %v", err)
		return cdsArchives{}
	}
	dir := filepath.Join(filepath.Dir(libs), "cds")
	arch := cdsArchives{
		controller: filepath.Join(dir, key+"-controller.jsa"),
		broker:     filepath.Join(dir, key+"-broker.jsa"),
	}
	failed := filepath.Join(dir, key+".failed")
	ready := func() bool {
		_, e1 := os.Stat(arch.controller)
		_, e2 := os.Stat(arch.broker)
		return e1 == nil && e2 == nil
	}
	if ready() {
		return arch
	}
	if _, err := os.Stat(failed); err == nil {
		return cdsArchives{}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		logf("kafkatest: no class-data archive: %v", err)
		return cdsArchives{}
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, ".lock"))
	if err != nil {
		logf("kafkatest: no class-data archive: %v", err)
		return cdsArchives{}
	}
	defer unlock()
	if ready() {
		return arch
	}
	began := time.Now()
	if err := trainCDS(ctx, version, arch, logf); err != nil {
		logf("kafkatest: training the class-data archives failed, JVMs start without them: %v", err)
		if ctx.Err() == nil {
			_ = os.WriteFile(failed, []byte(err.Error()+"\n"), 0o644)
		}
		return cdsArchives{}
	}
	logf("kafkatest: trained the Kafka %s class-data archives in %v (%s)", version, time.Since(began).Round(time.Millisecond), dir)
	return arch
}

// trainCDS runs a one-broker cluster of version whose JVMs dump their
// classes on exit, then stops it in order and moves the archives into place.
func trainCDS(ctx context.Context, version string, arch cdsArchives, logf func(string, ...any)) error {
	suffix := ".tmp-" + strconv.Itoa(os.Getpid())
	dump := cdsArchives{controller: arch.controller + suffix, broker: arch.broker + suffix}
	defer os.Remove(dump.controller)
	defer os.Remove(dump.broker)
	c, err := start(ctx, Options{Brokers: 1, Racks: []string{"a"}, Logf: logf, KafkaVersion: version}, &dump)
	if err != nil {
		return err
	}
	defer func() { _ = c.Stop() }()
	// Exercise the request paths tests use, so their classes are archived.
	if _, err := c.Admin().CreateTopic(ctx, 1, 1, nil, "kafkatest-cds"); err != nil {
		return err
	}
	if _, err := DescribeCluster(ctx, c.Client()); err != nil {
		return err
	}
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.StopBroker(stopCtx, 1); err != nil {
		return err
	}
	if err := c.signal(stopCtx, c.controllers[0], sigterm); err != nil {
		return err
	}
	for _, p := range [][2]string{{dump.controller, arch.controller}, {dump.broker, arch.broker}} {
		if _, err := os.Stat(p[0]); err != nil {
			return fmt.Errorf("the JVM wrote no archive (see stdout.log of the training node): %w", err)
		}
		if err := os.Rename(p[0], p[1]); err != nil {
			return err
		}
	}
	return nil
}
