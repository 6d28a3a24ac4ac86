package platform_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

// These tests use a scripted server for the answers that the real local
// server cannot be made to give: 429, 503, 400, 401 and slow answers.

const testToken = "tok-3f9a1c77e2"

// logCapture records every log line, so that tests can assert both that
// something was logged and that the token never was.
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCapture) fn(_ context.Context, level platform.LogLevel, msg string, fields map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%s %s %v", level, msg, fields))
}

func (l *logCapture) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// assertNoToken fails when the token shows in the logs or in err, and also
// when nothing was logged at all, which would make the check empty.
func (l *logCapture) assertNoToken(t *testing.T, err error) {
	t.Helper()
	logs := l.text()
	if logs == "" {
		t.Fatal("nothing was logged; the token check would prove nothing")
	}
	if strings.Contains(logs, testToken) {
		t.Errorf("the token appears in the logs:\n%s", logs)
	}
	if err != nil && strings.Contains(err.Error(), testToken) {
		t.Errorf("the token appears in the error: %v", err)
	}
}

// script answers the n-th request (from 0) with steps[n], and the last step
// for every later one.
type script struct {
	t     *testing.T
	steps []func(w http.ResponseWriter, r *http.Request)

	mu     sync.Mutex
	seen   []*http.Request
	bodies []string
	times  []time.Time
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.seen)
	s.seen = append(s.seen, r)
	s.bodies = append(s.bodies, string(body))
	s.times = append(s.times, time.Now())
	s.mu.Unlock()
	s.steps[min(n, len(s.steps)-1)](w, r)
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func serve(t *testing.T, steps ...func(w http.ResponseWriter, r *http.Request)) (*script, *httptest.Server) {
	t.Helper()
	s := &script{t: t, steps: steps}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func answer(status int, body any, headers ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
}

func fail(status int, msg string, headers ...string) func(http.ResponseWriter, *http.Request) {
	return answer(status, platform.ErrorBody{Error: msg}, headers...)
}

// stall holds the answer until the client gives up on it.
func stall(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

var cluster = platform.Cluster{
	ID:          "local",
	BrokerCount: 3,
	Brokers: []platform.Broker{
		{ID: 1, Rack: "a", State: platform.BrokerRunning},
		{ID: 2, Rack: "b", State: platform.BrokerRunning},
		{ID: 3, State: platform.BrokerStarting},
	},
}

func newClient(t *testing.T, endpoint string, logs *logCapture, tweak ...func(*platform.HTTPConfig)) *platform.HTTPClient {
	t.Helper()
	cfg := platform.HTTPConfig{
		Endpoint:     endpoint,
		ClusterID:    "local",
		Token:        testToken,
		Timeout:      2 * time.Second,
		MaxRetries:   3,
		RetryWaitMin: 5 * time.Millisecond,
		RetryWaitMax: 20 * time.Millisecond,
	}
	if logs != nil {
		cfg.Logger = logs.fn
	}
	for _, f := range tweak {
		f(&cfg)
	}
	c, err := platform.NewHTTPClient(cfg)
	if err != nil {
		t.Fatalf("NewHTTPClient: %v", err)
	}
	return c
}

func TestGetClusterSendsBearerTokenAndDecodes(t *testing.T) {
	s, srv := serve(t, answer(http.StatusOK, cluster))
	logs := &logCapture{}
	c := newClient(t, srv.URL, logs)

	got, err := c.GetCluster(context.Background())
	if err != nil {
		t.Fatalf("GetCluster: %v", err)
	}
	if got.ID != "local" || got.BrokerCount != 3 || len(got.Brokers) != 3 || got.Brokers[0].Rack != "a" || got.Brokers[2].State != platform.BrokerStarting || got.Operation != nil {
		t.Errorf("GetCluster = %+v, want %+v", got, cluster)
	}
	r := s.seen[0]
	if r.Method != http.MethodGet || r.URL.Path != "/v1/clusters/local" {
		t.Errorf("request = %s %s", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
		t.Errorf("Authorization = %q", got)
	}
	if r.URL.RawQuery != "" {
		t.Errorf("query = %q, want none", r.URL.RawQuery)
	}
	logs.assertNoToken(t, nil)
}

func TestTokenFromFileLikeValueIsTrimmedAndEmptyTokenSendsNoHeader(t *testing.T) {
	s, srv := serve(t, answer(http.StatusOK, cluster))
	c := newClient(t, srv.URL, nil, func(cfg *platform.HTTPConfig) { cfg.Token = "  " + testToken + "\n" })
	if _, err := c.GetCluster(context.Background()); err != nil {
		t.Fatal(err)
	}
	c = newClient(t, srv.URL, nil, func(cfg *platform.HTTPConfig) { cfg.Token = "" })
	if _, err := c.GetCluster(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.seen[0].Header.Get("Authorization"); got != "Bearer "+testToken {
		t.Errorf("Authorization = %q, want the token without white space", got)
	}
	if got, ok := s.seen[1].Header["Authorization"]; ok {
		t.Errorf("Authorization = %q sent with no token", got)
	}
}

func TestResolveTokenPrefersAttributeOverEnv(t *testing.T) {
	t.Setenv(platform.TokenEnvVar, "from-env")
	if got := platform.ResolveToken("from-attr"); got != "from-attr" {
		t.Errorf("ResolveToken(attr) = %q", got)
	}
	if got := platform.ResolveToken(""); got != "from-env" {
		t.Errorf("ResolveToken(\"\") = %q, want the env value", got)
	}
}

func TestNewHTTPClientRejectsBadConfigWithoutEchoingTheToken(t *testing.T) {
	cases := []struct {
		name string
		cfg  platform.HTTPConfig
		want string
	}{
		{"no endpoint", platform.HTTPConfig{ClusterID: "local"}, "endpoint is empty"},
		{"no scheme", platform.HTTPConfig{Endpoint: "127.0.0.1:7070", ClusterID: "local"}, "must start with http:// or https://"},
		{"query", platform.HTTPConfig{Endpoint: "http://127.0.0.1:7070/?token=x", ClusterID: "local"}, "must not have a query"},
		{"no cluster", platform.HTTPConfig{Endpoint: "http://127.0.0.1:7070"}, "cluster_id is empty"},
		{"token with newline", platform.HTTPConfig{Endpoint: "http://127.0.0.1:7070", ClusterID: "local", Token: testToken + "\nX-Evil: 1"}, "control character"},
		{"token in endpoint", platform.HTTPConfig{Endpoint: "http://" + testToken + "@127.0.0.1:7070", ClusterID: "local", Token: testToken}, "endpoint contains the token"},
		{"waits inverted", platform.HTTPConfig{Endpoint: "http://127.0.0.1:7070", ClusterID: "local", RetryWaitMin: time.Second, RetryWaitMax: time.Millisecond}, "shortest retry wait (1s) is longer than the longest (1ms)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := platform.NewHTTPClient(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("the error quotes the token: %v", err)
			}
		})
	}
}

func TestRetryAfterSecondsIsHonouredOn429(t *testing.T) {
	s, srv := serve(t,
		fail(http.StatusTooManyRequests, "slow down", "Retry-After", "1"),
		answer(http.StatusOK, cluster),
	)
	logs := &logCapture{}
	c := newClient(t, srv.URL, logs, func(cfg *platform.HTTPConfig) { cfg.RetryWaitMax = 5 * time.Second })

	if _, err := c.GetCluster(context.Background()); err != nil {
		t.Fatalf("GetCluster: %v", err)
	}
	if n := s.count(); n != 2 {
		t.Fatalf("requests = %d, want 2", n)
	}
	// Without the header the wait would have been RetryWaitMin, 5ms.
	if gap := s.times[1].Sub(s.times[0]); gap < 950*time.Millisecond {
		t.Errorf("retried after %s, want about the 1s of Retry-After", gap)
	}
	if !strings.Contains(logs.text(), "retrying request") {
		t.Errorf("the retry was not logged:\n%s", logs.text())
	}
	logs.assertNoToken(t, nil)
}

func TestRetryAfterDateIsCappedAtRetryWaitMax(t *testing.T) {
	later := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	s, srv := serve(t,
		fail(http.StatusServiceUnavailable, "maintenance", "Retry-After", later),
		answer(http.StatusOK, cluster),
	)
	c := newClient(t, srv.URL, nil, func(cfg *platform.HTTPConfig) { cfg.RetryWaitMax = 300 * time.Millisecond })

	if _, err := c.GetCluster(context.Background()); err != nil {
		t.Fatalf("GetCluster: %v", err)
	}
	if n := s.count(); n != 2 {
		t.Fatalf("requests = %d, want 2", n)
	}
	gap := s.times[1].Sub(s.times[0])
	if gap < 290*time.Millisecond || gap > 30*time.Second {
		t.Errorf("retried after %s, want the 300ms cap, not the hour the date asks", gap)
	}
}

func Test503RepeatedGivesUpAfterBoundedAttempts(t *testing.T) {
	s, srv := serve(t, fail(http.StatusServiceUnavailable, "broker pool exhausted"))
	logs := &logCapture{}
	c := newClient(t, srv.URL, logs) // MaxRetries 3

	_, err := c.SetBrokerCount(context.Background(), platform.SetBrokerCountRequest{BrokerCount: 5})
	if n := s.count(); n != 4 {
		t.Errorf("requests = %d, want 4 (1 + MaxRetries 3)", n)
	}
	var apiErr *platform.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %T %v, want *APIError", err, err)
	}
	if apiErr.StatusCode != 503 || apiErr.Attempts != 4 || apiErr.Message != "broker pool exhausted" {
		t.Errorf("APIError = %+v", apiErr)
	}
	want := "scaling API PUT /v1/clusters/local/broker-count answered 503 Service Unavailable on the last of 4 attempts: broker pool exhausted; the platform is busy or unavailable; retried 3 time(s) with backoff, try again later"
	if err.Error() != want {
		t.Errorf("err =\n%s\nwant\n%s", err, want)
	}
	if !platform.IsTransient(err) {
		t.Error("IsTransient = false for an exhausted 503")
	}
	// The body was sent again, whole, on every attempt.
	for i, b := range s.bodies {
		if b != `{"broker_count":5}` {
			t.Errorf("body of attempt %d = %q", i+1, b)
		}
	}
	logs.assertNoToken(t, err)
}

func Test400IsNotRetried(t *testing.T) {
	s, srv := serve(t, fail(http.StatusBadRequest, "broker 9 is not in the cluster"))
	c := newClient(t, srv.URL, nil)

	_, err := c.SetBrokerCount(context.Background(), platform.SetBrokerCountRequest{BrokerCount: 2, RemoveBrokerIDs: []int32{9}})
	if n := s.count(); n != 1 {
		t.Errorf("requests = %d, want exactly 1", n)
	}
	if !platform.IsBadRequest(err) || platform.IsTransient(err) {
		t.Fatalf("err = %v, want a non-transient 400", err)
	}
	want := "scaling API PUT /v1/clusters/local/broker-count answered 400 Bad Request: broker 9 is not in the cluster; the platform rejected the request; check broker_count and the brokers to remove"
	if err.Error() != want {
		t.Errorf("err =\n%s\nwant\n%s", err, want)
	}
	if got := s.bodies[0]; got != `{"broker_count":2,"remove_broker_ids":[9]}` {
		t.Errorf("body = %s", got)
	}
}

func Test401SaysWhereTheTokenComesFrom(t *testing.T) {
	// A careless server echoes the token back; it must not reach the user.
	s, srv := serve(t, fail(http.StatusUnauthorized, "token "+testToken+" expired"))
	logs := &logCapture{}
	c := newClient(t, srv.URL, logs)

	_, err := c.SetBrokerCount(context.Background(), platform.SetBrokerCountRequest{BrokerCount: 4})
	if n := s.count(); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
	if !platform.IsUnauthorized(err) {
		t.Fatalf("err = %v, want a 401", err)
	}
	want := "scaling API PUT /v1/clusters/local/broker-count answered 401 Unauthorized: token [REDACTED] expired; check the token (attribute `token` or env KAFKASCALE_SCALING_TOKEN)"
	if err.Error() != want {
		t.Errorf("err =\n%s\nwant\n%s", err, want)
	}
	logs.assertNoToken(t, err)
}

func TestOtherStatusesAreNotRetriedAndSayWhatToDo(t *testing.T) {
	cases := []struct {
		status int
		call   func(*platform.HTTPClient) error
		is     func(error) bool
		want   string
	}{
		{http.StatusNotFound, func(c *platform.HTTPClient) error { _, err := c.GetCluster(context.Background()); return err }, platform.IsNotFound,
			`answered 404 Not Found: no such cluster; check cluster_id "local" and the endpoint`},
		{http.StatusNotFound, func(c *platform.HTTPClient) error { _, err := c.GetOperation(context.Background(), "op-7"); return err }, platform.IsNotFound,
			"GET /v1/operations/op-7 answered 404 Not Found: no such cluster; the platform does not know this operation"},
		{http.StatusConflict, func(c *platform.HTTPClient) error {
			_, err := c.SetBrokerCount(context.Background(), platform.SetBrokerCountRequest{BrokerCount: 6})
			return err
		}, platform.IsConflict, "another scaling operation with a different target is under way"},
		{http.StatusForbidden, func(c *platform.HTTPClient) error { _, err := c.GetCluster(context.Background()); return err }, platform.IsForbidden,
			`the token is not allowed to do this on cluster "local"`},
		{http.StatusInternalServerError, func(c *platform.HTTPClient) error { _, err := c.GetCluster(context.Background()); return err },
			func(err error) bool { return platform.StatusCode(err) == 500 }, "answered 500 Internal Server Error: no such cluster"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			s, srv := serve(t, fail(tc.status, "no such cluster"))
			err := tc.call(newClient(t, srv.URL, nil))
			if !tc.is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want status %d and %q", err, tc.status, tc.want)
			}
			if n := s.count(); n != 1 {
				t.Errorf("requests = %d, want 1", n)
			}
		})
	}
}

func TestSlowAnswerIsRetriedThenSucceeds(t *testing.T) {
	s, srv := serve(t, stall, answer(http.StatusAccepted, platform.SetBrokerCountResponse{
		Operation: platform.Operation{ID: "op-1", State: platform.OperationPending},
	}))
	c := newClient(t, srv.URL, nil, func(cfg *platform.HTTPConfig) { cfg.Timeout = 100 * time.Millisecond })

	// The PUT is idempotent by contract, so a timed-out one is sent again.
	op, err := c.SetBrokerCount(context.Background(), platform.SetBrokerCountRequest{BrokerCount: 4})
	if err != nil {
		t.Fatalf("SetBrokerCount: %v", err)
	}
	if op.ID != "op-1" || op.State != platform.OperationPending {
		t.Errorf("operation = %+v", op)
	}
	if n := s.count(); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}
	if s.bodies[0] != s.bodies[1] {
		t.Errorf("the retry sent %q after %q", s.bodies[1], s.bodies[0])
	}
}

func TestSlowAnswerBeyondEveryAttemptTimeoutFails(t *testing.T) {
	s, srv := serve(t, stall)
	c := newClient(t, srv.URL, nil, func(cfg *platform.HTTPConfig) {
		cfg.Timeout = 80 * time.Millisecond
		cfg.MaxRetries = 2
	})

	_, err := c.GetCluster(context.Background())
	if n := s.count(); n != 3 {
		t.Errorf("requests = %d, want 3", n)
	}
	var te *platform.TransportError
	if !errors.As(err, &te) || te.Attempts != 3 || te.AttemptTimeout != 80*time.Millisecond {
		t.Fatalf("err = %#v, want a TransportError after 3 timed-out attempts", err)
	}
	if !strings.Contains(err.Error(), "scaling API GET /v1/clusters/local got no answer after 3 attempt(s) (each limited to 80ms)") ||
		!strings.Contains(err.Error(), "check that the platform at "+srv.URL+" is up and reachable") {
		t.Errorf("err = %v", err)
	}
	if !platform.IsTransient(err) {
		t.Error("IsTransient = false for timeouts")
	}
	if errors.Is(err, context.Canceled) {
		t.Error("a per-attempt timeout reads as a cancelled context")
	}
}

func TestCancelStopsAWaitForRetryAfterPromptly(t *testing.T) {
	s, srv := serve(t, fail(http.StatusServiceUnavailable, "later", "Retry-After", "30"))
	c := newClient(t, srv.URL, nil, func(cfg *platform.HTTPConfig) { cfg.RetryWaitMax = time.Minute })

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.GetCluster(ctx)
	elapsed := time.Since(start)

	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if elapsed > 10*time.Second {
		t.Errorf("returned after %s; the 30s Retry-After wait was not cut short", elapsed)
	}
	if n := s.count(); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
	if want := "scaling API GET /v1/clusters/local stopped after 1 attempt(s): context canceled"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if platform.IsTransient(err) {
		t.Error("IsTransient = true for a cancelled call")
	}
}

func TestCancelStopsAnAttemptInFlight(t *testing.T) {
	_, srv := serve(t, stall)
	c := newClient(t, srv.URL, nil, func(cfg *platform.HTTPConfig) { cfg.Timeout = time.Minute })

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.GetCluster(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("returned after %s, want the 100ms deadline", elapsed)
	}
}

func TestConnectionRefusedIsRetriedThenReported(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logs := &logCapture{}
	c := newClient(t, "http://"+addr, logs)

	_, err = c.GetCluster(context.Background())
	var te *platform.TransportError
	if !errors.As(err, &te) || te.Attempts != 4 {
		t.Fatalf("err = %v, want a TransportError after 4 attempts", err)
	}
	if !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "http://"+addr) {
		t.Errorf("err = %v, want the cause and the endpoint", err)
	}
	logs.assertNoToken(t, err)
}

func TestRedirectIsNotFollowed(t *testing.T) {
	other, otherSrv := serve(t, answer(http.StatusOK, cluster))
	_, srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherSrv.URL+r.URL.Path, http.StatusTemporaryRedirect)
	})
	c := newClient(t, srv.URL, nil)

	_, err := c.GetCluster(context.Background())
	if platform.StatusCode(err) != http.StatusTemporaryRedirect || !strings.Contains(err.Error(), "redirects are not followed") {
		t.Errorf("err = %v, want a 307 that names the redirect", err)
	}
	if n := other.count(); n != 0 {
		t.Errorf("the redirect target got %d request(s), and so the token", n)
	}
}

func TestAnswerThatBreaksTheContract(t *testing.T) {
	cases := []struct {
		name string
		step func(http.ResponseWriter, *http.Request)
		want string
	}{
		{"not JSON", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>proxy</html>") }, "its body is not the expected JSON"},
		{"no id", answer(http.StatusAccepted, map[string]any{"operation": map[string]any{"state": "PENDING"}}), "the operation has no id"},
		{"unknown state", answer(http.StatusAccepted, map[string]any{"operation": map[string]any{"id": "op-2", "state": "QUEUED"}}), `operation op-2 has the unknown state "QUEUED"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, srv := serve(t, tc.step)
			_, err := newClient(t, srv.URL, nil).SetBrokerCount(context.Background(), platform.SetBrokerCountRequest{BrokerCount: 3})
			var re *platform.ResponseError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a ResponseError saying %q", err, tc.want)
			}
			if n := s.count(); n != 1 {
				t.Errorf("requests = %d, want 1", n)
			}
		})
	}
}

func TestEndpointPathPrefixAndEscapedIDs(t *testing.T) {
	var paths atomic.Value
	_, srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		paths.Store(r.URL.EscapedPath())
		answer(http.StatusOK, platform.Operation{ID: "a/b", State: platform.OperationRunning})(w, r)
	})
	c := newClient(t, srv.URL+"/platform/", nil)
	if _, err := c.GetOperation(context.Background(), "a/b"); err != nil {
		t.Fatal(err)
	}
	if got := paths.Load(); got != "/platform/v1/operations/a%2Fb" {
		t.Errorf("path = %v", got)
	}
}

func TestSetBrokerCountRefusesBadInputWithoutARequest(t *testing.T) {
	s, srv := serve(t, answer(http.StatusAccepted, platform.SetBrokerCountResponse{}))
	c := newClient(t, srv.URL, nil)
	for _, tc := range []struct {
		req  platform.SetBrokerCountRequest
		want string
	}{
		{platform.SetBrokerCountRequest{BrokerCount: 0}, "broker count 0 is not positive"},
		{platform.SetBrokerCountRequest{BrokerCount: 2, RemoveBrokerIDs: []int32{3, -1}}, "broker id -1 to remove is negative"},
		{platform.SetBrokerCountRequest{BrokerCount: 2, RemoveBrokerIDs: []int32{3, 4, 3}}, "broker 3 is named twice"},
	} {
		_, err := c.SetBrokerCount(context.Background(), tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetBrokerCount(%+v) = %v, want %q", tc.req, err, tc.want)
		}
	}
	if n := s.count(); n != 0 {
		t.Errorf("requests = %d, want 0", n)
	}
}

func TestNoRetriesWhenMaxRetriesIsNegative(t *testing.T) {
	s, srv := serve(t, fail(http.StatusServiceUnavailable, "down"))
	c := newClient(t, srv.URL, nil, func(cfg *platform.HTTPConfig) { cfg.MaxRetries = -1 })
	_, err := c.GetCluster(context.Background())
	if n := s.count(); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
	if want := "scaling API GET /v1/clusters/local answered 503 Service Unavailable: down; the platform is busy or unavailable; try again later"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func TestAnswerCutShortIsRetried(t *testing.T) {
	s, srv := serve(t,
		func(w http.ResponseWriter, _ *http.Request) {
			// Promise 500 bytes, send 20, and drop the connection.
			hj, ok := w.(http.Hijacker)
			if !ok {
				t.Error("the test server's writer cannot be hijacked")
				return
			}
			conn, buf, err := hj.Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			defer conn.Close()
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"id\":\"local\",\"brok")
			_ = buf.Flush()
		},
		answer(http.StatusOK, cluster),
	)
	got, err := newClient(t, srv.URL, nil).GetCluster(context.Background())
	if err != nil {
		t.Fatalf("GetCluster: %v", err)
	}
	if got.BrokerCount != 3 {
		t.Errorf("cluster = %+v", got)
	}
	if n := s.count(); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}
}
