package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// White-box tests of the retry policy for what no public method can show
// yet: no call is non-idempotent today, and the date forms of Retry-After
// need a fixed clock.

func TestCheckRetryNeverRepeatsANonIdempotentCallBlindly(t *testing.T) {
	timeout := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}}
	reset := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
	refused := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	status := func(code int) *http.Response { return &http.Response{StatusCode: code} }

	cases := []struct {
		name       string
		resp       *http.Response
		err        error
		idempotent bool
		want       bool
	}{
		{"idempotent timeout", nil, timeout, true, true},
		{"idempotent reset", nil, reset, true, true},
		{"idempotent 502", status(502), nil, true, true},
		{"idempotent 408", status(408), nil, true, true},
		{"idempotent 400", status(400), nil, true, false},
		{"idempotent 401", status(401), nil, true, false},
		{"idempotent 409", status(409), nil, true, false},
		{"idempotent 500", status(500), nil, true, false},
		{"idempotent 200", status(200), nil, true, false},
		// The server may have acted before these failures: no repeat.
		{"non-idempotent timeout", nil, timeout, false, false},
		{"non-idempotent reset", nil, reset, false, false},
		{"non-idempotent 502", status(502), nil, false, false},
		{"non-idempotent 504", status(504), nil, false, false},
		// The server surely did not act: repeat.
		{"non-idempotent refused", nil, refused, false, true},
		{"non-idempotent 429", status(429), nil, false, true},
		{"non-idempotent 503", status(503), nil, false, true},
	}
	for _, tc := range cases {
		got, _ := checkRetry(tc.idempotent)(context.Background(), tc.resp, tc.err)
		if got != tc.want {
			t.Errorf("%s: retry = %v, want %v", tc.name, got, tc.want)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := checkRetry(true)(ctx, status(503), nil); got || !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: retry = %v, err = %v; want no retry and the context's error", got, err)
	}
}

func TestParseRetryAfterForms(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7", 7 * time.Second, true},
		{" 0 ", 0, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true}, // IMF-fixdate
		{"Sunday, 01-Mar-26 12:01:00 GMT", time.Minute, true},     // RFC 850
		{"Sun Mar  1 12:00:05 2026", 5 * time.Second, true},       // asctime
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true},                // past: go now
		{"99999999999999", 24 * time.Hour, true},                  // no overflow
		{"-3", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tc := range cases {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBackoffDoublesToTheCapAndCapsRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := &HTTPClient{now: func() time.Time { return now }}
	minW, maxW := 10*time.Millisecond, 80*time.Millisecond
	var got []time.Duration
	for i := range 6 {
		got = append(got, backoff(c.now)(minW, maxW, i, &http.Response{StatusCode: 503, Header: http.Header{}}))
	}
	if want := "[10ms 20ms 40ms 80ms 80ms 80ms]"; fmt.Sprint(got) != want {
		t.Errorf("waits = %v, want %s", got, want)
	}
	ra := func(v string) *http.Response {
		return &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {v}}}
	}
	if d := backoff(c.now)(minW, time.Minute, 0, ra("2")); d != 2*time.Second {
		t.Errorf("Retry-After 2 → %s, want 2s", d)
	}
	if d := backoff(c.now)(minW, time.Second, 0, ra("120")); d != time.Second {
		t.Errorf("Retry-After 120 with a 1s cap → %s, want 1s", d)
	}
	if d := backoff(c.now)(minW, time.Minute, 3, ra(now.Add(20*time.Second).Format(http.TimeFormat))); d != 20*time.Second {
		t.Errorf("Retry-After date → %s, want 20s", d)
	}
}

func TestLoggerScrubsTheTokenFromMessagesAndFields(t *testing.T) {
	const secret = "s3cr3t-v4lue"
	var got []string
	lg := logger{
		ctx:   context.Background(),
		scrub: scrubber{secret: secret},
		fn: func(_ context.Context, level LogLevel, msg string, fields map[string]any) {
			got = append(got, fmt.Sprintf("%s|%s|%v", level, msg, fields))
		},
	}
	leveled{lg}.Error("failed with "+secret, "error", errors.New("bad "+secret), "Authorization", "Bearer x", "count", 3, "dangling")
	lg.log(LogInfo, "ok", map[string]any{"token": "anything", "url": "http://h/?" + secret, "d": time.Second})

	all := strings.Join(got, "\n")
	if strings.Contains(all, secret) || strings.Contains(all, "Bearer x") || strings.Contains(all, "anything") {
		t.Errorf("secret leaked:\n%s", all)
	}
	for _, want := range []string{"error|failed with [REDACTED]", "error:bad [REDACTED]", "count:3", "dangling:<nil>", "token:[REDACTED]", "d:1s"} {
		if !strings.Contains(all, want) {
			t.Errorf("logs lack %q:\n%s", want, all)
		}
	}
	logger{}.log(LogInfo, "no sink", nil) // a nil LogFunc discards
}
