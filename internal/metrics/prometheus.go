// Package metrics reads broker load from Prometheus for the dynamic
// throttle. It implements the executor's MetricsSource port.
package metrics

import (
	"context"
	"encoding/json"
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

// Default queries for brokers scraped through the JMX exporter with the
// rules in docs (kafkatest uses the same). Each series carries the label
// `broker` with the broker id, set by the Prometheus scrape config.
const (
	// DefaultIOPressureQuery is the share of time request handlers wait on
	// the log: the local time of produce requests relative to one second,
	// which rises when the disk is saturated.
	DefaultIOPressureQuery = `max by (broker) (kafka_network_requestmetrics_localtimems{request="Produce",quantile="0.99"}) / 1000`
	// DefaultHandlerIdleQuery is the request handler pool's idle ratio.
	DefaultHandlerIdleQuery = `avg by (broker) (kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_oneminuterate)`
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
		return nil, err
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
	out := map[int32]float64{}
	for _, r := range qr.Data.Result {
		id, err := strconv.Atoi(r.Metric["broker"])
		if err != nil {
			return nil, fmt.Errorf("query %q returned a series without a numeric `broker` label: %v", q, r.Metric)
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
