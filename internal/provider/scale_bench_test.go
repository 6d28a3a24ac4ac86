package provider_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkafake"
)

// Cruise Control's published scale (cruise-control#1592): 2.8 million
// replicas, here 933,000 partitions at RF 3 on 200 brokers, planned to 215.
const (
	ccBrokers            = 200
	ccTarget             = 215
	ccTopics             = 31_100
	ccPartitionsPerTopic = 30
)

// BenchmarkProviderCruiseControlScale runs the real provider, built and
// installed through dev_overrides, under a real `terraform`, against a
// kafkafake cluster at Cruise Control's scale. The fake answers the read
// path only (see internal/kafkafake): these figures are the cost of
// reading, planning and recording such a cluster, not of moving it.
//
// It imports kafkascale_cluster (an import block, applied), refreshes it with
// data.kafkascale_rebalance_plan for 215 brokers (terraform apply
// -refresh-only, which writes both into the state), then plans 200 -> 215
// with the data source beside it (terraform plan). It reports, for the
// plan: wall time, the provider's peak RSS (VmHWM, polled from /proc),
// the Kafka requests by kind; and the state file's size after the
// refresh, private state included, next to the size the whole planning
// snapshot would have had there. -benchtime 1x: one run is minutes.
func BenchmarkProviderCruiseControlScale(b *testing.B) {
	var err error
	topics := ccTopics
	if v := os.Getenv("BENCH_SCALE_TOPICS"); v != "" {
		// A smaller cluster, to try the benchmark out quickly.
		if topics, err = strconv.Atoi(v); err != nil {
			b.Fatalf("BENCH_SCALE_TOPICS=%q: %v", v, err)
		}
	}
	fake, err := kafkafake.Start(kafkafake.Config{
		ClusterID: "cruise-control-scale", Brokers: ccBrokers, Racks: 4,
		Topics: topics, PartitionsPerTopic: ccPartitionsPerTopic, ReplicationFactor: 3,
		MaxPartitionBytes: 2 << 30, DiskBytes: 32 << 40,
		Extra: []kafkafake.Topic{{Name: kafka.OperationsTopic, Partitions: 1}},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	fake.Warm()
	tf := newTerraformCLI(b)
	provider := filepath.Join(filepath.Dir(tf.dir), "plugins", "terraform-provider-kafkascale")
	cfg := func(count int, dataSource bool) string {
		hcl := fmt.Sprintf(`provider "kafkascale" {
  bootstrap_servers = [%q]
}
resource "kafkascale_cluster" "main" {
  broker_count = %d
  scaling {
    external {}
  }
}
`, fake.Addrs()[0], count)
		if dataSource {
			hcl += fmt.Sprintf(`data "kafkascale_rebalance_plan" "cc" {
  broker_count = %d
}
`, ccTarget)
		}
		return hcl
	}
	statePath := filepath.Join(tf.dir, "terraform.tfstate")

	for i := 0; i < b.N; i++ {
		_ = os.Remove(statePath)
		tf.configure(cfg(ccBrokers, false))
		imp := measure(b, tf, fake, provider, "import", "-no-color", "-input=false", "kafkascale_cluster.main", fake.ClusterID())
		importState := fileSize(b, statePath)

		tf.configure(cfg(ccBrokers, true))
		refresh := measure(b, tf, fake, provider, "apply", "-no-color", "-input=false", "-refresh-only", "-auto-approve")
		refreshState := fileSize(b, statePath)
		private, dataSource := stateParts(b, statePath)

		tf.configure(cfg(ccTarget, true))
		plan := measure(b, tf, fake, provider, "plan", "-no-color", "-input=false")
		moves := regexp.MustCompile(`Scaling to 215 brokers moves (\d+) replicas`).FindStringSubmatch(plan.out)
		if moves == nil {
			b.Fatalf("the plan shows no cost of going to %d brokers:\n%s", ccTarget, plan.out)
		}
		// Only the summary is in private state: the planned figures are
		// known after apply, never figures the apply could contradict.
		if !regexp.MustCompile(`planned_moves\s+= 0 -> \(known after apply\)`).MatchString(plan.out) {
			b.Fatalf("the plan does not leave planned_moves unknown:\n%s", plan.out)
		}

		old := oldPrivateSnapshotSize(b, fake)
		b.ReportMetric(plan.wall.Seconds(), "plan-s")
		b.ReportMetric(float64(plan.rss)/(1<<20), "plan-rss-MB")
		b.ReportMetric(refresh.wall.Seconds(), "refresh-s")
		b.ReportMetric(float64(refresh.rss)/(1<<20), "refresh-rss-MB")
		b.ReportMetric(float64(refreshState)/1e6, "state-MB")
		b.ReportMetric(float64(old)/1e6, "old-snapshot-MB")
		b.ReportMetric(float64(plan.requests.total()), "plan-requests")
		b.Logf("partitions %d, brokers %d -> %d", fake.Partitions(), ccBrokers, ccTarget)
		b.Logf("import:  %s, provider peak RSS %d MB, requests: %s; state %d bytes", imp.wall.Round(time.Millisecond), imp.rss>>20,
			kafkafake.FormatRequests(imp.requests), importState)
		b.Logf("refresh: %s, provider peak RSS %d MB, requests: %s", refresh.wall.Round(time.Millisecond), refresh.rss>>20,
			kafkafake.FormatRequests(refresh.requests))
		b.Logf("state after refresh: %d bytes (private state of kafkascale_cluster %d bytes, data.kafkascale_rebalance_plan %d bytes); "+
			"the whole planning snapshot would be %d bytes of private state", refreshState, private, dataSource, old)
		b.Logf("plan:    %s, provider peak RSS %d MB, requests: %s; %s replica moves planned", plan.wall.Round(time.Millisecond), plan.rss>>20,
			kafkafake.FormatRequests(plan.requests), moves[1])
	}
}

type requestCounts map[string]int

func (r requestCounts) total() int {
	n := 0
	for k, v := range r {
		if k != "ApiVersions" {
			n += v
		}
	}
	return n
}

type run struct {
	out      string
	wall     time.Duration
	rss      int64 // bytes, the highest VmHWM of any provider process
	requests requestCounts
}

// measure runs terraform args to a successful end while polling the peak
// RSS of every provider process it starts.
func measure(b *testing.B, tf *terraformCLI, fake *kafkafake.Cluster, provider string, args ...string) run {
	b.Helper()
	fake.ResetRequests()
	stop := make(chan struct{})
	var peak int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if hwm := providerHWM(provider); hwm > peak {
				peak = hwm
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	// Flags go before the arguments: `terraform import` stops reading
	// flags at its first argument.
	cmd := exec.Command(tf.bin, args...)
	cmd.Dir, cmd.Env = tf.dir, tf.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	close(stop)
	wg.Wait()
	if err != nil {
		b.Fatalf("terraform %s: %v after %s\n%s", strings.Join(args, " "), err, wall.Round(time.Millisecond), out)
	}
	b.Logf("terraform %s: %s", strings.Join(args, " "), wall.Round(time.Millisecond))
	return run{out: string(out), wall: wall, rss: peak, requests: fake.Requests()}
}

// providerHWM returns the largest VmHWM of the running processes whose
// executable is provider.
func providerHWM(provider string) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var best int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != provider {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" && f[2] == "kB" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb<<10 > best {
					best = kb << 10
				}
			}
		}
	}
	return best
}

func fileSize(b *testing.B, path string) int64 {
	b.Helper()
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return st.Size()
}

// stateParts returns the bytes the state file spends on the cluster
// resource's private state and on the data source's instance.
func stateParts(b *testing.B, path string) (private, dataSource int) {
	b.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var st struct {
		Resources []struct {
			Mode      string            `json:"mode"`
			Type      string            `json:"type"`
			Instances []json.RawMessage `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		b.Fatal(err)
	}
	for _, r := range st.Resources {
		for _, in := range r.Instances {
			switch {
			case r.Mode == "managed" && r.Type == "kafkascale_cluster":
				var v struct {
					Private string `json:"private"`
				}
				if err := json.Unmarshal(in, &v); err != nil {
					b.Fatal(err)
				}
				private = len(v.Private)
			case r.Mode == "data" && r.Type == "kafkascale_rebalance_plan":
				dataSource = len(in)
			}
		}
	}
	return private, dataSource
}

// oldPrivateSnapshotSize is what the private state held before the summary:
// the whole planning snapshot, gzipped JSON as a JSON string of base64.
func oldPrivateSnapshotSize(b *testing.B, fake *kafkafake.Cluster) int {
	b.Helper()
	c, err := kafka.NewClient(kafka.Config{BootstrapServers: fake.Addrs()[:1]})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := c.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(kafka.EngineCluster(s)); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	v, err := json.Marshal(buf.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	// The framework keeps private values base64 in its own JSON, and
	// Terraform the whole of it base64 in the state file.
	return base64.StdEncoding.EncodedLen(len(`{"planning_snapshot":""}`) + base64.StdEncoding.EncodedLen(len(v)))
}
