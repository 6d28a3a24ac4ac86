package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// EnvApplicationID names the app to the quiesce commands.
const EnvApplicationID = "KAFKASCALE_APPLICATION_ID"

// QuiesceCommands stop and start a Kafka Streams application around an
// expansion, for apps on the classic rebalance protocol: with no member
// left, no group leader can compare stale source counts with grown internal
// topics. Each is an argv run without a shell, with KAFKASCALE_APPLICATION_ID
// in its environment. Stop must return once the app is stopping (kafkascale
// then waits for the group to empty); Start may return as soon as the app is
// starting (kafkascale then waits for the group to be stable).
type QuiesceCommands struct {
	ApplicationID string
	Stop, Start   []string
	Logger        LogFunc
}

// StopApp runs the stop command.
func (q *QuiesceCommands) StopApp(ctx context.Context) error {
	return q.run(ctx, "quiesce.stop", q.Stop)
}

// StartApp runs the start command.
func (q *QuiesceCommands) StartApp(ctx context.Context) error {
	return q.run(ctx, "quiesce.start", q.Start)
}

func (q *QuiesceCommands) run(ctx context.Context, which string, argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("%s is not set, so kafkascale cannot run it", which)
	}
	return runCommand(ctx, logger{ctx: ctx, fn: q.Logger}, which, argv,
		[]string{EnvApplicationID + "=" + q.ApplicationID},
		map[string]any{"application_id": q.ApplicationID})
}

// ExpansionEvent is the JSON body posted to on_expansion_url once a Streams
// app is stable on its new partition count: the onPartitionExpansion(old,
// new) idea of KIP-878.
type ExpansionEvent struct {
	ApplicationID string   `json:"application_id"`
	OldPartitions int32    `json:"old_partitions"`
	NewPartitions int32    `json:"new_partitions"`
	Topics        []string `json:"topics"`
}

// Webhook posts ExpansionEvents. The POST is not idempotent, so an attempt
// is repeated only when the receiver surely did not act on it: the
// connection was refused, or it answered 429 or 503. Each event carries an
// Idempotency-Key header so that a receiver can drop a repeat it did see.
type Webhook struct {
	URL string
	// Timeout bounds one attempt (default DefaultTimeout); MaxRetries and
	// RetryWaitMin/Max as in HTTPConfig.
	Timeout                    time.Duration
	MaxRetries                 int
	RetryWaitMin, RetryWaitMax time.Duration
	Logger                     LogFunc
}

// WebhookError is an answer outside 2xx, or a failure to deliver.
type WebhookError struct {
	URL      string // without user info or query, which may hold secrets
	Status   int    // 0 when no answer came
	Attempts int
	Err      error
}

func (e *WebhookError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("on_expansion_url %s answered HTTP %d after %d attempt(s); the receiver refused the event", e.URL, e.Status, e.Attempts)
	}
	return fmt.Sprintf("on_expansion_url %s could not be reached after %d attempt(s): %v", e.URL, e.Attempts, e.Err)
}

func (e *WebhookError) Unwrap() error { return e.Err }

// Notify posts ev and returns nil on any 2xx answer.
func (w *Webhook) Notify(ctx context.Context, ev ExpansionEvent) error {
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("on_expansion_url must be an http or https URL")
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("on_expansion_url %s: %w", shown, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", DefaultUserAgent)
	req.Header.Set("Idempotency-Key", ev.ApplicationID+"/"+strconv.Itoa(int(ev.OldPartitions))+"-"+strconv.Itoa(int(ev.NewPartitions)))

	lg := logger{ctx: ctx, fn: w.Logger}
	timeout := w.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	retries := w.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	attempts := 0
	rc := &retryablehttp.Client{
		HTTPClient:   &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		Logger:       leveled{lg},
		RetryWaitMin: orDefault(w.RetryWaitMin, DefaultRetryWaitMin),
		RetryWaitMax: orDefault(w.RetryWaitMax, DefaultRetryWaitMax),
		RetryMax:     retries,
		CheckRetry:   checkRetry(false),
		Backoff:      backoff(time.Now),
		ErrorHandler: func(resp *http.Response, err error, _ int) (*http.Response, error) { return resp, err },
		RequestLogHook: func(_ retryablehttp.Logger, _ *http.Request, i int) {
			attempts = i + 1
			lg.log(LogInfo, "calling on_expansion_url", map[string]any{"url": shown, "attempt": attempts, "application_id": ev.ApplicationID})
		},
	}
	resp, err := rc.Do(req)
	if attempts == 0 {
		attempts = 1
	}
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, query included
		}
		return &WebhookError{URL: shown, Attempts: attempts, Err: err}
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &WebhookError{URL: shown, Status: resp.StatusCode, Attempts: attempts}
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
