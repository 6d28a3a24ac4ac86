package platform_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

func op(state platform.OperationState, msg string) func(http.ResponseWriter, *http.Request) {
	return answer(http.StatusOK, platform.Operation{ID: "op-9", State: state, Message: msg})
}

func TestWaitOperationPollsUntilSucceeded(t *testing.T) {
	s, srv := serve(t,
		op(platform.OperationPending, ""),
		op(platform.OperationRunning, "starting broker 4"),
		op(platform.OperationRunning, "starting broker 5"),
		op(platform.OperationSucceeded, "2 brokers started"),
	)
	logs := &logCapture{}
	c := newClient(t, srv.URL, logs)

	got, err := c.WaitOperation(context.Background(), "op-9", 10*time.Millisecond)
	if err != nil {
		t.Fatalf("WaitOperation: %v", err)
	}
	if got.State != platform.OperationSucceeded || got.Message != "2 brokers started" {
		t.Errorf("operation = %+v", got)
	}
	if n := s.count(); n != 4 {
		t.Errorf("polls = %d, want 4", n)
	}
	for i, r := range s.seen {
		if r.URL.Path != "/v1/operations/op-9" {
			t.Errorf("poll %d: path %s", i, r.URL.Path)
		}
		if i > 0 {
			if gap := s.times[i].Sub(s.times[i-1]); gap < 9*time.Millisecond {
				t.Errorf("poll %d came %s after the previous one, want the 10ms interval", i, gap)
			}
		}
	}
	// A line per change of state, not per poll.
	if n := strings.Count(logs.text(), "scaling operation state"); n != 3 {
		t.Errorf("state lines = %d, want 3 (PENDING, RUNNING, SUCCEEDED):\n%s", n, logs.text())
	}
	logs.assertNoToken(t, nil)
}

func TestWaitOperationFailedNamesTheOperationAndReason(t *testing.T) {
	_, srv := serve(t,
		op(platform.OperationRunning, ""),
		op(platform.OperationFailed, "broker 5 did not start: port 9096 in use"),
	)
	got, err := newClient(t, srv.URL, nil).WaitOperation(context.Background(), "op-9", time.Millisecond)

	var failed *platform.OperationFailedError
	if !errors.As(err, &failed) || failed.OperationID != "op-9" {
		t.Fatalf("err = %v, want an OperationFailedError for op-9", err)
	}
	if want := "scaling operation op-9 FAILED: broker 5 did not start: port 9096 in use"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if got.State != platform.OperationFailed {
		t.Errorf("operation = %+v, want the FAILED one", got)
	}
}

func TestWaitOperationStopsWhenTheContextEnds(t *testing.T) {
	s, srv := serve(t, op(platform.OperationRunning, "still going"))
	c := newClient(t, srv.URL, nil)

	// The context ends once the API has answered three polls, however
	// slow a busy machine makes them.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for s.count() < 3 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	got, err := c.WaitOperation(ctx, "op-9", 20*time.Millisecond)

	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), "stopped waiting for scaling operation op-9 (last state: RUNNING)") {
		t.Errorf("err = %v", err)
	}
	if got.State != platform.OperationRunning {
		t.Errorf("operation = %+v, want the last one seen", got)
	}
	if n := s.count(); n < 3 {
		t.Errorf("polls = %d, want 3 before the context ended", n)
	}
}

func TestWaitOperationEndsOnAPollError(t *testing.T) {
	s, srv := serve(t,
		op(platform.OperationRunning, ""),
		fail(http.StatusNotFound, "unknown operation op-9"),
	)
	_, err := newClient(t, srv.URL, nil).WaitOperation(context.Background(), "op-9", time.Millisecond)
	if !platform.IsNotFound(err) || !strings.HasPrefix(err.Error(), "waiting for scaling operation op-9: scaling API GET /v1/operations/op-9 answered 404") {
		t.Errorf("err = %v", err)
	}
	if n := s.count(); n != 2 {
		t.Errorf("polls = %d, want 2", n)
	}
}

func TestGetOperationRejectsAnEmptyIDAndAnUnknownState(t *testing.T) {
	s, srv := serve(t, op("PAUSED", ""))
	c := newClient(t, srv.URL, nil)
	if _, err := c.GetOperation(context.Background(), ""); err == nil || s.count() != 0 {
		t.Errorf("empty id: err = %v after %d requests, want an error and none", err, s.count())
	}
	_, err := c.WaitOperation(context.Background(), "op-9", time.Millisecond)
	var re *platform.ResponseError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), `unknown state "PAUSED"`) {
		t.Errorf("err = %v, want a ResponseError about the state", err)
	}
	if n := s.count(); n != 1 {
		t.Errorf("polls = %d, want 1: an unknown state must not be polled forever", n)
	}
}
