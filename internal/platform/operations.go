package platform

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// DefaultPollInterval is WaitOperation's interval when it is given none.
const DefaultPollInterval = 2 * time.Second

// GetOperation returns the current state of one operation.
//
// Retried: see HTTPClient. A 404 (IsNotFound) means the platform does not
// know the operation. A state outside the contract's four is a
// *ResponseError.
func (c *HTTPClient) GetOperation(ctx context.Context, id string) (Operation, error) {
	if id == "" {
		return Operation{}, errors.New("scaling API: operation id is empty")
	}
	var out Operation
	cl := call{method: http.MethodGet, path: "/v1/operations/" + url.PathEscape(id), kind: kindOperation, idempotent: true}
	if err := c.do(ctx, cl, &out); err != nil {
		return Operation{}, err
	}
	if err := checkOperation(out); err != nil {
		return Operation{}, &ResponseError{Method: cl.method, Path: cl.path, StatusCode: http.StatusOK, Problem: err.Error()}
	}
	return out, nil
}

// WaitOperation polls an operation every pollInterval (DefaultPollInterval
// when not positive) until it ends.
//
// It returns the final operation and nil when it SUCCEEDED, and an
// *OperationFailedError when it FAILED. Each poll is retried as GetOperation
// is; a poll whose retries run out ends the wait with its error. When ctx
// ends first, the error wraps ctx.Err() and names the last state seen; the
// operation goes on without us, and since SetBrokerCount is idempotent the
// next apply finds it again.
func (c *HTTPClient) WaitOperation(ctx context.Context, id string, pollInterval time.Duration) (Operation, error) {
	if pollInterval <= 0 {
		pollInterval = DefaultPollInterval
	}
	lg := c.logger(ctx)
	start := c.now()
	var last Operation
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return last, c.waitStopped(ctx, id, last)
		case <-timer.C:
		}
		op, err := c.GetOperation(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return last, c.waitStopped(ctx, id, last)
			}
			return last, fmt.Errorf("waiting for scaling operation %s: %w", id, err)
		}
		if op.State != last.State {
			lg.log(LogInfo, "scaling operation state", map[string]any{
				"operation_id": id, "state": string(op.State), "message": op.Message,
				"elapsed": c.now().Sub(start).Round(time.Second).String(),
			})
		}
		last = op
		switch op.State {
		case OperationSucceeded:
			return op, nil
		case OperationFailed:
			return op, &OperationFailedError{OperationID: id, Message: c.scrub.string(op.Message)}
		}
		timer.Reset(pollInterval)
	}
}

func (c *HTTPClient) waitStopped(ctx context.Context, id string, last Operation) error {
	state := "none seen yet"
	if last.State != "" {
		state = string(last.State)
	}
	return fmt.Errorf("stopped waiting for scaling operation %s (last state: %s); it may still be running on the platform: %w", id, state, ctx.Err())
}
