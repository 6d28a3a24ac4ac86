package provider_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/metrics"
)

// The dynamic throttle on a real cluster, read from real broker metrics: the
// JMX exporter agent in every broker, scraped every 2 s by a real
// Prometheus, queried with the provider's default queries.
//
//  1. Scale 3 → 4 with the metrics block. While the brokers only move
//     replicas, they are healthy and the rate climbs from initial_throttle
//     by (max - min) / 10 per interval. Then a heavy producer writes to
//     brokers 1-3: the p99 of their produce appends (the I/O pressure query)
//     rises far above max_io_pressure = 20 ms and the rate halves at each
//     interval. The threshold is low on purpose: on a shared 2-core machine
//     the producer saturates the CPU before the request handlers, whose idle
//     ratio stays above 0.9 (measured), while append latency goes from 0 (no
//     producer) to 50-450 ms. Both are the brokers' own numbers.
//  2. Scale 4 → 3 with prometheus_url on a closed port: every adjustment
//     finds no metrics, so the rate holds at initial_throttle throughout, and
//     the log says why.
//
// A sampler reads broker 1's leader.replication.throttled.rate (every
// scale-out and scale-in move here touches broker 1: RF 3 over racks a, b,
// c, and broker 4 in rack d) every 250 ms for the whole test.
func TestAccClusterResource_dynamicThrottle(t *testing.T) {
	testAccPreCheck(t)
	// The provider's "throttle changed" and "throttle held" lines, with
	// their reasons, go to this file.
	logPath := filepath.Join(t.TempDir(), "terraform.log")
	t.Setenv("TF_LOG", "INFO")
	t.Setenv("TF_LOG_PATH", logPath)
	t.Cleanup(func() { logThrottleLines(t, logPath) })

	m := kafkatest.StartMetricsT(t, kafkatest.MetricsOptions{Brokers: []int32{1, 2, 3, 4}})
	c, apiURL := withScalingAPI(t, kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c", "d"}, JVMArgs: m.JVMArgs,
		// A follower fetches up to 10 MiB per response by default, and the
		// replication quota is checked before a fetch, not during it: at a
		// few hundred KiB/s, one response would overshoot the rate for many
		// seconds. Small fetches make the brokers keep to the rate.
		BrokerProperties: map[string]string{
			"replica.fetch.max.bytes":          "65536",
			"replica.fetch.response.max.bytes": "262144",
		}}))
	ctx := t.Context()

	// 24 partitions of 2 MiB each; broker 4 takes a quarter of the
	// replicas, about 36 MiB, which at 0.5 to 1.2 MiB/s keeps the
	// reassignment running for about a minute.
	createTopicRF(t, c, "load", 24, 3)
	fillTopic(t, c, "load", 48<<20)
	createTopicRF(t, c, "pressure", 6, 3)

	prom, err := metrics.NewPrometheus(m.URL(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	// The fill was heavy produce traffic; the brokers count as quiet once
	// it has left the I/O pressure query's one-minute window.
	quiet := waitMetrics(ctx, t, prom, []int32{1, 2, 3}, 3*time.Minute, func(s executor.BrokerMetrics) bool { return s.IOPressure == 0 })
	t.Logf("brokers quiet: %s", formatMetrics(quiet, nil))

	const (
		initial       = 1 << 20
		minRate       = 512 << 10
		maxRate       = 2 << 20
		inc           = (maxRate - minRate) / 10 // the provider's additive step
		maxIOPressure = 0.02
		interval      = 2 * time.Second
	)
	dynamic := fmt.Sprintf(`initial_throttle     = %d
    min_throttle         = %d
    max_throttle         = %d
    max_moves_per_step   = 24
    max_moves_per_broker = 24
    adjust_interval      = "2s"
    metrics {
      prometheus_url = %q
      thresholds {
        max_io_pressure = %g
      }
    }`, initial, minRate, maxRate, m.URL(), maxIOPressure)
	down := closedPort(t)
	// The scale-in moves broker 4's quarter of the load topic, about 36
	// MiB, into brokers 1-3 at this rate each: about 16 s, long enough to
	// show the rate held over 5 adjust intervals and no longer.
	const heldRate = 768 << 10
	unreachable := fmt.Sprintf(`initial_throttle     = %d
    min_throttle         = %d
    max_throttle         = %d
    max_moves_per_step   = 24
    max_moves_per_broker = 24
    adjust_interval      = "2s"
    metrics {
      prometheus_url = "http://%s"
    }`, heldRate, minRate, maxRate, down)

	rates := watchThrottle(t, c, 1)
	loads := watchMetrics(t, prom, []int32{1, 2, 3, 4})
	var press *pressure
	var step1, step2 time.Time

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					step1 = time.Now()
					// Pressure starts once the rate has climbed a step, and
					// the producer stops once the rate has halved; the
					// pressure it leaves lasts a while longer.
					press = startPressure(t, c, rates, initial+inc, 2)
				},
				Config: clusterConfig(c.BootstrapServers(), apiURL, 4, dynamic),
				Check: func(*terraform.State) error {
					press.stop()
					traj := rates.between(step1, time.Now())
					t.Logf("scale 3 → 4, rate of broker 1 (s since step start: B/s; failed reads: %s):\n%s", rates.failures(), traj.changes(step1))
					if a := readAssignment(t, c); a.perBroker[4] == 0 {
						t.Errorf("the scale-out left broker 4 without replicas: %v", a.perBroker)
					}
					t.Logf("metrics:\n%s", loads.format(step1, press.started, press.ended))
					t.Logf("pressure from %s to %s", since(step1, press.started), since(step1, press.ended))
					assertAIMD(t, traj, initial, minRate, maxRate, inc)
					assertRaisedThenLowered(t, traj, press, loads, initial, maxIOPressure)
					assertNoThrottles(t, c)
					return nil
				},
			},
			{
				PreConfig: func() {
					// The pressure topic holds what the producer wrote until
					// the rate halved: seconds of writes on a quiet machine,
					// minutes of them under CI's load (ci19: this step held
					// 1.5 MiB/s for 2m47s draining it from broker 4). It has
					// done its part; the scale-in drains the load topic.
					dropPressure(t, c)
					step2 = time.Now()
				},
				Config: clusterConfig(c.BootstrapServers(), apiURL, 3, unreachable),
				Check: func(*terraform.State) error {
					traj := rates.between(step2, time.Now())
					t.Logf("scale 4 → 3 without metrics, rate of broker 1:\n%s", traj.changes(step2))
					assertHeld(t, traj, heldRate, interval)
					assertNoThrottles(t, c)
					return nil
				},
			},
		},
	})

	logs, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("reading the provider log: %v", err)
	}
	assertThrottleLog(t, string(logs), down)
}

// rateSample is one reading of a broker's leader.replication.throttled.rate;
// rate 0 means no throttle is set.
type rateSample struct {
	at   time.Time
	rate int64
}

type trajectory []rateSample

type throttleWatch struct {
	mu      sync.Mutex
	samples trajectory
	errs    int
	lastErr error
}

// watchThrottle reads the broker's dynamic throttle rate every 250 ms until
// the test ends.
func watchThrottle(t *testing.T, c *kafkatest.Cluster, broker int32) *throttleWatch {
	t.Helper()
	w := &throttleWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			rate, err := throttleRate(ctx, c, broker)
			w.mu.Lock()
			if err == nil {
				w.samples = append(w.samples, rateSample{time.Now(), rate})
			} else if ctx.Err() == nil {
				w.errs++
				w.lastErr = err
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func throttleRate(ctx context.Context, c *kafkatest.Cluster, broker int32) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rcs, err := c.Admin().DescribeBrokerConfigs(ctx, broker)
	if err != nil {
		return 0, err
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return 0, rc.Err
		}
		for _, cfg := range rc.Configs {
			if cfg.Key == "leader.replication.throttled.rate" && cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig {
				return strconv.ParseInt(cfg.MaybeValue(), 10, 64)
			}
		}
	}
	return 0, nil
}

// failures reports the reads that failed so far, for the record.
func (w *throttleWatch) failures() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.errs == 0 {
		return "none"
	}
	return fmt.Sprintf("%d, the last: %v", w.errs, w.lastErr)
}

func (w *throttleWatch) latest() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.samples) == 0 {
		return 0
	}
	return w.samples[len(w.samples)-1].rate
}

func (w *throttleWatch) between(from, to time.Time) trajectory {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out trajectory
	for _, s := range w.samples {
		if !s.at.Before(from) && !s.at.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// set is the part of the trajectory where a throttle was set.
func (tr trajectory) set() trajectory {
	var out trajectory
	for _, s := range tr {
		if s.rate > 0 {
			out = append(out, s)
		}
	}
	return out
}

// values lists the rates in the order they were set, each once per run of
// equal samples.
func (tr trajectory) values() []rateSample {
	var out []rateSample
	for _, s := range tr.set() {
		if len(out) == 0 || out[len(out)-1].rate != s.rate {
			out = append(out, s)
		}
	}
	return out
}

func (tr trajectory) changes(origin time.Time) string {
	var b strings.Builder
	prev := int64(-1)
	for _, s := range tr {
		if s.rate != prev {
			fmt.Fprintf(&b, "  %6.2fs  %d\n", s.at.Sub(origin).Seconds(), s.rate)
			prev = s.rate
		}
	}
	return b.String()
}

// assertAIMD checks every change the brokers saw: the first rate is the
// initial one, and each next one is an additive step up or a halving, or
// either clamped to [min, max].
func assertAIMD(t *testing.T, tr trajectory, initial, minRate, maxRate, inc int64) {
	t.Helper()
	vals := tr.values()
	if len(vals) == 0 {
		t.Error("no throttle was ever set on broker 1 during the scale-out")
		return
	}
	if vals[0].rate != initial {
		t.Errorf("the first rate set was %d, want initial_throttle %d", vals[0].rate, initial)
	}
	for i := 1; i < len(vals); i++ {
		from, to := vals[i-1].rate, vals[i].rate
		up, down := min(from+inc, maxRate), max(from/2, minRate)
		if to != up && to != down {
			t.Errorf("rate went from %d to %d; an adjustment gives %d (up) or %d (down)", from, to, up, down)
		}
		if to < minRate || to > maxRate {
			t.Errorf("rate %d is outside [%d, %d]", to, minRate, maxRate)
		}
	}
}

// assertRaisedThenLowered checks (a) the rate rose above initial before any
// pressure, while the metrics showed none, and (b) once the producer ran,
// the rate fell, at a moment the brokers' own I/O pressure was above the
// threshold.
func assertRaisedThenLowered(t *testing.T, tr trajectory, p *pressure, loads *metricsWatch, initial int64, maxIO float64) {
	t.Helper()
	if p.started.IsZero() {
		t.Errorf("the rate never climbed to the point where pressure starts; it went %v", rateList(tr.values()))
		return
	}
	var peak int64
	for _, s := range tr.set() {
		if s.at.Before(p.started) {
			peak = max(peak, s.rate)
		}
	}
	if peak <= initial {
		t.Errorf("(a) before any pressure the rate never rose above initial %d (peak %d)", initial, peak)
	}
	for _, s := range loads.between(time.Time{}, p.started) {
		for _, b := range s.brokers {
			if b.IOPressure > maxIO {
				t.Errorf("(a) broker %d showed I/O pressure %g > %g at %s, before the producer started", b.Broker, b.IOPressure, maxIO, s.at.Format(time.TimeOnly))
			}
		}
	}
	// The first value below the rate at pressure onset.
	var fall rateSample
	onset := peak
	for _, s := range tr.set() {
		if !s.at.Before(p.started) && s.rate < onset {
			fall = s
			break
		}
		if !s.at.Before(p.started) {
			onset = max(onset, s.rate)
		}
	}
	if fall.at.IsZero() {
		t.Errorf("(b) under pressure the rate never fell below %d; it went %v", onset, rateList(tr.values()))
		return
	}
	if fall.rate > onset/2 {
		t.Errorf("(b) the first decrease under pressure went from %d to %d; want a halving", onset, fall.rate)
	}
	// The advisor read the pressure at most one interval (plus a scrape
	// and the sampler's period) before the brokers showed the new rate.
	// The test's own sampler reads the same scrapes, but its reading can
	// land a moment after the advisor's (CI saw the advisor act on a value
	// at 17.4 s that the sampler first returned at 18.2 s), so the window
	// reaches a scrape interval past the fall.
	pressured := false
	for _, s := range loads.between(fall.at.Add(-6*time.Second), fall.at.Add(3*time.Second)) {
		for _, b := range s.brokers {
			pressured = pressured || b.IOPressure > maxIO
		}
	}
	if !pressured {
		t.Errorf("(b) the rate fell to %d at %s, but no broker showed I/O pressure above %g in the 6 s before", fall.rate, fall.at.Format(time.TimeOnly), maxIO)
	}
	t.Logf("(a) peak %d B/s before pressure (initial %d); (b) first decrease %d → %d B/s, %s after the producer started",
		peak, initial, onset, fall.rate, fall.at.Sub(p.started).Round(100*time.Millisecond))
}

// assertHeld checks that, for the whole time a throttle was set, it was the
// initial rate, and that this lasted several adjust intervals: otherwise
// the run proves nothing about holding.
func assertHeld(t *testing.T, tr trajectory, want int64, interval time.Duration) {
	t.Helper()
	set := tr.set()
	if len(set) == 0 {
		t.Error("no throttle was ever set on broker 1 during the scale-in")
		return
	}
	for _, s := range set {
		if s.rate != want {
			t.Errorf("without metrics the rate moved to %d at %s; it must hold at %d", s.rate, s.at.Format(time.TimeOnly), want)
		}
	}
	held := set[len(set)-1].at.Sub(set[0].at)
	if held < 5*interval {
		t.Errorf("the throttle was set for only %v, fewer than 5 adjust intervals of %v: the run is too short to show the rate holding", held, interval)
	}
	t.Logf("(c) rate held at %d B/s for %v (%d samples, %d adjust intervals)", want, held.Round(100*time.Millisecond), len(set), int(held/interval))
}

// assertThrottleLog checks that the provider said why it changed or held
// the rate.
func assertThrottleLog(t *testing.T, logs, down string) {
	t.Helper()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`throttle changed.*all throttled brokers healthy`),
		regexp.MustCompile(`throttle changed.*pressure: broker \d+ I/O pressure`),
		regexp.MustCompile(`throttle held.*metrics unavailable: I/O pressure query: querying Prometheus at ` + regexp.QuoteMeta("http://"+down) + ` failed after \d+ attempts: .*connection refused`),
	} {
		if !want.MatchString(logs) {
			t.Errorf("the provider log has no line matching %s", want)
		}
	}
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "throttle held") {
			t.Logf("for example: %s", l[strings.Index(l, "throttle held"):])
			break
		}
	}
}

// logThrottleLines shows the provider's throttle decisions, for the record.
func logThrottleLines(t *testing.T, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Logf("no provider log: %v", err)
		return
	}
	var b strings.Builder
	for _, l := range strings.Split(string(raw), "\n") {
		if i := strings.Index(l, "throttle "); i >= 0 && strings.Contains(l, "provider") && (strings.Contains(l, "throttle held") || strings.Contains(l, "throttle changed")) {
			fmt.Fprintf(&b, "  %s %s\n", l[:min(len(l), 24)], l[i:])
		}
	}
	t.Logf("provider throttle decisions:\n%s", b.String())
}

func rateList(vals []rateSample) []int64 {
	out := make([]int64, len(vals))
	for i, v := range vals {
		out[i] = v.rate
	}
	return out
}

func since(origin, at time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return fmt.Sprintf("%.2fs", at.Sub(origin).Seconds())
}

// pressure is a heavy producer load on brokers 1-3, started and stopped by
// what the throttle watch sees.
type pressure struct {
	mu             sync.Mutex
	started, ended time.Time
	cancel         context.CancelFunc
	done           chan struct{}
}

// startPressure waits until the rate reaches from, then produces as fast as
// it can to topic "pressure" until the rate is at most its value at that
// moment divided by fall (or for 3 minutes at most).
func startPressure(t *testing.T, c *kafkatest.Cluster, w *throttleWatch, from, fall int64) *pressure {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &pressure{cancel: cancel, done: make(chan struct{})}
	// Many small requests, several in flight per connection, from clients
	// connected in advance so that the load starts at once: the I/O
	// pressure query counts only while a broker takes at least one produce
	// request a second over its one-minute window.
	var clients []*kgo.Client
	for range 4 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.ProducerLinger(0),
			kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5),
			kgo.ProducerBatchMaxBytes(16<<10), kgo.MaxBufferedRecords(4096), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			t.Fatalf("pressure producer: %v", err)
		}
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("pressure producer: %v", err)
		}
		clients = append(clients, cl)
	}
	go func() {
		defer close(p.done)
		defer func() {
			for _, cl := range clients {
				cl.Close()
			}
		}()
		for w.latest() < from {
			if sleepOrDone(ctx, 100*time.Millisecond) {
				return
			}
		}
		onset := w.latest()
		p.mu.Lock()
		p.started = time.Now()
		p.mu.Unlock()
		pctx, stop := context.WithTimeout(ctx, 3*time.Minute)
		defer stop()
		var wg sync.WaitGroup
		for _, cl := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := make([]byte, 512)
				for pctx.Err() == nil {
					cl.Produce(pctx, &kgo.Record{Topic: "pressure", Value: v}, nil)
				}
			}()
		}
		for r := w.latest(); r == 0 || r > onset/fall; r = w.latest() {
			if sleepOrDone(pctx, 100*time.Millisecond) {
				break
			}
		}
		stop()
		wg.Wait()
		p.mu.Lock()
		p.ended = time.Now()
		p.mu.Unlock()
	}()
	return p
}

func (p *pressure) stop() {
	p.cancel()
	<-p.done
}

func sleepOrDone(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(d):
		return false
	}
}

type metricsSample struct {
	at      time.Time
	brokers []executor.BrokerMetrics
	// produce is each broker's produce requests per second over the last
	// minute: the I/O pressure query's gate.
	produce map[int32]float64
}

type metricsWatch struct {
	mu      sync.Mutex
	samples []metricsSample
}

// watchMetrics samples the default queries every second until the test
// ends, as the throttle controller sees them.
func watchMetrics(t *testing.T, p *metrics.Prometheus, brokers []int32) *metricsWatch {
	t.Helper()
	w := &metricsWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for {
			s, err := p.Sample(ctx, brokers)
			produce, perr := p.Query(ctx, `sum by (broker) (rate(kafka_network_requests_completed_total{request="Produce"}[1m]))`)
			if err == nil && perr == nil {
				w.mu.Lock()
				w.samples = append(w.samples, metricsSample{time.Now(), s, produce})
				w.mu.Unlock()
			}
			if sleepOrDone(ctx, time.Second) {
				return
			}
		}
	}()
	return w
}

func (w *metricsWatch) between(from, to time.Time) []metricsSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []metricsSample
	for _, s := range w.samples {
		if !s.at.Before(from) && s.at.Before(to) {
			out = append(out, s)
		}
	}
	return out
}

// format lists the samples from origin on, every 4th, and those around the
// pressure's start and end.
func (w *metricsWatch) format(origin, started, ended time.Time) string {
	var b strings.Builder
	for i, s := range w.between(origin, time.Now()) {
		near := func(x time.Time) bool { return !x.IsZero() && s.at.Sub(x).Abs() < 5*time.Second }
		if i%4 == 0 || near(started) || near(ended) {
			fmt.Fprintf(&b, "  %6.2fs  %s\n", s.at.Sub(origin).Seconds(), formatMetrics(s.brokers, s.produce))
		}
	}
	return b.String()
}

// formatMetrics shows each broker's I/O pressure, handler idle ratio and,
// when given, produce requests per second.
func formatMetrics(ms []executor.BrokerMetrics, produce map[int32]float64) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("b%d io=%.3f idle=%.2f", m.Broker, m.IOPressure, m.HandlerIdle)
		if produce != nil {
			parts[i] += fmt.Sprintf(" prod=%.1f/s", produce[m.Broker])
		}
	}
	return strings.Join(parts, "  ")
}

// waitMetrics samples until every broker's values are finite and satisfy ok.
func waitMetrics(ctx context.Context, t *testing.T, p *metrics.Prometheus, brokers []int32, within time.Duration, ok func(executor.BrokerMetrics) bool) []executor.BrokerMetrics {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s, err := p.Sample(ctx, brokers)
		good := err == nil && len(s) == len(brokers)
		for _, b := range s {
			good = good && !math.IsNaN(b.IOPressure) && !math.IsNaN(b.HandlerIdle) && ok(b)
		}
		if good {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("brokers %v did not reach the wanted metrics within %v: last %s, %v", brokers, within, formatMetrics(s, nil), err)
		}
		if sleepOrDone(ctx, time.Second) {
			t.Fatal(ctx.Err())
		}
	}
}

// dropPressure deletes the pressure topic, after logging how much the
// producer wrote to it, and waits until the brokers no longer list it.
func dropPressure(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	ctx := context.Background()
	if ends, err := c.Admin().ListEndOffsets(ctx, "pressure"); err == nil {
		var records int64
		ends.Each(func(o kadm.ListedOffset) { records += o.Offset })
		t.Logf("the pressure producer wrote %d records of 512 B (%d MiB) before it stopped", records, records*512>>20)
	}
	if _, err := c.Admin().DeleteTopics(ctx, "pressure"); err != nil {
		t.Fatalf("deleting the pressure topic: %v", err)
	}
	for range 100 {
		td, err := c.Admin().ListTopics(ctx, "pressure")
		if d, ok := td["pressure"]; err == nil && (!ok || d.Err != nil) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the pressure topic is still listed 10 s after its deletion")
}
