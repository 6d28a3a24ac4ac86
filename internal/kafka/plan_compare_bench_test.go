package kafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// BenchmarkPlanVersusKafkaTool scales a real cluster from 3 to 5 brokers
// (racks a, b, c, then a, b) holding a few hundred partitions and compares,
// with the engine's own yardsticks, this planner's target with the one
// Apache Kafka's kafka-reassign-partitions --generate proposes for the same
// brokers, and both with the lower bound (make bench-plan):
//
//	go test -run '^$' -bench PlanVersusKafkaTool -benchtime 1x -v ./internal/kafka/
func BenchmarkPlanVersusKafkaTool(b *testing.B) {
	for i := 0; i < b.N; i++ {
		comparePlans(b)
	}
}

func comparePlans(b *testing.B) {
	ctx := context.Background()
	c, err := kafkatest.Start(ctx, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop()
	// A few hundred partitions with uneven sizes: more data in the first
	// topics' partitions.
	topics := map[string]int32{"orders": 120, "payments": 90, "clicks": 60, "audit": 30}
	var names []string
	for t, n := range topics {
		fill(b, c, t, n, 3, 0)
		names = append(names, t)
	}
	sort.Strings(names)
	fill(b, c, "sized", 24, 3, 24<<20)
	names = append(names, "sized")
	for _, rack := range []string{"a", "b"} {
		if _, err := c.AddBroker(ctx, rack); err != nil {
			b.Fatal(err)
		}
	}
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	snap, err := cl.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	all := kafka.EngineCluster(snap)
	// Only the user topics move in this comparison: the tool is given the
	// same topics.
	var before engine.Cluster
	var added []engine.Broker
	for _, br := range all.Brokers {
		if br.ID <= 3 {
			before.Brokers = append(before.Brokers, br)
		} else {
			added = append(added, br)
		}
	}
	for _, p := range all.Partitions {
		for _, t := range names {
			if p.Topic == t {
				before.Partitions = append(before.Partitions, p)
			}
		}
	}
	change := engine.Change{AddBrokers: added}
	opts := engine.DefaultOptions()
	opts.MinFreeDiskPercent = 0 // the brokers share one disk here

	start := time.Now()
	plan, err := engine.PlanReassignment(before, change, opts)
	if err != nil {
		b.Fatal(err)
	}
	planTime := time.Since(start)
	ours, err := engine.ScoreAssignment(before, change, plan.Target, opts)
	if err != nil {
		b.Fatal(err)
	}

	proposed := kafkaToolProposal(b, c, names)
	var theirsTarget []engine.Partition
	for _, p := range before.Partitions {
		rs, ok := proposed[fmt.Sprintf("%s/%d", p.Topic, p.Partition)]
		if !ok {
			rs = p.Replicas
		}
		theirsTarget = append(theirsTarget, engine.Partition{Topic: p.Topic, Partition: p.Partition, Replicas: rs, SizeBytes: p.SizeBytes})
	}
	theirs, err := engine.ScoreAssignment(before, change, theirsTarget, opts)
	if err != nil {
		b.Fatal(err)
	}

	b.Logf("3 -> 5 brokers (racks a,b,c + a,b), %d partitions, RF 3; kafkascale planned in %s", len(before.Partitions), planTime.Round(time.Millisecond))
	b.Logf("%-28s %10s %10s %12s %14s %14s %12s %8s", "", "moves", "bound", "moves/bound", "replica spread", "leader spread", "byte skew %", "racks!")
	for _, row := range []struct {
		name string
		s    engine.Score
	}{{"kafkascale", ours}, {"kafka-reassign-partitions", theirs}} {
		b.Logf("%-28s %10d %10d %12.2f %9d (>=%d) %9d (>=%d) %12.1f %8d", row.name, row.s.Moves, row.s.LowerBound, row.s.MoveRatio,
			row.s.ReplicaSpread, row.s.ReplicaBoundSpread, row.s.LeaderSpread, row.s.LeaderBoundSpread, row.s.ByteSkewPercent, row.s.RackViolations)
	}
	b.ReportMetric(float64(ours.LowerBound), "lower_bound")
	b.ReportMetric(float64(ours.Moves), "kafkascale_moves")
	b.ReportMetric(float64(theirs.Moves), "kafkatool_moves")
	b.ReportMetric(float64(ours.RackViolations), "kafkascale_rack_violations")
	b.ReportMetric(float64(theirs.RackViolations), "kafkatool_rack_violations")
	b.ReportMetric(float64(ours.ReplicaSpread), "kafkascale_replica_spread")
	b.ReportMetric(float64(theirs.ReplicaSpread), "kafkatool_replica_spread")
	b.ReportMetric(float64(ours.LeaderSpread), "kafkascale_leader_spread")
	b.ReportMetric(float64(theirs.LeaderSpread), "kafkatool_leader_spread")
}

// kafkaToolProposal runs Kafka's own ReassignPartitionsCommand --generate
// for the topics onto brokers 1..5 and returns its proposed replicas.
func kafkaToolProposal(b *testing.B, c *kafkatest.Cluster, topics []string) map[string][]int32 {
	b.Helper()
	libs, err := kafkatest.EnsureKafka(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	type topicRef struct {
		Topic string `json:"topic"`
	}
	var req struct {
		Version int        `json:"version"`
		Topics  []topicRef `json:"topics"`
	}
	req.Version = 1
	for _, t := range topics {
		req.Topics = append(req.Topics, topicRef{t})
	}
	f := filepath.Join(dir, "topics.json")
	body, _ := json.Marshal(req)
	if err := os.WriteFile(f, body, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("java", "-Xmx256m", "-cp", filepath.Join(libs, "*"), "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
		"--bootstrap-server", strings.Join(c.BootstrapServers(), ","), "--topics-to-move-json-file", f,
		"--broker-list", "1,2,3,4,5", "--generate")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.Fatalf("kafka-reassign-partitions --generate: %v\n%s", err, out.String())
	}
	// The proposal is the JSON line after "Proposed partition reassignment configuration".
	lines := strings.Split(out.String(), "\n")
	var proposal string
	for i, l := range lines {
		if strings.HasPrefix(l, "Proposed partition reassignment configuration") && i+1 < len(lines) {
			proposal = lines[i+1]
		}
	}
	var parsed struct {
		Partitions []struct {
			Topic     string  `json:"topic"`
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(proposal), &parsed); err != nil {
		b.Fatalf("parsing the tool's proposal: %v\n%s", err, out.String())
	}
	res := map[string][]int32{}
	for _, p := range parsed.Partitions {
		res[fmt.Sprintf("%s/%d", p.Topic, p.Partition)] = p.Replicas
	}
	return res
}
