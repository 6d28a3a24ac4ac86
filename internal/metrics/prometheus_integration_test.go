package metrics_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/metrics"
)

func TestMain(m *testing.M) { kafkatest.Main(m, nil) }

// The default queries, against real brokers carrying the JMX exporter agent
// and a real Prometheus scraping them, give every broker a finite value.
// I/O pressure reads 0 until producers write at least a request a second,
// and then the percentile the broker reports.
func TestPrometheusDefaultsOnRealBrokers(t *testing.T) {
	m := kafkatest.StartMetricsT(t, kafkatest.MetricsOptions{Brokers: []int32{1, 2, 3}})
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, JVMArgs: m.JVMArgs})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := m.WaitScraped(ctx, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	p, err := metrics.NewPrometheus(m.URL(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	brokers := []int32{1, 2, 3}

	idle := sampleUntilFinite(ctx, t, p, brokers)
	for _, s := range idle {
		if s.IOPressure != 0 {
			t.Errorf("broker %d: I/O pressure %g before any produce request; want 0", s.Broker, s.IOPressure)
		}
		if s.HandlerIdle < 0.3 || s.HandlerIdle > 1.05 {
			t.Errorf("broker %d: handler idle %g on a cluster doing nothing; want near 1", s.Broker, s.HandlerIdle)
		}
	}
	t.Logf("idle cluster: %+v", idle)

	// Produce to a partition led by each broker, one request after the
	// other, until Prometheus has seen at least one a second on each.
	if _, err := c.Admin().CreateTopic(ctx, 3, 3, nil, "io"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 64<<10)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for part := range int32(3) {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "io", Partition: part, Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		rates, err := p.Query(ctx, `sum by (broker) (rate(kafka_network_requests_completed_total{request="Produce"}[1m]))`)
		if err != nil {
			t.Fatal(err)
		}
		if rates[1] >= 1 && rates[2] >= 1 && rates[3] >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus saw no produce request a second on every broker within 2m: %v", rates)
		}
	}
	busy := sampleUntilFinite(ctx, t, p, brokers)
	// While producers write, the query is the percentile itself: their
	// difference, evaluated at one instant, is 0 on every broker.
	diff, err := p.Query(ctx, `(`+metrics.DefaultIOPressureQuery+`) - on (broker) max by (broker) (kafka_network_request_local_time_p99_seconds{request="Produce"})`)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range brokers {
		if d, ok := diff[b]; !ok || d != 0 {
			t.Errorf("broker %d: I/O pressure differs from its produce local time p99 by %v (present %v) while producers write", b, d, ok)
		}
	}
	t.Logf("while producing: %+v", busy)

	// A broker nobody scrapes has no values: the controller holds the rate.
	got, err := p.Sample(ctx, []int32{9})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !math.IsNaN(got[0].IOPressure) || !math.IsNaN(got[0].HandlerIdle) {
		t.Errorf("Sample of unscraped broker 9 = %+v; want NaN in both fields", got)
	}
}

// sampleUntilFinite samples until every broker has both values, which takes
// a few scrapes after a broker starts.
func sampleUntilFinite(ctx context.Context, t *testing.T, p *metrics.Prometheus, brokers []int32) []executor.BrokerMetrics {
	t.Helper()
	for {
		got, err := p.Sample(ctx, brokers)
		if err != nil {
			t.Fatal(err)
		}
		finite := len(got) == len(brokers)
		for _, s := range got {
			finite = finite && !math.IsNaN(s.IOPressure) && !math.IsInf(s.IOPressure, 0) && !math.IsNaN(s.HandlerIdle) && !math.IsInf(s.HandlerIdle, 0)
		}
		if finite {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the default queries never gave every broker of %v finite values: last sample %+v", brokers, got)
		case <-time.After(time.Second):
		}
	}
}
