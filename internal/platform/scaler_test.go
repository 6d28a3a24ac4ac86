package platform_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

// fakePlatform serves the contract with a tiny state machine: a PUT starts
// op-1, which reports RUNNING for a few polls and then its final state.
type fakePlatform struct {
	mu      sync.Mutex
	puts    []platform.SetBrokerCountRequest
	polls   int
	running int
	final   platform.Operation
	putAs   platform.OperationState
}

func (f *fakePlatform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodPut && r.URL.Path == "/v1/clusters/local/broker-count":
		var req platform.SetBrokerCountRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fail(http.StatusBadRequest, err.Error())(w, r)
			return
		}
		f.puts = append(f.puts, req)
		state := f.putAs
		if state == "" {
			state = platform.OperationPending
		}
		answer(http.StatusAccepted, platform.SetBrokerCountResponse{Operation: platform.Operation{ID: "op-1", State: state, Message: f.final.Message}})(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/operations/op-1":
		f.polls++
		if f.polls <= f.running {
			answer(http.StatusOK, platform.Operation{ID: "op-1", State: platform.OperationRunning})(w, r)
			return
		}
		answer(http.StatusOK, f.final)(w, r)
	default:
		fail(http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)(w, r)
	}
}

func newFake(t *testing.T, f *fakePlatform) *platform.HTTPScaler {
	t.Helper()
	srv := newServer(t, f)
	return &platform.HTTPScaler{Client: newClient(t, srv, nil), PollInterval: time.Millisecond}
}

func newServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestHTTPScalerPutsThenWaitsForSuccess(t *testing.T) {
	f := &fakePlatform{running: 3, final: platform.Operation{ID: "op-1", State: platform.OperationSucceeded}}
	s := newFake(t, f)

	if err := s.ScaleTo(context.Background(), 3, []int32{4, 5}); err != nil {
		t.Fatalf("ScaleTo: %v", err)
	}
	if len(f.puts) != 1 || f.puts[0].BrokerCount != 3 || len(f.puts[0].RemoveBrokerIDs) != 2 || f.puts[0].RemoveBrokerIDs[1] != 5 {
		t.Errorf("PUTs = %+v", f.puts)
	}
	if f.polls != 4 {
		t.Errorf("polls = %d, want 4 (3 RUNNING, then SUCCEEDED)", f.polls)
	}
}

func TestHTTPScalerReportsAFailedOperation(t *testing.T) {
	f := &fakePlatform{running: 1, final: platform.Operation{ID: "op-1", State: platform.OperationFailed, Message: "quota of 5 brokers reached"}}
	err := newFake(t, f).ScaleTo(context.Background(), 6, nil)

	var failed *platform.OperationFailedError
	if !errors.As(err, &failed) || failed.OperationID != "op-1" {
		t.Fatalf("err = %v, want an OperationFailedError", err)
	}
	if want := "scaling to 6 brokers: scaling operation op-1 FAILED: quota of 5 brokers reached"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestHTTPScalerTakesAnAnswerThatIsAlreadyFinal(t *testing.T) {
	done := &fakePlatform{putAs: platform.OperationSucceeded}
	if err := newFake(t, done).ScaleTo(context.Background(), 3, nil); err != nil {
		t.Fatalf("ScaleTo: %v", err)
	}
	if done.polls != 0 {
		t.Errorf("polls = %d after a SUCCEEDED answer, want 0", done.polls)
	}

	failed := &fakePlatform{putAs: platform.OperationFailed, final: platform.Operation{Message: "no capacity"}}
	err := newFake(t, failed).ScaleTo(context.Background(), 4, []int32{2})
	if want := "scaling to 4 brokers, removing broker(s) 2: scaling operation op-1 FAILED: no capacity"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if failed.polls != 0 {
		t.Errorf("polls = %d after a FAILED answer, want 0", failed.polls)
	}
}

func TestHTTPScalerKeepsTheAPIErrorVisible(t *testing.T) {
	_, srv := serve(t, fail(http.StatusUnauthorized, "no token"))
	s := &platform.HTTPScaler{Client: newClient(t, srv.URL, nil)}
	err := s.ScaleTo(context.Background(), 4, nil)
	if !platform.IsUnauthorized(err) || !strings.HasPrefix(err.Error(), "scaling to 4 brokers: scaling API PUT") {
		t.Errorf("err = %v, want the 401 behind the scaling context", err)
	}
}

func TestHTTPScalerDescribeHidesSecrets(t *testing.T) {
	c, err := platform.NewHTTPClient(platform.HTTPConfig{Endpoint: "https://ops:hunter2@platform.example:8443/api", ClusterID: "prod-eu", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	got := (&platform.HTTPScaler{Client: c}).Describe()
	if want := `HTTP scaling API at https://ops:xxxxx@platform.example:8443/api, cluster "prod-eu"`; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

func TestExternalScalerDoesNothingButHonoursTheContext(t *testing.T) {
	var s platform.Scaler = platform.ExternalScaler{}
	if err := s.ScaleTo(context.Background(), 5, nil); err != nil {
		t.Errorf("ScaleTo = %v", err)
	}
	if err := s.ScaleTo(context.Background(), 0, nil); err == nil {
		t.Error("ScaleTo(0) = nil, want an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.ScaleTo(ctx, 5, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("ScaleTo after cancel = %v", err)
	}
	if !strings.HasPrefix(s.Describe(), "external:") {
		t.Errorf("Describe = %q", s.Describe())
	}
}
