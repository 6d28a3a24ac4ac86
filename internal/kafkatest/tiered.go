package kafkatest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TieredOptions turn on tiered storage (KIP-405) on every broker of a
// cluster: the remote storage manager is test/remote-storage, which keeps
// tiered segments under the cluster's directory (Cluster.RemoteStorageDir,
// shared by all brokers as an object store would be), and the metadata of
// the tiered segments goes through the topic-based remote log metadata
// manager Kafka ships (the __remote_log_metadata topic).
//
// A topic tiers only when created with remote.storage.enable=true; its
// local.retention.bytes or local.retention.ms then say how much stays on
// the brokers' disks.
//
// Kafka 3.9 (KafkaVersion39) runs the same fixture: tiering, reads from
// remote storage and a new replica copying the leader's local log behave
// as on 4.4 (checked by hand on 3.9.2, 2026-12-05; TestTieredStorage runs
// 4.4 only). It has no KIP-1023.
type TieredOptions struct {
	// FollowerFetchLastTieredOffset sets follower.fetch.last.tiered.offset.enable
	// (KIP-1023, Kafka 4.3+): an empty follower, such as a new replica of
	// a reassignment, starts replicating after the leader's last tiered
	// offset instead of at its local log start, so it copies only what is
	// not in remote storage yet. The setting is dynamic (cluster-wide or
	// per broker), so a test can also flip it on a running cluster.
	FollowerFetchLastTieredOffset bool
	// TaskInterval is remote.log.manager.task.interval.ms, how often each
	// leader looks for rolled segments to copy to remote storage and for
	// remote segments past retention (default 1s; Kafka's is 30s).
	TaskInterval time.Duration
}

// remoteStorageManagerClass is the fixture's RemoteStorageManager.
const remoteStorageManagerClass = "io.kafkascale.remotestorage.LocalDirRemoteStorageManager"

// remoteStorageDirRel is the fixture's Maven project in the repository.
const remoteStorageDirRel = "test/remote-storage"

// remoteLogMetadataTopic is where the topic-based remote log metadata
// manager keeps the tiered segments' metadata.
const remoteLogMetadataTopic = "__remote_log_metadata"

// remoteLogMetadataPartitions replaces the manager's default of 50
// partitions: each broker's metadata consumer assigns itself the ones its
// tiered partitions map to, and a test cluster has a handful of those.
const remoteLogMetadataPartitions = 5

func (t *TieredOptions) withDefaults(version string) (*TieredOptions, error) {
	if t == nil {
		return nil, nil
	}
	o := *t
	if o.TaskInterval == 0 {
		o.TaskInterval = time.Second
	}
	if o.TaskInterval < 0 {
		return nil, fmt.Errorf("kafkatest: Tiered.TaskInterval must be positive, got %v", o.TaskInterval)
	}
	if o.FollowerFetchLastTieredOffset && !atLeast(version, 4, 3) {
		return nil, fmt.Errorf("kafkatest: Kafka %s has no follower.fetch.last.tiered.offset.enable (KIP-1023 came with Kafka 4.3)", version)
	}
	return &o, nil
}

// atLeast reports whether version (major.minor.patch, as validVersion
// accepts) is at least major.minor.
func atLeast(version string, major, minor int) bool {
	var ma, mi, pa int
	if _, err := fmt.Sscanf(version, "%d.%d.%d", &ma, &mi, &pa); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// RemoteStorageDir is where the cluster's tiered segments are kept, under
// Dir so that Stop removes them with the rest; "" unless Options.Tiered.
// Its layout is <topic>/<partition>/<topic id>/<start>-<end>-<segment id>.<suffix>
// (see test/remote-storage).
func (c *Cluster) RemoteStorageDir() string {
	if c.opts.Tiered == nil {
		return ""
	}
	return filepath.Join(c.dir, "remote-storage")
}

// tieredControllerProperties adds what a controller needs of Options.Tiered:
// it validates a topic's remote.storage.enable against its own
// remote.log.storage.system.enable and refuses the topic without it. It
// runs no remote log manager, so the rest is the brokers' alone.
func (c *Cluster) tieredControllerProperties(p map[string]string) {
	if c.opts.Tiered != nil {
		p["remote.log.storage.system.enable"] = "true"
	}
}

// tieredProperties adds the remote storage settings of Options.Tiered to a
// broker's properties; BrokerProperties still override them.
func (c *Cluster) tieredProperties(p map[string]string) {
	t := c.opts.Tiered
	if t == nil {
		return
	}
	rf := strconv.Itoa(min(3, c.opts.Brokers))
	isr := strconv.Itoa(min(2, c.opts.Brokers))
	p["remote.log.storage.system.enable"] = "true"
	// Loaded by a class loader of its own that looks in this jar first,
	// as a real plugin is; the broker's jars stay its parent, so the
	// storage API types are the broker's own.
	p["remote.log.storage.manager.class.name"] = remoteStorageManagerClass
	p["remote.log.storage.manager.class.path"] = c.rsmJar
	p["rsm.config.dir"] = c.RemoteStorageDir()
	p["remote.log.metadata.manager.class.name"] = "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"
	// The manager's own clients reach the brokers on this listener; with
	// Options.Security the brokers keep PLAINTEXT too.
	p["remote.log.metadata.manager.listener.name"] = "PLAINTEXT"
	p["rlmm.config.remote.log.metadata.topic.replication.factor"] = rf
	p["rlmm.config.remote.log.metadata.topic.min.isr"] = isr
	p["rlmm.config.remote.log.metadata.topic.num.partitions"] = strconv.Itoa(remoteLogMetadataPartitions)
	p["remote.log.manager.task.interval.ms"] = strconv.FormatInt(t.TaskInterval.Milliseconds(), 10)
	// Local retention is enforced by the log manager's retention check
	// (default every 5 minutes), not by the remote log manager: without
	// this, tiered segments would stay on the local disks long after
	// local.retention.* allows them to go.
	p["log.retention.check.interval.ms"] = "1000"
	// The first check waits log.initial.task.delay.ms (an internal
	// setting, 30s by default) after the broker's start: a test that
	// writes at once would wait that long for local retention.
	p["log.initial.task.delay.ms"] = "1000"
	if t.FollowerFetchLastTieredOffset {
		p["follower.fetch.last.tiered.offset.enable"] = "true"
	}
}

// waitRemoteLogMetadata waits until the remote log metadata topic, which
// every broker's manager creates in the background at startup, has a
// leader for each partition: before that a tiered topic's segments cannot
// be copied, and a test would wait on tiering for the manager's start.
func (c *Cluster) waitRemoteLogMetadata(ctx context.Context) error {
	for {
		md, err := c.admin.Metadata(ctx, remoteLogMetadataTopic)
		if err == nil {
			td, ok := md.Topics[remoteLogMetadataTopic]
			if ok && td.Err == nil && len(td.Partitions) == remoteLogMetadataPartitions {
				ready := true
				for _, p := range td.Partitions {
					if p.Err != nil || p.Leader < 0 {
						ready = false
					}
				}
				if ready {
					return nil
				}
			}
		}
		if err := sleepCtx(ctx, pollInterval); err != nil {
			return fmt.Errorf("kafkatest: the remote log metadata topic %s has no leader for each of its %d partitions yet: %w",
				remoteLogMetadataTopic, remoteLogMetadataPartitions, err)
		}
	}
}

// RemoteStorageProjectDir locates test/remote-storage relative to this
// source file, as PomPath does for tools/kafka.
func RemoteStorageProjectDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("kafkatest: cannot locate %s from the build (built with -trimpath?)", remoteStorageDirRel)
	}
	dir := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", remoteStorageDirRel))
	if _, err := os.Stat(filepath.Join(dir, "pom.xml")); err != nil {
		return "", fmt.Errorf("kafkatest: %s/pom.xml is not beside this build's sources: %w", remoteStorageDirRel, err)
	}
	return dir, nil
}

// BuildRemoteStorage packages the remote storage fixture with Maven and
// returns its jar (see BuildMavenJar).
func BuildRemoteStorage(ctx context.Context) (string, error) {
	dir, err := RemoteStorageProjectDir()
	if err != nil {
		return "", err
	}
	return BuildMavenJar(ctx, dir, "remote-storage.jar")
}

// SetClusterConfig sets a broker config as the cluster-wide dynamic
// default and waits until every running broker reports it (a broker
// applies a dynamic default from the metadata log, a moment after the
// controller accepted it), or until ctx ends.
func (c *Cluster) SetClusterConfig(ctx context.Context, key, value string) error {
	resp, err := c.Admin().AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &value}})
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("kafkatest: setting %s=%s cluster-wide: %w", key, value, err)
	}
	for {
		var ids []int32
		for _, b := range c.Brokers() {
			if b.Running {
				ids = append(ids, b.ID)
			}
		}
		rcs, err := c.Admin().DescribeBrokerConfigs(ctx, ids...)
		applied := err == nil
		for _, rc := range rcs {
			found := false
			for _, cfg := range rc.Configs {
				found = found || cfg.Key == key && cfg.Value != nil && *cfg.Value == value
			}
			applied = applied && found
		}
		if applied {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkatest: the brokers did not apply %s=%s (last error: %v): %w", key, value, err, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
