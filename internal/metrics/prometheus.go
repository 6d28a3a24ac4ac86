// Package metrics reads broker load from Prometheus for the dynamic
// throttle. It implements the executor's MetricsSource port.
package metrics

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

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

// Prometheus queries a Prometheus server's HTTP API through client_golang's
// API client.
type Prometheus struct {
	base             *url.URL
	api              promv1.API
	attempts         int
	IOPressureQuery  string
	HandlerIdleQuery string
}

// Config says where Prometheus is, what to ask it and how to log in.
type Config struct {
	// URL is the server's base URL, http or https. Credentials inside it
	// are sent as basic auth, as before Username and Password existed.
	URL string
	// IOPressureQuery and HandlerIdleQuery default to the Default queries.
	IOPressureQuery, HandlerIdleQuery string
	// Username and Password log in with HTTP basic auth.
	Username, Password string
	// BearerToken is sent as `Authorization: Bearer <token>`. At most one
	// of it and Username may be set.
	BearerToken string
	// CACertPEM, when set, is the only CA trusted for an https URL, as a
	// Prometheus with its own CA (tls_server_config) needs.
	CACertPEM []byte
}

// NewPrometheus returns a client of the server at baseURL without
// credentials other than those inside the URL.
func NewPrometheus(baseURL, ioQuery, idleQuery string) (*Prometheus, error) {
	return New(Config{URL: baseURL, IOPressureQuery: ioQuery, HandlerIdleQuery: idleQuery})
}

// New returns a client of the server cfg names. Queries are idempotent
// reads, so transport errors and 429/5xx answers are retried, a few times
// with backoff; the throttle controller holds the rate if they still fail.
func New(cfg Config) (*Prometheus, error) {
	u, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus_url %q is not an http(s) URL", cfg.URL)
	}
	if cfg.BearerToken != "" && (cfg.Username != "" || cfg.Password != "") {
		return nil, errors.New("set either basic auth or a bearer token for Prometheus, not both")
	}
	// The settings of http.DefaultTransport, with our own TLS config.
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if len(cfg.CACertPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CACertPEM) {
			return nil, errors.New("ca_cert holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	retrying := retryablehttp.NewClient()
	retrying.RetryMax = 2
	retrying.RetryWaitMin = 200 * time.Millisecond
	retrying.RetryWaitMax = 2 * time.Second
	retrying.HTTPClient.Timeout = 10 * time.Second
	retrying.HTTPClient.Transport = transport
	retrying.Logger = nil
	attempts := retrying.RetryMax + 1
	// After the last attempt: a response (429, 5xx) goes on to the API
	// client, which reports its status; a transport error loses the
	// request URL (query and all), which says nothing the base URL does not.
	retrying.ErrorHandler = func(resp *http.Response, err error, tries int) (*http.Response, error) {
		if err == nil {
			return resp, nil
		}
		if resp != nil {
			resp.Body.Close()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &transportError{attempts: tries, err: err}
	}
	var rt http.RoundTripper = &retryablehttp.RoundTripper{Client: retrying}
	switch {
	case cfg.BearerToken != "":
		rt = authRoundTripper{next: rt, header: "Bearer " + cfg.BearerToken}
	case cfg.Username != "" || cfg.Password != "":
		basic := base64.StdEncoding.EncodeToString([]byte(cfg.Username + ":" + cfg.Password))
		rt = authRoundTripper{next: rt, header: "Basic " + basic}
	}
	client, err := api.NewClient(api.Config{Address: u.String(), RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus_url %q: %w", u.Redacted(), err)
	}
	if cfg.IOPressureQuery == "" {
		cfg.IOPressureQuery = DefaultIOPressureQuery
	}
	if cfg.HandlerIdleQuery == "" {
		cfg.HandlerIdleQuery = DefaultHandlerIdleQuery
	}
	return &Prometheus{
		base:             u,
		api:              promv1.NewAPI(statusClient{Client: client}),
		attempts:         attempts,
		IOPressureQuery:  cfg.IOPressureQuery,
		HandlerIdleQuery: cfg.HandlerIdleQuery,
	}, nil
}

// authRoundTripper sets the Authorization header on every request.
type authRoundTripper struct {
	next   http.RoundTripper
	header string
}

func (a authRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	// A RoundTripper must not modify the caller's request.
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", a.header)
	return a.next.RoundTrip(req)
}

type transportError struct {
	attempts int
	err      error
}

func (e *transportError) Error() string {
	if e.attempts == 1 {
		// Not retried: a TLS or proxy error that another try cannot mend.
		return fmt.Sprintf("failed: %v", e.err)
	}
	return fmt.Sprintf("failed after %d attempts: %v", e.attempts, e.err)
}

func (e *transportError) Unwrap() error { return e.err }

// StatusError is an HTTP answer that is not Prometheus' own query API
// JSON: a refused login (401, 403) from Prometheus or a proxy before it,
// a wrong path (404), a proxy's 502.
type StatusError struct {
	Code   int
	Status string
	Body   string
}

func (e *StatusError) Error() string {
	msg := "answered HTTP " + e.Status
	if b := strings.TrimSpace(e.Body); b != "" {
		if len(b) > 200 {
			b = b[:200] + "..."
		}
		msg += ": " + b
	}
	switch e.Code {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += "; check the metrics block's basic_auth or bearer_token"
	}
	return msg
}

// statusClient turns an answer that is not the query API's JSON into a
// StatusError, which keeps the status code that client_golang's own error
// only prints ("client error: 401").
type statusClient struct{ api.Client }

func (c statusClient) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	resp, body, err := c.Client.Do(ctx, req)
	if err != nil || resp.StatusCode/100 == 2 {
		return resp, body, err
	}
	var answer struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(body, &answer) == nil && answer.Status == "error" {
		return resp, body, nil // the API client reports errorType and error
	}
	if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented {
		return resp, body, nil // the API client falls back from POST to GET
	}
	return resp, body, &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: string(body)}
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

// Query runs an instant query and returns its value per `broker` label.
func (p *Prometheus) Query(ctx context.Context, q string) (map[int32]float64, error) {
	// The zero time leaves the evaluation time to the server's clock.
	val, _, err := p.api.Query(ctx, q, time.Time{})
	if err != nil {
		var te *transportError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("querying Prometheus at %s %w", p.base.Redacted(), te)
		}
		// The HTTP client's error repeats the URL, query and all; the base
		// URL and the reason say enough.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("querying Prometheus at %s: %w", p.base.Redacted(), err)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %q returned a %s; it must return an instant vector with one series per broker", q, val.Type())
	}
	out := make(map[int32]float64, len(vec))
	for _, s := range vec {
		id, err := strconv.ParseInt(string(s.Metric["broker"]), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("query %q returned a series without a numeric `broker` label: %v; label each broker's scrape target with broker=\"<node.id>\"", q, s.Metric)
		}
		if _, dup := out[int32(id)]; dup {
			return nil, fmt.Errorf("query %q returned more than one series for broker %d; aggregate it by (broker)", q, id)
		}
		out[int32(id)] = float64(s.Value)
	}
	return out, nil
}
