package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// Disk safety on real, size-limited disks (issue 13 item 2). Two identical
// clusters, one after the other: three brokers in racks a, b, c, each with
// its log.dirs on its own 90 MiB tmpfs, holding one topic of 12 partitions
// of 16 MiB, one replica each, partition i on broker i%3+1. Every broker
// holds 4 partitions, 64 MiB: 71% of its disk. A fourth broker (rack a)
// joins.
//
//   - Kafka's own tool (--generate, then --execute, all at once) lays the 12
//     partitions out afresh over the four brokers, so old brokers receive
//     partitions while they still hold all of their own: a replica leaves
//     only after its new copy has caught up, and its files stay
//     file.delete.delay.ms (60 s) after that. The test computes from the
//     tool's proposal what each broker holds plus receives, requires that
//     this exceeds a disk (the premise), then executes and waits for a
//     broker to lose its log dir for lack of space.
//   - kafkascale makes the same change, a scale-out to four brokers, and
//     keeps every broker under 100 - min_free_disk_percent at every step.
const (
	diskSize          = 90 << 20
	diskPartitions    = 12
	diskPartitionSize = 16 << 20
	diskMinFree       = 20
)

func startDiskCluster(t *testing.T) *kafkatest.Cluster {
	t.Helper()
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}, DiskBytes: diskSize})
	assignment := map[int32][]int32{}
	for p := range int32(diskPartitions) {
		assignment[p] = []int32{p%3 + 1}
	}
	createTopic(t, c, "bulk", assignment)
	fillTopic(t, c, "bulk", diskPartitions*diskPartitionSize)
	for id, d := range c.DiskUse() {
		t.Logf("broker %d before the change: %d MiB of %d MiB used (%.1f%%)", id, d.UsedBytes>>20, d.TotalBytes>>20, d.Percent())
	}
	return c
}

// diskSampler reads every broker's disk use (statfs) every 250 ms and keeps
// each broker's peak.
type diskSampler struct {
	mu      sync.Mutex
	peak    map[int32]kafkatest.DiskUse
	samples int
	stop    chan struct{}
	done    chan struct{}
}

func sampleDisks(c *kafkatest.Cluster) *diskSampler {
	s := &diskSampler{peak: map[int32]kafkatest.DiskUse{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			use := c.DiskUse()
			s.mu.Lock()
			s.samples++
			for id, d := range use {
				if p, ok := s.peak[id]; !ok || d.UsedBytes > p.UsedBytes {
					s.peak[id] = d
				}
			}
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// finish stops sampling and returns each broker's peak.
func (s *diskSampler) finish() (map[int32]kafkatest.DiskUse, int) {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.samples
}

func sortedIDs(m map[int32]kafkatest.DiskUse) []int32 {
	var ids []int32
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestAccClusterResource_diskKafkaTool shows the danger: Kafka's own
// kafka-reassign-partitions, --generate then --execute, overfills a disk in
// this setup, and the broker loses its log dir.
func TestAccClusterResource_diskKafkaTool(t *testing.T) {
	testAccPreCheck(t)
	c := startDiskCluster(t)
	ctx := context.Background()
	if _, err := c.AddBroker(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	sizes := partitionSizes(t, c, "bulk")
	current := map[int32][]int32{}
	for p := range int32(diskPartitions) {
		current[p] = []int32{p%3 + 1}
	}
	topics := writeJSON(t, "topics.json", map[string]any{"version": 1, "topics": []map[string]string{{"topic": "bulk"}}})

	// --generate starts its layout at a random broker, so its proposals
	// differ from run to run. Every one seen so far overfills a disk; should
	// one fit, the test asks again (as an operator might), and says so.
	var proposal string
	for attempt := 1; proposal == ""; attempt++ {
		if attempt > 5 {
			t.Fatal("5 proposals of kafka-reassign-partitions --generate all fit every disk; the test's premise is wrong")
		}
		p := kafkaTool(t, c, "--generate", "--topics-to-move-json-file", topics, "--broker-list", "1,2,3,4")
		if overfills(t, attempt, current, parseProposal(t, p), sizes) {
			proposal = p
		}
	}

	sampler := sampleDisks(c)
	kafkaTool(t, c, "--execute", "--reassignment-json-file", writeJSON(t, "reassign.json", json.RawMessage(proposal)))
	began := time.Now()

	// Kafka marks a log dir offline at the first failed write (no space
	// left on device); with one log dir per broker, the broker then shuts
	// itself down.
	var failed []string
	deadline := time.Now().Add(2 * time.Minute)
	for len(failed) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		for _, b := range c.Brokers() {
			logs := readBrokerLogs(c, b.ID)
			offline := strings.Contains(logs, "Stopping serving logs in dir")
			if !b.Running || offline {
				failed = append(failed, fmt.Sprintf("broker %d: JVM running %t, log dir offline %t, %q in its log %t",
					b.ID, b.Running, offline, "No space left on device", strings.Contains(logs, "No space left on device")))
			}
		}
	}
	peaks, samples := sampler.finish()
	for _, id := range sortedIDs(peaks) {
		p := peaks[id]
		t.Logf("broker %d's disk peaked at %d of %d MiB (%.1f%%) under kafka-reassign-partitions (%d samples)",
			id, p.UsedBytes>>20, p.TotalBytes>>20, p.Percent(), samples)
	}
	if len(failed) == 0 {
		t.Fatalf("2 minutes after kafka-reassign-partitions --execute no broker lost its log dir; brokers: %+v", c.Brokers())
	}
	t.Logf("%v after --execute: %s", time.Since(began).Round(time.Second), strings.Join(failed, "; "))
	for _, f := range failed {
		if !strings.Contains(f, `in its log true`) {
			t.Errorf("a broker failed, but not for lack of space: %s", f)
		}
	}
}

// TestAccClusterResource_diskKafkascale makes the same change through
// kafkascale_cluster: no broker's disk use ever exceeds
// 100 - min_free_disk_percent.
func TestAccClusterResource_diskKafkascale(t *testing.T) {
	testAccParallel(t)
	c, apiURL := withScalingAPI(t, startDiskCluster(t))
	rebalance := fmt.Sprintf(`min_free_disk_percent = %d
    initial_throttle = 52428800
    max_throttle     = 104857600`, diskMinFree)
	limit := 100.0 - diskMinFree

	var sampler *diskSampler
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: clusterConfig(c.BootstrapServers(), apiURL, 3, rebalance),
				Check: func(*terraform.State) error {
					// Sampling starts before the scale-out's plan and apply.
					sampler = sampleDisks(c)
					return nil
				},
			},
			{
				Config: clusterConfig(c.BootstrapServers(), apiURL, 4, rebalance),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(4)),
				},
				Check: func(*terraform.State) error {
					assertNoThrottles(t, c)
					assertOperationCompleted(t, c, 4)
					assertDiskScaleOutMoved(t, c)
					return nil
				},
			},
		},
	})
	if sampler == nil {
		t.Fatal("the disks were never sampled")
	}
	peaks, samples := sampler.finish()
	if len(peaks) != 4 {
		t.Fatalf("sampled the disks of %d brokers, want 4: %v", len(peaks), peaks)
	}
	for _, id := range sortedIDs(peaks) {
		p := peaks[id]
		t.Logf("broker %d's disk peaked at %.1f MiB of %d MiB: %.1f%% against the limit of %.0f%% (%d samples)",
			id, float64(p.UsedBytes)/(1<<20), p.TotalBytes>>20, p.Percent(), limit, samples)
		if p.Percent() > limit {
			t.Errorf("broker %d's disk reached %.1f%%, over the limit 100 - min_free_disk_percent = %.0f%% by %d bytes",
				id, p.Percent(), limit, p.UsedBytes-int64(float64(p.TotalBytes)*limit/100))
		}
	}
	for _, b := range c.Brokers() {
		if logs := readBrokerLogs(c, b.ID); !b.Running || strings.Contains(logs, "No space left on device") {
			t.Errorf("broker %d: JVM running %t, %q in its log %t", b.ID, b.Running, "No space left on device", strings.Contains(logs, "No space left on device"))
		}
	}
	assertTopicReadable(t, c, "bulk", diskPartitions*diskPartitionSize)
}

// assertDiskScaleOutMoved checks that the scale-out the disk limit guards
// really moved data, and where it ended: the operation recorded moves,
// broker 4 holds some of bulk, every broker holds replicas, and brokers 1
// and 4, rack a's two, share its replicas within one (brokers 2 and 3,
// alone in their racks, hold every RF-3 partition of the internal topics,
// so replica counts are even only within a rack). A plan of zero moves
// keeps every disk under its limit too, and proves nothing about it.
func assertDiskScaleOutMoved(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	switch op := loadOperation(t, c); {
	case op == nil || op.Plan == nil:
		t.Errorf("no scale-out plan was recorded (operation %+v)", op)
	case op.Plan.ReplicaMoves == 0:
		t.Errorf("the scale-out %s recorded no replica move, %d bytes: the disk limit guarded nothing", op.ID, op.Plan.TotalBytes)
	}
	assertOnlyBrokers(t, c, brokerRange(4))
	a := readAssignment(t, c)
	if x, y := a.perBroker[1], a.perBroker[4]; x-y > 1 || y-x > 1 {
		t.Errorf("brokers 1 and 4, rack a's, hold %d and %d replicas; want within one of each other (replicas per broker %v)", x, y, a.perBroker)
	}
	md, err := c.Admin().Metadata(context.Background(), "bulk")
	if err != nil {
		t.Fatal(err)
	}
	bulk := map[int32]int{}
	for _, p := range md.Topics["bulk"].Partitions {
		for _, r := range p.Replicas {
			bulk[r]++
		}
	}
	if bulk[4] == 0 {
		t.Errorf("broker 4 holds none of bulk's %d partitions after the scale-out: %v", diskPartitions, bulk)
	}
	t.Logf("replicas per broker %v; bulk's partitions per broker %v", a.perBroker, bulk)
}

// overfills logs what the tool's proposal asks of each broker while every
// move runs at once, what it holds now plus what it receives, and reports
// whether that exceeds a disk.
func overfills(t *testing.T, attempt int, current, target map[int32][]int32, sizes map[int32]int64) bool {
	t.Helper()
	over := false
	for b := int32(1); b <= 4; b++ {
		var holds, gets int64
		for p, rs := range current {
			if slices.Contains(rs, b) {
				holds += sizes[p]
			}
			if slices.Contains(target[p], b) && !slices.Contains(rs, b) {
				gets += sizes[p]
			}
		}
		t.Logf("kafka-reassign-partitions proposal %d: broker %d holds %d MiB and receives %d MiB: %d MiB at once on a %d MiB disk",
			attempt, b, holds>>20, gets>>20, (holds+gets)>>20, diskSize>>20)
		over = over || holds+gets > diskSize
	}
	return over
}

// partitionSizes reads each partition's size on its leader's disk.
func partitionSizes(t *testing.T, c *kafkatest.Cluster, topic string) map[int32]int64 {
	t.Helper()
	dirs, err := c.Admin().DescribeAllLogDirs(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[int32]int64{}
	for _, byDir := range dirs {
		for _, d := range byDir {
			for p, dp := range d.Topics[topic] {
				sizes[p] = max(sizes[p], dp.Size)
			}
		}
	}
	if len(sizes) != diskPartitions {
		t.Fatalf("read the sizes of %d partitions of %s, want %d: %v", len(sizes), topic, diskPartitions, sizes)
	}
	return sizes
}

// kafkaTool runs Apache Kafka's kafka-reassign-partitions (the class its
// script runs) against c and returns the JSON line that follows "Proposed
// partition reassignment configuration" (--generate), or "" otherwise.
func kafkaTool(t *testing.T, c *kafkatest.Cluster, args ...string) string {
	t.Helper()
	libs, err := kafkatest.EnsureKafka(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cmdArgs := append([]string{"-Xmx256m", "-cp", filepath.Join(libs, "*"), "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
		"--bootstrap-server", strings.Join(c.BootstrapServers(), ",")}, args...)
	cmd := exec.Command("java", cmdArgs...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafka-reassign-partitions %s: %v\n%s", args[0], err, out.String())
	}
	lines := strings.Split(out.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Proposed partition reassignment configuration") && i+1 < len(lines) {
			return lines[i+1]
		}
	}
	if args[0] == "--generate" {
		t.Fatalf("kafka-reassign-partitions --generate printed no proposal:\n%s", out.String())
	}
	return ""
}

func parseProposal(t *testing.T, proposal string) map[int32][]int32 {
	t.Helper()
	var parsed struct {
		Partitions []struct {
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(proposal), &parsed); err != nil {
		t.Fatalf("parsing the tool's proposal %q: %v", proposal, err)
	}
	out := map[int32][]int32{}
	for _, p := range parsed.Partitions {
		out[p.Partition] = p.Replicas
	}
	return out
}

func writeJSON(t *testing.T, name string, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readBrokerLogs returns the broker's server.log and stdout.log.
func readBrokerLogs(c *kafkatest.Cluster, id int32) string {
	var b strings.Builder
	for _, f := range []string{"server.log", "stdout.log"} {
		raw, _ := os.ReadFile(filepath.Join(c.Dir(), fmt.Sprintf("broker-%d", id), f))
		b.Write(raw)
	}
	return b.String()
}
