package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/metrics"
)

// Probe refuses only a 2xx that is clearly not Prometheus' query API; an
// error answer of the API, a refused login or no answer is no verdict.
func TestProbe(t *testing.T) {
	serve := func(status int, ctype, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/v1/query" || r.URL.Query().Get("query") != "1" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", ctype)
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	type probeCase struct {
		name    string
		url     string
		notProm bool
		noErr   bool
	}
	cases := []probeCase{
		{"prometheus", serve(200, "application/json", `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`), false, true},
		{"an error answer of the API", serve(400, "application/json", `{"status":"error","errorType":"bad_data","error":"x"}`), false, false},
		{"a web page", serve(200, "text/html", "<html><body>Grafana</body></html>"), true, false},
		{"other JSON", serve(200, "application/json", `{"ok":true}`), true, false},
		{"a refused login", serve(401, "text/plain", "unauthorized"), false, false},
	}
	// Closed only once the servers above hold their ports: closed first,
	// its port was free for one of them to take, and "nothing listening"
	// then reached the JSON server (CI, ci18).
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	cases = append(cases, probeCase{"nothing listening", closed.URL, false, false})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := metrics.Probe(context.Background(), metrics.Config{URL: tc.url})
			var np *metrics.NotPrometheusError
			if got := errors.As(err, &np); got != tc.notProm {
				t.Fatalf("Probe = %v; NotPrometheusError %v, want %v", err, got, tc.notProm)
			}
			if tc.noErr && err != nil {
				t.Fatalf("Probe = %v, want nil", err)
			}
		})
	}
}
