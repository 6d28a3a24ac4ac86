package metrics_test

import (
	"context"
	"encoding/pem"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/metrics"
)

// answering serves one fixed query API answer, and records the query.
func answering(t *testing.T, status int, body string) (*metrics.Prometheus, *[]string) {
	t.Helper()
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/prefix/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		// client_golang POSTs the query as a form (GET only on 405).
		queries = append(queries, r.FormValue("query"))
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	p, err := metrics.NewPrometheus(srv.URL+"/prefix/", "io_q", "idle_q")
	if err != nil {
		t.Fatal(err)
	}
	return p, &queries
}

func TestQueryAnswers(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"per broker", `{"status":"success","data":{"resultType":"vector","result":[
			{"metric":{"broker":"1"},"value":[1,"0.25"]},{"metric":{"broker":"2","instance":"x"},"value":[1,"NaN"]}]}}`, ""},
		{"no broker label", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"x"},"value":[1,"1"]}]}}`,
			"without a numeric `broker` label"},
		{"two series of one broker", `{"status":"success","data":{"resultType":"vector","result":[
			{"metric":{"broker":"1","request":"a"},"value":[1,"1"]},{"metric":{"broker":"1","request":"b"},"value":[1,"2"]}]}}`,
			"more than one series for broker 1; aggregate it by (broker)"},
		{"range vector", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, "returned a matrix"},
		{"bad value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"broker":"3"},"value":[1,"lots"]}]}}`,
			// client_golang decodes the values, and says which one it could not.
			`parsing "lots": invalid syntax`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := answering(t, http.StatusOK, tc.body)
			got, err := p.Query(context.Background(), "q")
			if tc.want == "" {
				if err != nil || len(got) != 2 || got[1] != 0.25 || !math.IsNaN(got[2]) {
					t.Fatalf("Query = %v, %v; want broker 1 0.25 and broker 2 NaN", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Query error = %v; want it to say %q", err, tc.want)
			}
		})
	}
}

func TestQueryReportsPrometheusErrors(t *testing.T) {
	p, _ := answering(t, http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"parse error at char 3"}`)
	_, err := p.Query(context.Background(), "q(")
	if err == nil || !strings.Contains(err.Error(), "bad_data: parse error at char 3") {
		t.Fatalf("Query error = %v; want Prometheus's own message", err)
	}
}

// Sample asks both queries and joins them per broker; a broker missing
// from an answer gets NaN there.
func TestSampleJoinsByBroker(t *testing.T) {
	p, queries := answering(t, http.StatusOK, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"broker":"1"},"value":[1,"0.5"]}]}}`)
	got, err := p.Sample(context.Background(), []int32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(*queries, ",") != "io_q,idle_q" {
		t.Errorf("queries sent: %v", *queries)
	}
	if len(got) != 2 || got[0].Broker != 1 || got[0].IOPressure != 0.5 || got[0].HandlerIdle != 0.5 ||
		got[1].Broker != 2 || !math.IsNaN(got[1].IOPressure) || !math.IsNaN(got[1].HandlerIdle) {
		t.Fatalf("Sample = %+v; want broker 1 with 0.5 and broker 2 with NaN", got)
	}
}

// An unreachable Prometheus fails the sample quickly (the controller then
// holds the rate), naming what failed.
func TestSampleUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, err := metrics.NewPrometheus("http://"+addr, "", "")
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err = p.Sample(context.Background(), []int32{1})
	want := "I/O pressure query: querying Prometheus at http://" + addr + " failed after 3 attempts: dial tcp " + addr
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "api/v1/query") {
		t.Fatalf("Sample error = %v; want it to start %q, without the query URL", err, want)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("Sample took %v to fail against a closed port", d)
	}
}

func TestNewPrometheusRejectsNonHTTP(t *testing.T) {
	for _, u := range []string{"127.0.0.1:9090", "ftp://x", "http://"} {
		if _, err := metrics.NewPrometheus(u, "", ""); err == nil || !strings.Contains(err.Error(), "is not an http(s) URL") {
			t.Errorf("NewPrometheus(%q) error = %v", u, err)
		}
	}
}

// headerServer answers one series, and records each request's
// Authorization header; it answers 401 without the one it wants.
func headerServer(t *testing.T, want string, tlsServer bool) (*httptest.Server, *[]string) {
	t.Helper()
	var got []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != want {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"broker":"1"},"value":[1,"0.5"]}]}}`))
	})
	srv := httptest.NewUnstartedServer(h)
	if tlsServer {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestAuthHeaders(t *testing.T) {
	cases := []struct {
		name, want string
		cfg        func(url string) metrics.Config
	}{
		{"basic auth", "Basic dXNlcjpwJHNz", func(u string) metrics.Config {
			return metrics.Config{URL: u, Username: "user", Password: "p$ss"}
		}},
		{"bearer token", "Bearer s3cret", func(u string) metrics.Config { return metrics.Config{URL: u, BearerToken: "s3cret"} }},
		// Credentials inside the URL still log in, as before.
		{"credentials in the URL", "Basic dXNlcjpwJHNz", func(u string) metrics.Config {
			return metrics.Config{URL: strings.Replace(u, "http://", "http://user:p$ss@", 1)}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := headerServer(t, tc.want, false)
			p, err := metrics.New(tc.cfg(srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			v, err := p.Query(context.Background(), "q")
			if err != nil || v[1] != 0.5 {
				t.Fatalf("Query = %v, %v; want broker 1 at 0.5", v, err)
			}
			if len(*got) != 1 || (*got)[0] != tc.want {
				t.Errorf("Authorization headers sent: %q; want one %q", *got, tc.want)
			}
		})
	}
}

// A refused login is an error naming the server and the status, not an
// empty answer the throttle would read as "no metrics"; 401 is not retried.
func TestAuthRefused(t *testing.T) {
	srv, got := headerServer(t, "Bearer right", false)
	p, err := metrics.New(metrics.Config{URL: srv.URL, BearerToken: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Sample(context.Background(), []int32{1})
	want := "I/O pressure query: querying Prometheus at " + srv.URL + ": answered HTTP 401 Unauthorized: Unauthorized; check the metrics block's basic_auth or bearer_token"
	if err == nil || err.Error() != want {
		t.Fatalf("Sample error = %v; want %q", err, want)
	}
	var se *metrics.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Errorf("Sample error %v does not carry status 401", err)
	}
	if len(*got) != 1 {
		t.Errorf("%d requests for one refused query; want 1 (no retry)", len(*got))
	}
}

// ca_cert is the CA trusted for an https Prometheus; without it the
// server's own CA is unknown.
func TestCACert(t *testing.T) {
	srv, _ := headerServer(t, "", true)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	p, err := metrics.New(metrics.Config{URL: srv.URL, CACertPEM: ca})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := p.Query(context.Background(), "q"); err != nil || v[1] != 0.5 {
		t.Fatalf("Query with the CA = %v, %v; want broker 1 at 0.5", v, err)
	}
	p, err = metrics.New(metrics.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Query(context.Background(), "q")
	if err == nil || !strings.Contains(err.Error(), "querying Prometheus at "+srv.URL) || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("Query without the CA: %v; want an unknown-authority error naming %s", err, srv.URL)
	}
	if _, err := metrics.New(metrics.Config{URL: srv.URL, CACertPEM: []byte("not a cert")}); err == nil || !strings.Contains(err.Error(), "ca_cert holds no PEM certificate") {
		t.Errorf("New with a bad CA: %v", err)
	}
}

func TestBasicAuthAndBearerConflict(t *testing.T) {
	_, err := metrics.New(metrics.Config{URL: "http://x", Username: "u", Password: "p", BearerToken: "t"})
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("New with both: %v", err)
	}
}
