package kafkatest

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValidVersion(t *testing.T) {
	for _, v := range []string{KafkaVersion, KafkaVersion39, "10.0.12"} {
		if err := validVersion(v); err != nil {
			t.Errorf("validVersion(%q) = %v, want nil", v, err)
		}
	}
	// A version becomes a directory name and a Maven property: nothing but
	// digits and two dots may pass.
	for _, v := range []string{"", "4.4", "4.4.0.1", "4.4.x", "../4.4.0", "4.4.0 -Dx=y", "4..0"} {
		if err := validVersion(v); err == nil {
			t.Errorf("validVersion(%q) = nil, want an error", v)
		}
	}
	if got := majorVersion(KafkaVersion39); got != 3 {
		t.Errorf("majorVersion(%q) = %d, want 3", KafkaVersion39, got)
	}
	if got := majorVersion(KafkaVersion); got != 4 {
		t.Errorf("majorVersion(%q) = %d, want 4", KafkaVersion, got)
	}
	if !slices.Contains(KafkaVersions, KafkaVersion) || !slices.Contains(KafkaVersions, KafkaVersion39) {
		t.Errorf("KafkaVersions %v must hold %s and %s, or `make kafka` leaves one to the first test to download", KafkaVersions, KafkaVersion, KafkaVersion39)
	}
}

// A cache is complete only with the jars of its own version: the 4.4 jars
// do not make a usable 3.9 cache.
func TestMissingJarsPerVersion(t *testing.T) {
	dir := t.TempDir()
	for _, j := range []string{"kafka_2.13-" + KafkaVersion + ".jar", "kafka-tools-" + KafkaVersion + ".jar", "kafka-clients-" + KafkaVersion + ".jar",
		"log4j-core-2.24.3.jar", "log4j-slf4j-impl-2.24.3.jar", "log4j-1.2-api-2.24.3.jar"} {
		if err := os.WriteFile(filepath.Join(dir, j), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if m := missingJars(dir, KafkaVersion); len(m) != 0 {
		t.Errorf("missingJars(%s) = %v, want none", KafkaVersion, m)
	}
	m := missingJars(dir, KafkaVersion39)
	want := []string{"kafka_2.13-" + KafkaVersion39 + ".jar", "kafka-tools-" + KafkaVersion39 + ".jar", "kafka-clients-" + KafkaVersion39 + ".jar"}
	if !slices.Equal(m, want) {
		t.Errorf("missingJars(%s) = %v, want %v", KafkaVersion39, m, want)
	}
}

// Kafka 3.9 has no streams or share group coordinator: their settings go
// only to Kafka 4 brokers. Everything else is the same on both.
func TestNodePropertiesByVersion(t *testing.T) {
	props := func(version string) map[string]string {
		opts, err := Options{KafkaVersion: version}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		c := &Cluster{opts: opts, clusterID: "test", controllers: []*node{{id: ControllerID, role: roleController, port: 9093}}}
		out := map[string]string{}
		for _, l := range strings.Split(c.nodeProperties(&node{id: 1, role: roleBroker, rack: "a", port: 9092, dir: "/tmp/b1"}), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
				out[k] = v
			}
		}
		return out
	}
	v4, v3 := props(KafkaVersion), props(KafkaVersion39)
	only4 := []string{"group.streams.initial.rebalance.delay.ms", "share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.min.isr"}
	for _, k := range only4 {
		if _, ok := v4[k]; !ok {
			t.Errorf("Kafka %s broker lacks %s", KafkaVersion, k)
		}
		if v, ok := v3[k]; ok {
			t.Errorf("Kafka %s broker gets the 4.x-only %s=%s", KafkaVersion39, k, v)
		}
		delete(v4, k)
	}
	if !maps.Equal(v3, v4) {
		t.Errorf("besides the 4.x-only keys the brokers differ:\n3.9: %v\n4.4: %v", v3, v4)
	}
	if v3["controller.quorum.voters"] != "3000@127.0.0.1:9093" {
		t.Errorf("Kafka 3.9 broker finds the quorum through %q; want the static quorum's voters", v3["controller.quorum.voters"])
	}
	if _, err := (Options{KafkaVersion: "3.9"}).withDefaults(); err == nil {
		t.Error("Options.KafkaVersion 3.9 (no patch) was accepted")
	}
}
