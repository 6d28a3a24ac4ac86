package kafkatest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The bootstrap metadata of a Kafka 4 controller. Kafka's storage
// formatter (kafka.tools.StorageTool format) writes two things into a
// controller's metadata log directory: meta.properties (the cluster, the
// node and a random directory id) and a snapshot of the release's default
// feature levels (metadata.version, group.version, streams.version, ...),
// the same bytes for every controller of a release in a static quorum.
// Running the formatter is a JVM of its own, about 0.65 s of CPU and a
// second on the path of every cluster's start, some 75 times a CI run.
// So the formatter runs once per jar set, into a template directory kept
// beside the jars; each controller then gets its own meta.properties,
// written here as for a broker, and a copy of the rest.
//
// Two cases still run the formatter for each node: a secured cluster,
// whose bootstrap metadata also holds its SCRAM credentials, and Kafka
// 3.9, whose formatter writes a bootstrap file into every log directory,
// brokers' included.

// bootstrapTemplate returns the directory holding what the formatter
// writes besides meta.properties, formatting it first if needed. It
// returns "" (and logs why) when that fails: the nodes are then formatted
// one by one, as before.
func bootstrapTemplate(ctx context.Context, libs, java, classpath string, cds cdsArchives, logf func(string, ...any)) string {
	key, err := cdsKey(libs, java)
	if err != nil {
		logf("kafkatest: no bootstrap metadata template: %v", err)
		return ""
	}
	dir := filepath.Join(filepath.Dir(libs), "bootstrap", key)
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		logf("kafkatest: no bootstrap metadata template: %v", err)
		return ""
	}
	unlock, err := lockFile(ctx, filepath.Join(filepath.Dir(dir), ".lock"))
	if err != nil {
		logf("kafkatest: no bootstrap metadata template: %v", err)
		return ""
	}
	defer unlock()
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	if err := formatTemplate(ctx, dir, java, classpath, cds); err != nil {
		logf("kafkatest: no bootstrap metadata template, every controller runs the formatter: %v", err)
		return ""
	}
	return dir
}

// formatTemplate formats a throwaway controller of a single-voter static
// quorum and keeps its metadata log directory, without meta.properties,
// as dir.
func formatTemplate(ctx context.Context, dir, java, classpath string, cds cdsArchives) error {
	work, err := os.MkdirTemp(filepath.Dir(dir), ".format-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	data := filepath.Join(work, "data")
	// The formatter validates the configuration only; nothing listens on
	// this address.
	addr := "127.0.0.1:9093"
	props := strings.Join([]string{
		"node.id=" + strconv.Itoa(int(ControllerID)),
		"process.roles=controller",
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT",
		"listeners=CONTROLLER://" + addr,
		"controller.quorum.voters=" + strconv.Itoa(int(ControllerID)) + "@" + addr,
		"log.dirs=" + data,
	}, "\n") + "\n"
	propsPath := filepath.Join(work, "node.properties")
	if err := os.WriteFile(propsPath, []byte(props), 0o644); err != nil {
		return err
	}
	clusterID, err := newClusterID()
	if err != nil {
		return err
	}
	args := append(formatterJVMArgs(cds), "-XX:-UsePerfData", "-Djava.io.tmpdir="+work, "-cp", classpath,
		"kafka.tools.StorageTool", "format", "--cluster-id", clusterID, "--config", propsPath)
	if err := runFormatter(ctx, java, args, "the bootstrap metadata template"); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(data, "meta.properties")); err != nil {
		return fmt.Errorf("the formatter wrote no meta.properties in %s: %w", data, err)
	}
	return os.Rename(data, dir)
}

// copyBootstrap copies the template's files into a controller's metadata
// log directory, keeping their modes (the formatter makes its snapshot
// read-only).
func copyBootstrap(template, dataDir string) error {
	return filepath.WalkDir(template, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(template, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dataDir, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
}
