package kafkatest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

func TestEnsureJMXExporterIsCached(t *testing.T) {
	jar, err := EnsureJMXExporter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tools, err := JMXExporterDir()
	if err != nil {
		t.Fatal(err)
	}
	pom, err := os.ReadFile(filepath.Join(tools, "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	v := regexp.MustCompile(`<jmx.exporter.version>([^<]+)</jmx.exporter.version>`).FindSubmatch(pom)
	if v == nil || filepath.Base(jar) != agentJarPrefix+string(v[1])+".jar" {
		t.Fatalf("EnsureJMXExporter returned %s; the pom pins %q", jar, v)
	}
	marker := filepath.Join(filepath.Dir(filepath.Dir(jar)), agentMarker)
	before, err := os.Stat(marker)
	if err != nil {
		t.Fatal(err)
	}
	again, err := EnsureJMXExporter(t.Context())
	if err != nil || again != jar {
		t.Fatalf("second EnsureJMXExporter = %s, %v; want the cached %s", again, err, jar)
	}
	if after, _ := os.Stat(marker); !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the second call fetched again (marker rewritten at %v)", after.ModTime())
	}
}

// The exporter on real brokers serves every metric the rules define, and
// Prometheus scrapes each broker under its `broker` label. A target listed
// for a broker that does not run yet is down, not missing.
func TestMetrics(t *testing.T) {
	m := StartMetricsT(t, MetricsOptions{Brokers: []int32{1, 2, 3}})
	c := StartT(t, Options{Brokers: 2, Racks: []string{"a", "b"}, JVMArgs: m.JVMArgs})
	if args := m.JVMArgs(ControllerID); args != nil {
		t.Errorf("the controller gets exporter args %v; only brokers are scraped", args)
	}

	body := httpGet(t, m.ExporterURL(1))
	for _, name := range []string{
		"kafka_server_request_handler_idle_seconds_total",
		"kafka_server_request_handler_avg_idle_ratio",
		"kafka_network_processor_avg_idle_ratio",
		"kafka_network_request_queue_size",
		`kafka_network_request_local_time_p99_seconds{request="Produce"}`,
		`kafka_network_requests_completed_total{request="Produce"}`,
		"kafka_server_replicamanager_reassigningpartitions",
		"kafka_server_reassignment_bytes_in_total",
		"kafka_server_reassignment_bytes_out_total",
	} {
		if !strings.Contains(body, "\n"+name+" ") {
			t.Errorf("broker 1's exporter does not serve %s", name)
		}
	}

	ctx := t.Context()
	if err := m.WaitScraped(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	up := promQuery(t, m, `up{job="kafka"}`)
	want := map[string]string{"1": "1", "2": "1", "3": "0"}
	if fmt.Sprint(up) != fmt.Sprint(want) {
		t.Errorf("up by broker = %v, want %v", up, want)
	}
	// Handlers of a broker with nothing to do are idle nearly all the time:
	// their idle counter gains about a second per second, and Kafka's
	// one-minute rate, once the meter has ticked, reads near 1.
	deadline := time.Now().Add(time.Minute)
	for len(promQuery(t, m, `kafka_server_request_handler_idle_seconds_total >= 10`)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("handler idle seconds still below 10 s after a minute: %v", promQuery(t, m, `kafka_server_request_handler_idle_seconds_total`))
		}
		time.Sleep(500 * time.Millisecond)
	}
	idle := promQuery(t, m, `kafka_server_request_handler_avg_idle_ratio`)
	for _, b := range []string{"1", "2"} {
		v, err := strconv.ParseFloat(idle[b], 64)
		if err != nil || v < 0.5 || v > 1.05 {
			t.Errorf("broker %s handler idle ratio = %q; want close to 1 on an idle broker", b, idle[b])
		}
	}
	t.Logf("up %v, handler idle ratio %v", up, idle)

	// Stopping leaves neither the server nor its directory.
	pid, dir := m.proc.Pid, m.dir
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("prometheus (pid %d) still runs after Stop", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s: %v", dir, err)
	}
	_ = c
}

const metricsHelperEnv = "KAFKATEST_METRICS_HELPER"

// TestMetricsDieWithOwner SIGKILLs a process running Prometheus, so that
// none of its cleanup runs: the parent-death signal must end the server and
// the reaper must remove its directory. The test binary plays that process
// itself when metricsHelperEnv is set.
func TestMetricsDieWithOwner(t *testing.T) {
	if os.Getenv(metricsHelperEnv) != "" {
		m, err := StartMetrics(t.Context(), MetricsOptions{Brokers: []int32{1}})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%d %s\n", m.proc.Pid, m.dir)
		time.Sleep(time.Hour)
		return
	}
	RequireAcceptance(t) // the helper starts a Prometheus server
	cmd := exec.Command(os.Args[0], "-test.run=^TestMetricsDieWithOwner$")
	cmd.Env = append(os.Environ(), metricsHelperEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	var pid int
	var dir string
	if _, serr := fmt.Sscanf(line, "%d %s", &pid, &dir); err != nil || serr != nil {
		t.Fatalf("the helper printed %q (%v, %v); want its Prometheus pid and directory", line, err, serr)
	}
	if raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); err != nil || !strings.Contains(string(raw), dir) {
		t.Fatalf("pid %d is not the helper's Prometheus (cmdline %q, %v)", pid, raw, err)
	}
	start, err := procStartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// Nor may its owner record stay behind in the sweep directory.
	record := filepath.Join(SweepDir(), "prometheus-"+filepath.Base(dir)+".json")
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, statErr := os.Stat(dir)
		_, recordErr := os.Stat(record)
		alive := processAlive(pid, start)
		if !alive && os.IsNotExist(statErr) && os.IsNotExist(recordErr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("15s after its owner died: Prometheus running %v, directory stat error %v, owner record stat error %v", alive, statErr, recordErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	c := retryablehttp.NewClient()
	c.Logger = nil
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", u, resp.Status, err)
	}
	return string(b)
}

// promQuery runs an instant query and returns each series' value by its
// broker label.
func promQuery(t *testing.T, m *Metrics, q string) map[string]string {
	t.Helper()
	code, body, err := m.get(t.Context(), "/api/v1/query?"+url.Values{"query": {q}}.Encode())
	if err != nil || code != http.StatusOK {
		t.Fatalf("query %s: HTTP %d, %v: %s", q, code, err, body)
	}
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range r.Data.Result {
		v, _ := s.Value[1].(string)
		out[s.Metric["broker"]] = v
	}
	return out
}
