package kafkatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Broker metrics for the dynamic throttle: the Prometheus JMX exporter runs
// as a Java agent inside each broker, and a real Prometheus server scrapes
// them, each target labelled `broker` with the broker's id.
//
//	m := kafkatest.StartMetricsT(t, kafkatest.MetricsOptions{Brokers: []int32{1, 2, 3, 4}})
//	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, JVMArgs: m.JVMArgs})
//	// m.URL() is the Prometheus base URL.
//
// Targets are fixed when Prometheus starts, so list the brokers a test
// adds later too; until a broker runs, its target is simply down.

const (
	// EnvJMXExporterDir overrides where tools/jmx-exporter (the agent's pom
	// and its rules) is looked for.
	EnvJMXExporterDir = "KAFKASCALE_JMX_EXPORTER_DIR"
	// EnvPrometheus overrides the Prometheus server binary (default
	// /usr/bin/prometheus, as Debian's package installs it).
	EnvPrometheus = "KAFKASCALE_PROMETHEUS"

	defaultPrometheus = "/usr/bin/prometheus"
	agentMarker       = "agent.complete"
	agentJarPrefix    = "jmx_prometheus_javaagent-"
	// PrometheusJob is the job label of the brokers' scrape targets.
	PrometheusJob = "kafka"
)

// MetricsOptions shape the brokers' metrics.
type MetricsOptions struct {
	// Brokers get an exporter port and a scrape target, including brokers
	// a test adds later. Default 1 to 5.
	Brokers []int32
	// ScrapeInterval is Prometheus's scrape interval (default 2s): short,
	// so that a test sees load in its metrics within seconds.
	ScrapeInterval time.Duration
	// Logf receives progress lines (StartMetricsT uses t.Logf).
	Logf func(format string, args ...any)
	// WebConfig, when set, is the content of Prometheus' own
	// --web.config.file: basic_auth_users, tls_server_config. Tests of
	// clients that log in use it.
	WebConfig string
	// TLS says WebConfig serves https, so that URL starts https://.
	TLS bool
	// Transport carries what WebConfig asks of kafkatest's own requests
	// (readiness, WaitScraped): the credentials, the CA.
	Transport http.RoundTripper
}

// Metrics is a running Prometheus server and the exporter settings of the
// brokers it scrapes. Stop it after the cluster whose brokers carry the
// agent, or those brokers' targets just go down.
type Metrics struct {
	jar, rules string
	ports      map[int32]int
	dir        string
	url        string

	proc   *os.Process
	done   chan struct{}
	reaper *os.File
	record string
	http   *retryablehttp.Client
}

// StartMetrics fetches the agent, then starts Prometheus and returns once it
// answers ready. On any failure it leaves nothing running.
func StartMetrics(ctx context.Context, opts MetricsOptions) (_ *Metrics, err error) {
	if len(opts.Brokers) == 0 {
		opts.Brokers = []int32{1, 2, 3, 4, 5}
	}
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = 2 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	prom := os.Getenv(EnvPrometheus)
	if prom == "" {
		prom = defaultPrometheus
	}
	if _, err := os.Stat(prom); err != nil {
		return nil, fmt.Errorf("kafkatest: the Prometheus server %s is missing; run scripts/install-prometheus.sh (apt-get install prometheus) or set %s: %w", prom, EnvPrometheus, err)
	}
	jar, err := EnsureJMXExporter(ctx)
	if err != nil {
		return nil, err
	}
	tools, err := JMXExporterDir()
	if err != nil {
		return nil, err
	}
	m := &Metrics{jar: jar, rules: filepath.Join(tools, "kafka-rules.yaml"), ports: map[int32]int{}}
	if _, err := os.Stat(m.rules); err != nil {
		return nil, fmt.Errorf("kafkatest: the JMX exporter rules are missing: %w", err)
	}
	sweepStaleMetrics(opts.Logf)
	if m.dir, err = os.MkdirTemp("", metricsDirPrefix); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = m.Stop()
		}
	}()
	if m.record, err = writeMetricsOwner(m.dir); err != nil {
		return nil, err
	}
	if m.reaper, err = startReaper(m.dir, m.record); err != nil {
		return nil, err
	}
	for _, id := range opts.Brokers {
		if m.ports[id], err = freePort(); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if opts.TLS {
		scheme = "https"
	}
	m.url = scheme + "://127.0.0.1:" + strconv.Itoa(port)
	cfg := filepath.Join(m.dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(m.config(opts.ScrapeInterval)), 0o644); err != nil {
		return nil, err
	}
	args := []string{"--config.file=" + cfg}
	if opts.WebConfig != "" {
		web := filepath.Join(m.dir, "web.yml")
		if err := os.WriteFile(web, []byte(opts.WebConfig), 0o600); err != nil {
			return nil, err
		}
		args = append(args, "--web.config.file="+web)
	}
	m.http = retryablehttp.NewClient()
	m.http.RetryMax = 0
	m.http.HTTPClient.Timeout = 5 * time.Second
	if opts.Transport != nil {
		m.http.HTTPClient.Transport = opts.Transport
	}
	m.http.Logger = nil

	began := time.Now()
	if err := m.run(prom, args, port); err != nil {
		return nil, err
	}
	if err := m.waitReady(ctx); err != nil {
		return nil, err
	}
	opts.Logf("kafkatest: Prometheus %s ready in %v, scraping brokers %v every %v (dir %s)",
		m.url, time.Since(began).Round(time.Millisecond), opts.Brokers, opts.ScrapeInterval, m.dir)
	return m, nil
}

// StartMetricsT starts metrics for one test and stops Prometheus in
// t.Cleanup. Call it before StartT, so that the cluster stops first.
func StartMetricsT(t testing.TB, opts MetricsOptions) *Metrics {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	m, err := StartMetrics(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting Prometheus: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if s := fileTail(filepath.Join(m.dir, "prometheus.log"), 20, "level=error", "level=warn"); s != "" {
				t.Logf("prometheus.log:\n%s", s)
			}
		}
		if err := m.Stop(); err != nil {
			t.Errorf("stopping Prometheus: %v", err)
		}
	})
	return m
}

// URL is the Prometheus server's base URL.
func (m *Metrics) URL() string { return m.url }

// ExporterURL is the metrics endpoint of broker id's exporter agent.
func (m *Metrics) ExporterURL(id int32) string {
	return "http://127.0.0.1:" + strconv.Itoa(m.ports[id]) + "/metrics"
}

// JVMArgs attaches the exporter agent to the brokers Prometheus scrapes;
// other nodes (the controller) get nothing. Use it as Options.JVMArgs.
func (m *Metrics) JVMArgs(nodeID int32) []string {
	port, ok := m.ports[nodeID]
	if !ok {
		return nil
	}
	return []string{"-javaagent:" + m.jar + "=127.0.0.1:" + strconv.Itoa(port) + ":" + m.rules}
}

func (m *Metrics) config(interval time.Duration) string {
	ids := make([]int32, 0, len(m.ports))
	for id := range m.ports {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	// A scrape may take as long as the interval on a loaded machine.
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n", interval, interval, interval)
	fmt.Fprintf(&b, "scrape_configs:\n  - job_name: %s\n    static_configs:\n", PrometheusJob)
	for _, id := range ids {
		fmt.Fprintf(&b, "      - targets: [\"127.0.0.1:%d\"]\n        labels: {broker: \"%d\"}\n", m.ports[id], id)
	}
	return b.String()
}

// run starts Prometheus with the lifetime guarantees of the brokers' JVMs
// (see Cluster.run): its own process group, and SIGKILL when this process
// dies, from a goroutine locked to its thread for the server's lifetime.
func (m *Metrics) run(bin string, args []string, port int) error {
	logf, err := os.OpenFile(filepath.Join(m.dir, "prometheus.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, append(args,
		"--storage.tsdb.path="+filepath.Join(m.dir, "data"),
		"--storage.tsdb.retention.time=1h",
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port),
		"--log.level=warn",
	)...)
	cmd.Dir = m.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	m.done = make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// Unlocked only once the child has exited. A goroutine that ends
		// while locked makes the runtime retire its thread, and the kernel
		// then sends the parent-death signal to every child that thread
		// ever forked, including ones forked by other goroutines before
		// this one locked it (a terraform run, another JVM).
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			logf.Close()
			started <- fmt.Errorf("starting %s: %w", bin, err)
			close(m.done)
			return
		}
		m.proc = cmd.Process
		started <- nil
		_ = cmd.Wait()
		logf.Close()
		close(m.done)
	}()
	return <-started
}

func (m *Metrics) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		select {
		case <-m.done:
			return fmt.Errorf("prometheus exited while starting (dir %s):\n%s", m.dir, fileTail(filepath.Join(m.dir, "prometheus.log"), 15))
		default:
		}
		if code, _, err := m.get(ctx, "/-/ready"); err == nil && code == http.StatusOK {
			return nil
		}
		if err := sleepCtx(ctx, pollInterval); err != nil {
			return fmt.Errorf("prometheus at %s not ready: %w\n%s", m.url, err, fileTail(filepath.Join(m.dir, "prometheus.log"), 15))
		}
	}
}

func (m *Metrics) get(ctx context.Context, pathAndQuery string) (int, []byte, error) {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, m.url+pathAndQuery, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, body, err
}

// WaitScraped waits until Prometheus holds at least two samples of each of
// brokers' Kafka metrics (so that rate() has two points), or ctx ends. The
// agent answers from the JVM's start, before the broker registers its
// MBeans, so a successful scrape alone is not enough.
func (m *Metrics) WaitScraped(ctx context.Context, brokers ...int32) error {
	q := fmt.Sprintf(`count_over_time(kafka_server_request_handler_idle_seconds_total{job=%q}[1m]) >= 2`, PrometheusJob)
	var last string
	for {
		code, body, err := m.get(ctx, "/api/v1/query?"+url.Values{"query": {q}}.Encode())
		switch {
		case err != nil:
			last = err.Error()
		case code != http.StatusOK:
			last = fmt.Sprintf("HTTP %d: %s", code, body)
		default:
			got, err := brokersIn(body)
			if err != nil {
				return err
			}
			var missing []int32
			for _, b := range brokers {
				if !slices.Contains(got, b) {
					missing = append(missing, b)
				}
			}
			if len(missing) == 0 {
				return nil
			}
			last = fmt.Sprintf("no two successful scrapes yet of brokers %v", missing)
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for Prometheus to scrape brokers %v: %s: %w", brokers, last, err)
		}
	}
}

func brokersIn(body []byte) ([]int32, error) {
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("prometheus query answer is not JSON: %w", err)
	}
	var ids []int32
	for _, s := range r.Data.Result {
		if id, err := strconv.Atoi(s.Metric["broker"]); err == nil {
			ids = append(ids, int32(id))
		}
	}
	return ids, nil
}

// Stop ends Prometheus (SIGTERM, then SIGKILL after 10 s) and removes its
// directory. It is safe to call more than once.
func (m *Metrics) Stop() error {
	var errs []error
	if m.proc != nil && m.done != nil {
		_ = m.proc.Signal(syscall.SIGTERM)
		if !waitExit(m.done, 10*time.Second) {
			_ = m.proc.Kill()
			if !waitExit(m.done, 10*time.Second) {
				errs = append(errs, fmt.Errorf("prometheus (pid %d) did not exit after SIGKILL", m.proc.Pid))
			}
		}
	}
	if m.dir != "" {
		if err := os.RemoveAll(m.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", m.dir, err))
		}
	}
	if m.record != "" {
		removeOwnerRecord(m.record)
		m.record = ""
	}
	if m.reaper != nil {
		m.reaper.Close()
		m.reaper = nil
	}
	return errors.Join(errs...)
}

// The last line of defence, as for clusters (sweep.go): a record per running
// Prometheus names its owner; a later StartMetrics that finds the owner dead
// kills the server still running from that directory and removes it.
const metricsDirPrefix = "kafkascale-prometheus-"

func writeMetricsOwner(dir string) (string, error) {
	start, err := procStartTime(os.Getpid())
	if err != nil {
		return "", err
	}
	path := filepath.Join(SweepDir(), "prometheus-"+filepath.Base(dir)+".json")
	raw, _ := json.Marshal(ownerRecord{OwnerPID: os.Getpid(), OwnerStart: start, Dir: dir, RemoveDir: true})
	return path, inSweepDir(func() error { return os.WriteFile(path, raw, 0o644) })
}

func sweepStaleMetrics(logf func(string, ...any)) {
	recs, _ := filepath.Glob(filepath.Join(SweepDir(), "prometheus-"+metricsDirPrefix+"*.json"))
	for _, path := range recs {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var rec ownerRecord
		if json.Unmarshal(raw, &rec) != nil || rec.Dir == "" || processAlive(rec.OwnerPID, rec.OwnerStart) {
			continue
		}
		for _, pid := range processesUsing(rec.Dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if err := os.RemoveAll(rec.Dir); err != nil {
			logf("kafkatest: removing %s left by dead process %d: %v", rec.Dir, rec.OwnerPID, err)
			continue
		}
		os.Remove(path)
	}
}

// processesUsing lists the processes whose command line names a path inside dir.
func processesUsing(dir string) []int {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(raw, []byte(prefix)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
