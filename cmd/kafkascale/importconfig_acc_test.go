package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// createTopic creates a topic outside Terraform, as an existing estate has
// them.
func createTopic(ctx context.Context, t *testing.T, c *kafkatest.Cluster, name string, partitions, rf int, cfg map[string]string) {
	t.Helper()
	var configs map[string]*string
	if len(cfg) > 0 {
		configs = map[string]*string{}
		for k, v := range cfg {
			configs[k] = kadm.StringPtr(v)
		}
	}
	resp, err := c.Admin().CreateTopic(ctx, int32(partitions), int16(rf), configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s (%d partitions, RF %d, %v): %v", name, partitions, rf, cfg, err)
	}
}

// topicIDs reads the topics' Kafka ids (UUIDs): a topic deleted and
// created again under its name gets a new one. It waits, up to 30s, for
// topics just created to reach the broker that answers.
func topicIDs(ctx context.Context, t *testing.T, c *kafkatest.Cluster, names ...string) map[string]kadm.TopicID {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		md, err := c.Admin().Metadata(ctx, names...)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]kadm.TopicID{}
		var missing error
		for _, d := range md.Topics {
			if d.Err != nil {
				missing = fmt.Errorf("topic %s: %w", d.Topic, d.Err)
				continue
			}
			out[d.Topic] = d.ID
		}
		if missing == nil {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("reading topic ids for 30s: %v", missing)
		}
	}
}

// TestAccImportConfig adopts 50 topics created outside Terraform, with
// partitions 1..12, replication factors 1..3 and varied own configs (some
// none), and the cluster: `kafkascale import-config --prefix` writes the
// configuration, the plan imports every one and changes nothing, the apply
// imports them, and the next plan is empty. Without the cluster the plan
// is the 50 imports and nothing else; with it, the cluster's import also
// stores its scaling block, which Kafka cannot tell, in an in-place update. Topics outside the prefix, and
// a Streams changelog inside it, are left out; no topic on the cluster is
// changed or re-created.
func TestAccImportConfig(t *testing.T) {
	c := sharedCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	const prefix = "adopt."

	want := map[string]kafka.TopicDescription{}
	var names []string
	for i := range 50 {
		name := fmt.Sprintf("adopt.svc%d.events-%02d", i%4, i)
		switch i {
		case 10:
			name = "adopt.a-b" // both become adopt_a_b: the names must stay unique
		case 11:
			name = "adopt.a.b"
		case 12:
			name = "adopt.7up" // still a valid identifier: led by a letter
		}
		partitions, rf := 1+i%12, 1+i%3
		cfg := map[string]string{}
		switch i % 5 {
		case 1:
			cfg["retention.ms"] = fmt.Sprint(3600000 * (i + 1))
		case 2:
			cfg["cleanup.policy"] = "compact"
			cfg["min.insync.replicas"] = fmt.Sprint(min(rf, 2))
		case 3:
			cfg["max.message.bytes"] = "2097152"
			cfg["retention.ms"] = "-1"
		case 4:
			cfg["cleanup.policy"] = "compact,delete"
			cfg["min.insync.replicas"] = "1"
			cfg["retention.ms"] = "604800000"
		}
		createTopic(ctx, t, c, name, partitions, rf, cfg)
		want[name] = kafka.TopicDescription{Name: name, Configs: cfg}
		names = append(names, name)
	}
	// Not adopted: outside the prefix, or a Streams internal topic.
	createTopic(ctx, t, c, "other.orders", 3, 3, map[string]string{"retention.ms": "1000"})
	createTopic(ctx, t, c, "adoptx", 1, 1, nil)
	createTopic(ctx, t, c, "adopt.app-store-changelog", 2, 3, map[string]string{"cleanup.policy": "compact"})
	idsBefore := topicIDs(ctx, t, c, append(names, "other.orders", "adoptx", "adopt.app-store-changelog")...)

	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Every broker answers Metadata from its own copy of the cluster's
	// metadata, which a new topic reaches a little later on some.
	var before map[string]kafka.TopicDescription
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		before, err = cl.DescribeTopics(ctx, names)
		if err == nil && len(before) == 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("describing the 50 topics: %d found, %v", len(before), err)
		}
	}

	bin := buildCommand(t)
	ws := newTFWorkspace(t, c.BootstrapServers())
	servers := "--bootstrap-servers=" + strings.Join(c.BootstrapServers(), ",")

	// The topics alone, to stdout: the plan imports the 50 and changes
	// nothing at all.
	start := time.Now()
	r := runBinary(ctx, t, bin, "import-config", "--prefix="+prefix, "--cluster=false", servers)
	if r.code != 0 {
		t.Fatalf("import-config --cluster=false: exit %d, stderr %q", r.code, r.stderr)
	}
	t.Logf("import-config --cluster=false took %s; stderr:\n%s", time.Since(start).Round(time.Millisecond), r.stderr)
	if !strings.Contains(r.stderr, "wrote import blocks and resources for 50 topic(s) to stdout") ||
		!strings.Contains(r.stderr, "left out 1 internal topic(s) that match (--include-internal writes them): adopt.app-store-changelog") {
		t.Fatalf("import-config's report: %q", r.stderr)
	}
	for _, not := range []string{"other.orders", "adoptx", "changelog", "__", "kafkascale_cluster"} {
		if strings.Contains(r.stdout, not) {
			t.Fatalf("the generated configuration holds %s:\n%s", not, r.stdout)
		}
	}
	ws.write("imported.tf", r.stdout)
	ws.mustRun("fmt", "-check", "-diff")
	changes, text := ws.savedPlan("topics.tfplan")
	t.Logf("plan of the topics alone: %s", planSummary(text))
	if !strings.Contains(text, "Plan: 50 to import, 0 to add, 0 to change, 0 to destroy.") {
		t.Fatalf("the plan is not 50 imports and nothing else:\n%s", text)
	}
	for _, ch := range changes {
		if len(ch.Change.Importing) == 0 || !slices.Equal(ch.Change.Actions, []string{"no-op"}) || !strings.HasPrefix(ch.Address, "kafkascale_topic.") {
			t.Errorf("%s is planned %v (importing: %s), want a no-op import of a topic", ch.Address, ch.Change.Actions, ch.Change.Importing)
		}
	}
	if len(changes) != 50 || t.Failed() {
		t.Fatalf("%d resources planned; the plan:\n%s", len(changes), text)
	}

	// With the cluster (the default), to a file, replacing the topics'.
	out := filepath.Join(ws.dir, "imported.tf")
	start = time.Now()
	r = runBinary(ctx, t, bin, "import-config", "--prefix="+prefix, "--out="+out, servers)
	if r.code != 0 {
		t.Fatalf("import-config: exit %d, stderr %q", r.code, r.stderr)
	}
	t.Logf("import-config took %s; stderr:\n%s", time.Since(start).Round(time.Millisecond), r.stderr)
	if !strings.Contains(r.stderr, "wrote import blocks and resources for 50 topic(s) and the cluster to "+out) {
		t.Fatalf("import-config's report: %q", r.stderr)
	}
	generated, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d bytes; the first 40 lines:\n%s", len(generated), strings.Join(strings.SplitN(string(generated), "\n", 41)[:40], "\n"))
	ws.mustRun("fmt", "-check", "-diff")

	// The plan imports the 50 topics and the cluster. No topic changes.
	// The cluster's scaling block, which Kafka cannot tell, is stored by
	// an in-place update that changes nothing else.
	changes, text = ws.savedPlan("import.tfplan")
	t.Logf("plan with the cluster: %s", planSummary(text))
	if !strings.Contains(text, "Plan: 51 to import, 0 to add, 1 to change, 0 to destroy.") {
		t.Fatalf("the plan is not 51 imports and the cluster's scaling block:\n%s", text)
	}
	topics := 0
	for _, ch := range changes {
		if len(ch.Change.Importing) == 0 {
			t.Errorf("%s is planned %v, not imported", ch.Address, ch.Change.Actions)
		}
		switch {
		case strings.HasPrefix(ch.Address, "kafkascale_topic."):
			topics++
			if !slices.Equal(ch.Change.Actions, []string{"no-op"}) {
				t.Errorf("topic %s is planned %v on import, want no-op", ch.Address, ch.Change.Actions)
			}
		case ch.Address == "kafkascale_cluster.this":
			for k, after := range ch.Change.After {
				if k != "scaling" && !reflect.DeepEqual(ch.Change.Before[k], after) {
					t.Errorf("the cluster's import changes %s from %v to %v; only scaling may change", k, ch.Change.Before[k], after)
				}
			}
			t.Logf("kafkascale_cluster.this is planned %v on import: scaling %v -> %v", ch.Change.Actions, ch.Change.Before["scaling"], ch.Change.After["scaling"])
		default:
			t.Errorf("unexpected resource %s planned %v", ch.Address, ch.Change.Actions)
		}
	}
	if topics != 50 || t.Failed() {
		t.Fatalf("%d topics planned; the plan:\n%s", topics, text)
	}

	start = time.Now()
	ws.mustRun("apply", "-no-color", "-input=false", "import.tfplan")
	t.Logf("apply of the imports took %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if code, text := ws.run("plan", "-no-color", "-input=false", "-detailed-exitcode"); code != 0 {
		t.Fatalf("the plan after the import exited %d, want 0 (no changes):\n%s", code, text)
	}
	t.Logf("the plan after the import is empty (%s)", time.Since(start).Round(time.Millisecond))

	// The state holds every topic as the cluster has it, under unique names.
	state := ws.stateResources()
	inState := 0
	for addr, raw := range state {
		if !strings.HasPrefix(addr, "kafkascale_topic.") {
			continue
		}
		inState++
		var v struct {
			Name              string            `json:"name"`
			Partitions        int               `json:"partitions"`
			ReplicationFactor int               `json:"replication_factor"`
			Config            map[string]string `json:"config"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		d := before[v.Name]
		if v.Config == nil {
			v.Config = map[string]string{}
		}
		if v.Partitions != len(d.Partitions) || !reflect.DeepEqual([]int{v.ReplicationFactor}, d.ReplicationFactors()) || !reflect.DeepEqual(v.Config, d.Configs) {
			t.Errorf("%s holds %+v; Kafka: %d partitions, RF %v, %v", addr, v, len(d.Partitions), d.ReplicationFactors(), d.Configs)
		}
	}
	for _, addr := range []string{"kafkascale_topic.adopt_a_b", "kafkascale_topic.adopt_a_b_2", "kafkascale_topic.adopt_7up"} {
		if state[addr] == nil {
			t.Errorf("%s is not in the state", addr)
		}
	}
	if inState != 50 || t.Failed() {
		t.Fatalf("%d topics in the state", inState)
	}
	var cs struct {
		ID          string `json:"id"`
		BrokerCount int    `json:"broker_count"`
	}
	if err := json.Unmarshal(state["kafkascale_cluster.this"], &cs); err != nil || cs.ID != c.ClusterID() || cs.BrokerCount != 3 {
		t.Fatalf("the cluster in the state: %+v (%v)", cs, err)
	}
	if n := len(c.Brokers()); n != 3 {
		t.Fatalf("the cluster has %d brokers after the import, want 3", n)
	}

	// The cluster: every topic as it was (configs as created, none
	// touched), none re-created.
	after, err := cl.DescribeTopics(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, a := before[n], after[n]
		if len(a.Partitions) != len(b.Partitions) || !reflect.DeepEqual(a.ReplicationFactors(), b.ReplicationFactors()) || !reflect.DeepEqual(a.Configs, b.Configs) {
			t.Errorf("topic %s changed: %d partitions RF %v %v, was %d RF %v %v", n, len(a.Partitions), a.ReplicationFactors(), a.Configs, len(b.Partitions), b.ReplicationFactors(), b.Configs)
		}
		if got := want[n].Configs; !reflect.DeepEqual(b.Configs, got) {
			t.Errorf("topic %s holds configs %v, created with %v", n, b.Configs, got)
		}
	}
	if idsAfter := topicIDs(ctx, t, c, append(names, "other.orders", "adoptx", "adopt.app-store-changelog")...); !reflect.DeepEqual(idsAfter, idsBefore) {
		t.Fatalf("topic ids changed: a topic was re-created or deleted\nbefore %v\nafter  %v", idsBefore, idsAfter)
	}
}

// planSummary is the "Plan: …" line of terraform plan's output.
func planSummary(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "Plan: ") || strings.HasPrefix(l, "No changes.") {
			return l
		}
	}
	return "(none)"
}
