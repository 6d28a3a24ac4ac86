package metrics_test

import (
	"context"
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
		queries = append(queries, r.URL.Query().Get("query"))
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
			`returned "lots" for broker 3`},
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
