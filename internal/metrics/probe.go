package metrics

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ProbeTimeout bounds Probe: it runs at plan time, where a slow answer
// must not hold the plan.
const ProbeTimeout = 3 * time.Second

// NotPrometheusError is a server that answered a query of Prometheus' HTTP
// API with 2xx but not with the API's JSON: a web page, a Grafana, another
// service on that port.
type NotPrometheusError struct {
	URL         string // the query's URL, credentials redacted
	Status      string
	ContentType string
	Body        string // the start of the body
}

func (e *NotPrometheusError) Error() string {
	return fmt.Sprintf("GET %s answered %s with %q, not the JSON of Prometheus' query API: %q",
		e.URL, e.Status, e.ContentType, e.Body)
}

// Probe sends one instant query ("1") to the server cfg names, once,
// within ProbeTimeout. It returns nil when the answer is the query API's
// JSON (an error answer, such as a refused query, included), a
// *NotPrometheusError for a 2xx that is clearly something else, and any
// other error when it could not tell (no answer, a timeout, a refused
// login, a proxy's 5xx): callers at plan time refuse only on
// *NotPrometheusError.
func Probe(ctx context.Context, cfg Config) error {
	u, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("prometheus_url %q is not an http(s) URL", cfg.URL)
	}
	transport := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSHandshakeTimeout: ProbeTimeout}
	if len(cfg.CACertPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CACertPEM) {
			return errors.New("ca_cert holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: ProbeTimeout}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	q := u.JoinPath("api", "v1", "query")
	q.RawQuery = url.Values{"query": {"1"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, q.String(), nil)
	if err != nil {
		return err
	}
	switch {
	case cfg.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
	case cfg.Username != "" || cfg.Password != "":
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cfg.Username+":"+cfg.Password)))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: string(body)}
	}
	var answer struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(body, &answer) == nil && (answer.Status == "success" || answer.Status == "error") {
		return nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	start := strings.TrimSpace(string(body))
	if len(start) > 80 {
		start = start[:80] + "..."
	}
	q.User = nil
	return &NotPrometheusError{URL: q.Redacted(), Status: resp.Status, ContentType: ct, Body: start}
}
