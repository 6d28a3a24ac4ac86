// Package metrics reads broker load from Prometheus for the dynamic
// throttle. It implements the executor's MetricsSource port.
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// Default queries, for brokers scraped through the Prometheus JMX exporter
// agent with the rules in tools/jmx-exporter/kafka-rules.yaml (the test
// clusters of internal/kafkatest use the same). Each scrape target carries
// the label `broker` with the broker's node.id, and each query aggregates
// `by (broker)`, so it returns exactly one series per broker.
const (
	// DefaultIOPressureQuery is the 99th percentile, in seconds, of the time
	// produce requests spend appending to the broker's own log
	// (kafka.network:type=RequestMetrics,name=LocalTimeMs,request=Produce).
	// Appends go to the page cache and stall when the disk cannot write
	// back fast enough, which is the harm reassignment I/O does to clients;
	// Cruise Control watches the same percentile for disk load.
	//
	// Kafka computes its percentiles over a reservoir of recent requests
	// that keeps its old samples while few new requests come, so the
	// percentile counts only while a broker takes at least one produce
	// request per second over the last minute; below that it reads 0. A
	// broker without such traffic has no producers to protect from write
	// stalls, and kafkascale's own progress records (a few writes a minute)
	// must not revive the percentile of a load long gone.
	DefaultIOPressureQuery = `max by (broker) (kafka_network_request_local_time_p99_seconds{request="Produce"})` +
		` * on (broker) (sum by (broker) (rate(kafka_network_requests_completed_total{request="Produce"}[1m])) >= bool 1)`
	// DefaultHandlerIdleQuery is the request handler (I/O thread) pool's
	// idle ratio, 0 (saturated) to 1 (idle): Kafka's own one-minute rate of
	// kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent,
	// which every scrape interval can read. That rate reads 0 until the
	// meter's first tick, 5 s after the pool starts; a broker whose
	// handlers have not yet been idle for 10 s in all is left out (its
	// metrics count as missing) rather than taken for saturated.
	DefaultHandlerIdleQuery = `max by (broker) (kafka_server_request_handler_avg_idle_ratio` +
		` unless (kafka_server_request_handler_idle_seconds_total < 10))`
)

var _ executor.MetricsSource = (*Prometheus)(nil)

// Prometheus queries a Prometheus server's HTTP API.
type Prometheus struct {
	base             *url.URL
	client           *retryablehttp.Client
	IOPressureQuery  string
	HandlerIdleQuery string
}

// NewPrometheus returns a client of the server at baseURL. Queries are
// idempotent reads, so transport errors and 429/5xx answers are retried,
// a few times with backoff; the throttle controller holds the rate if they
// still fail.
func NewPrometheus(baseURL, ioQuery, idleQuery string) (*Prometheus, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus_url %q is not an http(s) URL", baseURL)
	}
	c := retryablehttp.NewClient()
	c.RetryMax = 2
	c.RetryWaitMin = 200 * time.Millisecond
	c.RetryWaitMax = 2 * time.Second
	c.HTTPClient.Timeout = 10 * time.Second
	c.Logger = nil
	if ioQuery == "" {
		ioQuery = DefaultIOPressureQuery
	}
	if idleQuery == "" {
		idleQuery = DefaultHandlerIdleQuery
	}
	return &Prometheus{base: u, client: c, IOPressureQuery: ioQuery, HandlerIdleQuery: idleQuery}, nil
}

// Sample runs both queries and joins them per broker. A broker a query has
// no series for gets NaN in that field.
func (p *Prometheus) Sample(ctx context.Context, brokers []int32) ([]executor.BrokerMetrics, error) {
	io, err := p.Query(ctx, p.IOPressureQuery)
	if err != nil {
		return nil, fmt.Errorf("I/O pressure query: %w", err)
	}
	idle, err := p.Query(ctx, p.HandlerIdleQuery)
	if err != nil {
		return nil, fmt.Errorf("handler idle query: %w", err)
	}
	out := make([]executor.BrokerMetrics, 0, len(brokers))
	for _, b := range brokers {
		m := executor.BrokerMetrics{Broker: b, IOPressure: math.NaN(), HandlerIdle: math.NaN()}
		if v, ok := io[b]; ok {
			m.IOPressure = v
		}
		if v, ok := idle[b]; ok {
			m.HandlerIdle = v
		}
		out = append(out, m)
	}
	return out, nil
}

type queryResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// Query runs an instant query and returns its value per `broker` label.
func (p *Prometheus) Query(ctx context.Context, q string) (map[int32]float64, error) {
	u := *p.base
	u.Path += "/api/v1/query"
	u.RawQuery = url.Values{"query": {q}}.Encode()
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		// The client's error repeats the URL, query and all, twice; the
		// server and the network's own reason say enough.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("querying Prometheus at %s failed after %d attempts: %w", p.base.Redacted(), p.client.RetryMax+1, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	var qr queryResponse
	if err := json.Unmarshal(body, &qr); err != nil {
		return nil, fmt.Errorf("prometheus answered %s with a body that is not its query API's JSON: %w", resp.Status, err)
	}
	if qr.Status != "success" {
		return nil, fmt.Errorf("prometheus answered %s: %s: %s", resp.Status, qr.ErrorType, qr.Error)
	}
	if qr.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q returned a %s; it must return an instant vector with one series per broker", q, qr.Data.ResultType)
	}
	out := make(map[int32]float64, len(qr.Data.Result))
	for _, r := range qr.Data.Result {
		id, err := strconv.ParseInt(r.Metric["broker"], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("query %q returned a series without a numeric `broker` label: %v; label each broker's scrape target with broker=\"<node.id>\"", q, r.Metric)
		}
		if _, dup := out[int32(id)]; dup {
			return nil, fmt.Errorf("query %q returned more than one series for broker %d; aggregate it by (broker)", q, id)
		}
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q returned %q for broker %d: %w", q, s, id, err)
		}
		out[int32(id)] = v
	}
	return out, nil
}
