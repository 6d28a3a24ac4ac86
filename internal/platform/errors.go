package platform

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// TokenEnvVar is read for the bearer token when the `token` attribute is not
// set. See ResolveToken.
const TokenEnvVar = "KAFKASCALE_SCALING_TOKEN" //nolint:gosec // a variable's name, not a credential

// APIError is an answer of the scaling API with a status other than 2xx.
//
// Which answers were retried before it was returned: 408, 429, 502, 503 and
// 504, with backoff and Retry-After honoured, until MaxRetries ran out; then
// Attempts is more than one and StatusCode is the last answer's. Every other
// status is returned at once with Attempts 1 (unless an earlier attempt had
// failed in a retryable way).
type APIError struct {
	Method     string // HTTP method of the request
	Path       string // API path, such as /v1/clusters/local/broker-count
	StatusCode int    // status of the last answer
	Message    string // the error field of the ErrorBody, or the start of a non-JSON body; token scrubbed
	Attempts   int    // requests sent, the first one included

	hint string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scaling API %s %s answered %d %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " on the last of %d attempts", e.Attempts)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.hint != "" {
		fmt.Fprintf(&b, "; %s", e.hint)
	}
	return b.String()
}

// TransportError is a request that got no usable answer: the connection
// failed, an attempt timed out, the body could not be read, or the caller's
// context ended. Err is the last cause; errors.Is(err, context.Canceled)
// and errors.Is(err, context.DeadlineExceeded) see through it.
//
// Connection failures and per-attempt timeouts were retried with backoff
// before it was returned (Attempts counts every request sent). A context
// that ended is never retried.
type TransportError struct {
	Method   string
	Path     string
	Endpoint string // base URL, with any password redacted
	Attempts int
	// AttemptTimeout is set when the last attempt ran out of its own time
	// (HTTPConfig.Timeout), as opposed to the caller's context.
	AttemptTimeout time.Duration
	Err            error

	stopped error // the caller's context error, when that is why it ended
	scrub   scrubber
}

func (e *TransportError) Error() string {
	if e.stopped != nil {
		return fmt.Sprintf("scaling API %s %s stopped after %d attempt(s): %v", e.Method, e.Path, e.Attempts, e.stopped)
	}
	limit := ""
	if e.AttemptTimeout > 0 {
		limit = fmt.Sprintf(" (each limited to %s)", e.AttemptTimeout)
	}
	return fmt.Sprintf("scaling API %s %s got no answer after %d attempt(s)%s: %s; check that the platform at %s is up and reachable",
		e.Method, e.Path, e.Attempts, limit, e.scrub.string(e.Err.Error()), e.Endpoint)
}

func (e *TransportError) Unwrap() error { return e.Err }

// ResponseError is a 2xx answer whose body is not what the contract says:
// not JSON, or missing a field the contract requires. It is never retried,
// because the platform did answer and a repeat would get the same.
type ResponseError struct {
	Method     string
	Path       string
	StatusCode int
	Problem    string
	Err        error
}

func (e *ResponseError) Error() string {
	s := fmt.Sprintf("scaling API %s %s answered %d but %s", e.Method, e.Path, e.StatusCode, e.Problem)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s + "; the platform does not follow the contract in docs/scaling-api.openapi.yaml"
}

func (e *ResponseError) Unwrap() error { return e.Err }

// OperationFailedError is a scaling operation that the platform reports as
// FAILED. It is final: waiting longer or polling again does not change it.
type OperationFailedError struct {
	OperationID string
	Message     string
}

func (e *OperationFailedError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "the platform gave no reason"
	}
	return fmt.Sprintf("scaling operation %s FAILED: %s", e.OperationID, msg)
}

// StatusCode returns the HTTP status of the APIError in err's chain, or 0.
func StatusCode(err error) int {
	var e *APIError
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// IsBadRequest reports a 400: the platform refused the request's content.
func IsBadRequest(err error) bool { return StatusCode(err) == http.StatusBadRequest }

// IsUnauthorized reports a 401: the token is missing, wrong or expired.
func IsUnauthorized(err error) bool { return StatusCode(err) == http.StatusUnauthorized }

// IsForbidden reports a 403: the token is valid but may not do this.
func IsForbidden(err error) bool { return StatusCode(err) == http.StatusForbidden }

// IsNotFound reports a 404: no such cluster or operation.
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// IsConflict reports a 409: another operation with a different target is
// under way.
func IsConflict(err error) bool { return StatusCode(err) == http.StatusConflict }

// IsTransient reports a failure that may pass if the same request is sent
// again later: a retryable status after retries ran out, or no answer at all.
// A context that ended is not transient: the caller gave up.
func IsTransient(err error) bool {
	if retryableStatus(StatusCode(err)) {
		return true
	}
	var te *TransportError
	return errors.As(err, &te) && te.stopped == nil
}

// hintFor says what a user can do about a status, in the words of the
// provider's attributes.
func hintFor(method, kind string, clusterID string, status, attempts int) string {
	switch status {
	case http.StatusBadRequest:
		if method == http.MethodPut {
			return "the platform rejected the request; check broker_count and the brokers to remove"
		}
		return "the platform rejected the request"
	case http.StatusUnauthorized:
		return fmt.Sprintf("check the token (attribute `token` or env %s)", TokenEnvVar)
	case http.StatusForbidden:
		return fmt.Sprintf("the token is not allowed to do this on cluster %q; check its permissions on the platform", clusterID)
	case http.StatusNotFound:
		if kind == kindOperation {
			return "the platform does not know this operation (it may have been forgotten after a restart); apply again to start a new one"
		}
		return fmt.Sprintf("check cluster_id %q and the endpoint", clusterID)
	case http.StatusConflict:
		return "another scaling operation with a different target is under way; wait for it to finish, then apply again"
	}
	if retryableStatus(status) {
		if attempts <= 1 {
			return "the platform is busy or unavailable; try again later"
		}
		return fmt.Sprintf("the platform is busy or unavailable; retried %d time(s) with backoff, try again later", attempts-1)
	}
	if status >= 300 && status < 400 {
		return "redirects are not followed, so that the token goes to no other address; set endpoint to the final address"
	}
	return ""
}
