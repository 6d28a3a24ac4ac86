package platform

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
)

// Defaults of HTTPConfig, used where a field is zero.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRetries   = 4
	DefaultRetryWaitMin = 1 * time.Second
	DefaultRetryWaitMax = 30 * time.Second
	DefaultUserAgent    = "terraform-provider-kafkascale"
)

// maxBodyBytes bounds what is read of any answer. The contract's bodies are a
// few hundred bytes; a larger one is a misconfigured endpoint, not data.
const maxBodyBytes = 1 << 20

// HTTPConfig configures a client of the HTTP scaling API.
type HTTPConfig struct {
	// Endpoint is the base URL, such as http://127.0.0.1:7070. It may carry a
	// path prefix; it may not carry a query, so that nothing secret is ever
	// part of a URL, which is what gets logged.
	Endpoint string
	// ClusterID names the cluster in /v1/clusters/{id}.
	ClusterID string
	// Token is sent as "Authorization: Bearer <token>". Empty sends no
	// Authorization header. Surrounding white space is dropped, since tokens
	// read from files often end in a newline. See ResolveToken.
	Token string
	// Timeout bounds one attempt, from sending to the end of the answer's
	// headers. The context passed to each method bounds the whole call,
	// retries and waits included. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt may be repeated. Zero
	// means DefaultMaxRetries; a negative value means no retry at all.
	MaxRetries int
	// RetryWaitMin and RetryWaitMax bound the wait before a retry: it starts
	// at RetryWaitMin and doubles per attempt up to RetryWaitMax. A
	// Retry-After header replaces that wait, but is also capped at
	// RetryWaitMax. Zero means the defaults.
	RetryWaitMin time.Duration
	RetryWaitMax time.Duration
	// UserAgent is sent on every request. Empty means DefaultUserAgent.
	UserAgent string
	// Logger receives debug lines for each attempt and retry. Nil discards.
	Logger LogFunc
}

// HTTPClient calls the HTTP scaling API of one cluster (docs/scaling-api.openapi.yaml).
// It is safe for concurrent use.
//
// Retries: every method retries, with backoff, the answers 408, 429, 502, 503
// and 504, connection failures and attempts that exceed Timeout, up to
// MaxRetries times. It honours Retry-After (seconds or an HTTP date), capped at
// RetryWaitMax. It never retries any other status, a TLS certificate failure,
// or a context that ended. A method's error is an *APIError, a
// *TransportError or a *ResponseError.
type HTTPClient struct {
	base      *url.URL
	clusterID string
	token     string
	userAgent string

	timeout      time.Duration
	maxRetries   int
	retryWaitMin time.Duration
	retryWaitMax time.Duration

	http  *http.Client
	log   LogFunc
	scrub scrubber
	now   func() time.Time
}

// ResolveToken returns the `token` attribute when it is set, and otherwise
// the value of the KAFKASCALE_SCALING_TOKEN environment variable.
func ResolveToken(attribute string) string {
	if strings.TrimSpace(attribute) != "" {
		return attribute
	}
	return os.Getenv(TokenEnvVar)
}

// NewHTTPClient checks cfg and returns a client. It makes no request.
func NewHTTPClient(cfg HTTPConfig) (*HTTPClient, error) {
	base, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.ClusterID) == "" {
		return nil, errors.New("scaling API: cluster_id is empty; set it to the id the platform knows the cluster by")
	}
	token := strings.TrimSpace(cfg.Token)
	for _, r := range token {
		// The token itself is never quoted back, not even in this error.
		if r < 0x20 || r == 0x7f {
			return nil, errors.New("scaling API: the token contains a control character, which an HTTP header cannot carry; check the `token` attribute or " + TokenEnvVar)
		}
	}
	if strings.Contains(base.String(), token) && token != "" {
		return nil, errors.New("scaling API: the endpoint contains the token; pass the token with the `token` attribute or " + TokenEnvVar + " only, since URLs are logged")
	}

	c := &HTTPClient{
		base:         base,
		clusterID:    cfg.ClusterID,
		token:        token,
		userAgent:    cfg.UserAgent,
		timeout:      cfg.Timeout,
		maxRetries:   cfg.MaxRetries,
		retryWaitMin: cfg.RetryWaitMin,
		retryWaitMax: cfg.RetryWaitMax,
		log:          cfg.Logger,
		scrub:        scrubber{secret: token},
		now:          time.Now,
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.retryWaitMin == 0 {
		c.retryWaitMin = DefaultRetryWaitMin
	}
	if c.retryWaitMax == 0 {
		c.retryWaitMax = DefaultRetryWaitMax
	}
	if c.timeout < 0 || c.retryWaitMin < 0 || c.retryWaitMax < 0 {
		return nil, errors.New("scaling API: timeout and retry waits must not be negative")
	}
	if c.retryWaitMin > c.retryWaitMax {
		return nil, fmt.Errorf("scaling API: the shortest retry wait (%s) is longer than the longest (%s)", c.retryWaitMin, c.retryWaitMax)
	}

	c.http = &http.Client{
		Transport: cleanhttp.DefaultPooledTransport(),
		Timeout:   c.timeout,
		// A redirect could carry the Authorization header to an address the
		// user never configured, and would replay a PUT somewhere else. The
		// 3xx becomes an APIError that names the problem instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

func parseEndpoint(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("scaling API: endpoint is empty; set it to the platform's base URL, such as http://127.0.0.1:7070")
	}
	if !strings.Contains(raw, "://") {
		return nil, errors.New("scaling API: endpoint must start with http:// or https://, as in http://127.0.0.1:7070")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, password included; keep only why.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("scaling API: endpoint is not a valid URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scaling API: endpoint %s must start with http:// or https://", u.Redacted())
	}
	if u.Host == "" {
		return nil, fmt.Errorf("scaling API: endpoint %s has no host", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("scaling API: endpoint %s must not have a query or fragment; credentials go in the `token` attribute", u.Redacted())
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}

// Endpoint returns the base URL with any password redacted, for messages.
func (c *HTTPClient) Endpoint() string { return c.base.Redacted() }

// ClusterID returns the cluster this client addresses.
func (c *HTTPClient) ClusterID() string { return c.clusterID }

// call kinds, used to word hints.
const (
	kindCluster   = "cluster"
	kindOperation = "operation"
)

type call struct {
	method string
	path   string // API path, escaped, without the endpoint's prefix
	kind   string
	body   any // sent as JSON when not nil
	// idempotent calls may be sent again after any retryable failure. Others
	// are sent again only when the server surely did not act on them.
	idempotent bool
}

// do sends one call with retries and decodes a 2xx answer into out.
func (c *HTTPClient) do(ctx context.Context, cl call, out any) error {
	lg := c.logger(ctx)
	req, err := c.newRequest(ctx, cl)
	if err != nil {
		return err
	}

	attempts := 0
	var body []byte
	var bodyRead bool
	// The body is read inside the retry loop, so that an answer cut short
	// is retried like any other transport failure (for idempotent calls).
	req.SetResponseHandler(func(resp *http.Response) error {
		defer resp.Body.Close()
		b, err := readBody(resp.Body)
		if err != nil {
			return fmt.Errorf("reading the %d answer: %w", resp.StatusCode, err)
		}
		body, bodyRead = b, true
		return nil
	})

	start := c.now()
	rc := &retryablehttp.Client{
		HTTPClient:   c.http,
		Logger:       leveled{lg},
		RetryWaitMin: c.retryWaitMin,
		RetryWaitMax: c.retryWaitMax,
		RetryMax:     c.maxRetries,
		CheckRetry:   checkRetry(cl.idempotent),
		Backoff:      backoff(c.now),
		// Hand back the last answer as it is: the caller turns it into an
		// APIError with the server's message and the attempt count.
		ErrorHandler: func(resp *http.Response, err error, _ int) (*http.Response, error) { return resp, err },
		RequestLogHook: func(_ retryablehttp.Logger, r *http.Request, i int) {
			attempts = i + 1
			lg.log(LogDebug, "scaling API request", map[string]any{
				"method": r.Method, "path": cl.path, "attempt": attempts, "max_attempts": c.maxRetries + 1,
			})
		},
		ResponseLogHook: func(_ retryablehttp.Logger, resp *http.Response) {
			lg.log(LogDebug, "scaling API answer", map[string]any{
				"method": cl.method, "path": cl.path, "attempt": attempts, "status": resp.StatusCode,
				"retry_after": resp.Header.Get("Retry-After"),
			})
		},
	}

	resp, err := rc.Do(req)
	if attempts == 0 {
		attempts = 1
	}
	if err != nil {
		if resp != nil && !bodyRead {
			resp.Body.Close()
		}
		return c.transportError(ctx, cl, attempts, err)
	}
	if !bodyRead {
		// Retries ran out on a retryable status: the handler never ran.
		body, _ = readBody(resp.Body)
		resp.Body.Close()
	}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &APIError{
			Method:     cl.method,
			Path:       cl.path,
			StatusCode: resp.StatusCode,
			Message:    c.scrub.string(errorMessage(body)),
			Attempts:   attempts,
		}
		e.hint = hintFor(cl.method, cl.kind, c.clusterID, resp.StatusCode, attempts)
		lg.log(LogDebug, "scaling API error", map[string]any{
			"method": cl.method, "path": cl.path, "status": resp.StatusCode, "attempts": attempts,
			"elapsed": c.now().Sub(start).String(),
		})
		return e
	}
	lg.log(LogDebug, "scaling API done", map[string]any{
		"method": cl.method, "path": cl.path, "status": resp.StatusCode, "attempts": attempts,
		"elapsed": c.now().Sub(start).String(),
	})
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &ResponseError{Method: cl.method, Path: cl.path, StatusCode: resp.StatusCode, Problem: "its body is not the expected JSON", Err: err}
	}
	return nil
}

// newRequest builds cl's request, with its JSON body and headers.
func (c *HTTPClient) newRequest(ctx context.Context, cl call) (*retryablehttp.Request, error) {
	var raw any // nil, or the bytes retryablehttp rewinds for every attempt
	if cl.body != nil {
		b, err := json.Marshal(cl.body)
		if err != nil {
			return nil, fmt.Errorf("scaling API %s %s: encoding the request: %w", cl.method, cl.path, err)
		}
		raw = b
	}
	// The endpoint has no query (NewHTTPClient checks), so the API path
	// appends to it as it is, already escaped.
	req, err := retryablehttp.NewRequestWithContext(ctx, cl.method, c.base.String()+cl.path, raw)
	if err != nil {
		return nil, fmt.Errorf("scaling API %s %s: building the request: %w", cl.method, cl.path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// transportError is the error of a call that got no answer after
// attempts: why it stopped when ctx ended, and the attempt timeout when
// the last attempt timed out.
func (c *HTTPClient) transportError(ctx context.Context, cl call, attempts int, err error) *TransportError {
	te := &TransportError{Method: cl.method, Path: cl.path, Endpoint: c.Endpoint(), Attempts: attempts, Err: err, scrub: c.scrub}
	if ctxErr := ctx.Err(); ctxErr != nil {
		te.stopped = ctxErr
		if !errors.Is(err, ctxErr) {
			// retryablehttp may report the last attempt's failure
			// rather than why it stopped.
			te.Err = fmt.Errorf("%w (last failure: %w)", ctxErr, err)
		}
	} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		te.AttemptTimeout = c.timeout
	}
	return te
}

func (c *HTTPClient) logger(ctx context.Context) logger {
	return logger{ctx: ctx, fn: c.log, scrub: c.scrub}
}

func readBody(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxBodyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBodyBytes {
		return nil, fmt.Errorf("the answer is larger than %d bytes", maxBodyBytes)
	}
	return b, nil
}

// errorMessage takes the error field of an ErrorBody, or, from a server
// that does not follow the contract (a proxy's HTML page), the start of
// the text.
func errorMessage(body []byte) string {
	var eb ErrorBody
	if err := json.Unmarshal(body, &eb); err == nil && eb.Error != "" {
		return eb.Error
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// retryableStatus lists the answers that say "not now" rather than "no":
// the server, or a proxy in front of it, did not act on the request.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// checkRetry decides whether an attempt is repeated.
//
// Idempotent calls (every GET, and the PUT of the broker count, which the
// contract makes idempotent: the same body returns the operation already
// under way) are repeated after any retryable status or transport failure.
//
// A call that is not idempotent must not be repeated blindly: a timeout or a
// broken connection may come after the server acted on it, and a repeat
// would act twice. It is repeated only when the server surely did not act:
// the connection was never made, or the answer was 429 or 503, which a server
// sends instead of acting. The on_expansion_url POST (Webhook) is such a
// call.
func checkRetry(idempotent bool) retryablehttp.CheckRetry {
	return func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err != nil {
			if permanentTransportError(err) {
				return false, err
			}
			if !idempotent && !notSent(err) {
				return false, err
			}
			return true, nil
		}
		if !retryableStatus(resp.StatusCode) {
			return false, nil
		}
		if !idempotent && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
			return false, nil
		}
		return true, nil
	}
}

// permanentTransportError lists failures that a repeat cannot fix.
func permanentTransportError(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknownCA) || errors.As(err, &invalid) || errors.As(err, &hostname) || errors.As(err, &verify)
}

// notSent reports a failure before any byte of the request left: the
// connection could not be made.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// backoff waits RetryWaitMin·2^attempt, capped at RetryWaitMax, unless the
// answer carries Retry-After: then it waits what the server asked, still
// capped at RetryWaitMax so that one header cannot stall an apply for hours.
// now reads the clock for an HTTP-date Retry-After.
func backoff(now func() time.Time) retryablehttp.Backoff {
	return func(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
		if resp != nil {
			if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now()); ok {
				return min(d, maxWait)
			}
		}
		d := minWait
		for i := 0; i < attempt && d < maxWait; i++ {
			d *= 2
		}
		return min(d, maxWait)
	}
}

// parseRetryAfter reads both forms of Retry-After (RFC 9110 §10.2.3):
// delay-seconds, or an HTTP date, of which http.ParseTime accepts all three
// historic formats. A date in the past means no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		// Beyond this the product overflows; the cap applies anyway.
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
