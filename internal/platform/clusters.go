package platform

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

func (c *HTTPClient) clusterPath() string {
	return "/v1/clusters/" + url.PathEscape(c.clusterID)
}

// GetCluster returns the platform's view of the cluster: its broker count,
// its brokers and the operation under way, if any.
//
// Retried: see HTTPClient. A 404 (IsNotFound) means the platform knows no
// cluster by this id.
func (c *HTTPClient) GetCluster(ctx context.Context) (Cluster, error) {
	var out Cluster
	cl := call{method: http.MethodGet, path: c.clusterPath(), kind: kindCluster, idempotent: true}
	if err := c.do(ctx, cl, &out); err != nil {
		return Cluster{}, err
	}
	return out, nil
}

// SetBrokerCount asks the platform to run req.BrokerCount brokers, and
// returns the operation that does it, usually PENDING or RUNNING. Follow it
// with WaitOperation.
//
// The PUT is retried like a GET, timeouts and broken connections included:
// the contract makes it idempotent, since the same body answers with the
// operation already under way for it, so a repeat after a lost answer cannot
// start a second operation. Not retried: 400 (IsBadRequest: a count or broker
// id the platform refuses), 401, 403, 404 and 409 (IsConflict: an operation
// with another target is under way). A count below 1, a negative broker
// id or one named twice is refused before any request.
func (c *HTTPClient) SetBrokerCount(ctx context.Context, req SetBrokerCountRequest) (Operation, error) {
	if req.BrokerCount < 1 {
		return Operation{}, fmt.Errorf("scaling API: broker count %d is not positive; a cluster needs at least one broker", req.BrokerCount)
	}
	seen := make(map[int32]bool, len(req.RemoveBrokerIDs))
	for _, id := range req.RemoveBrokerIDs {
		if id < 0 {
			return Operation{}, fmt.Errorf("scaling API: broker id %d to remove is negative", id)
		}
		if seen[id] {
			return Operation{}, fmt.Errorf("scaling API: broker %d is named twice among the brokers to remove", id)
		}
		seen[id] = true
	}
	var out SetBrokerCountResponse
	cl := call{
		method:     http.MethodPut,
		path:       c.clusterPath() + "/broker-count",
		kind:       kindCluster,
		body:       req,
		idempotent: true,
	}
	if err := c.do(ctx, cl, &out); err != nil {
		return Operation{}, err
	}
	if err := checkOperation(out.Operation); err != nil {
		return Operation{}, &ResponseError{Method: cl.method, Path: cl.path, StatusCode: http.StatusAccepted, Problem: err.Error()}
	}
	c.logger(ctx).log(LogInfo, "scaling operation accepted", map[string]any{
		"cluster_id": c.clusterID, "broker_count": req.BrokerCount, "remove_broker_ids": fmt.Sprint(req.RemoveBrokerIDs),
		"operation_id": out.Operation.ID, "state": string(out.Operation.State),
	})
	return out.Operation, nil
}

// checkOperation rejects an operation the client could not follow: one
// without an id cannot be polled, and an unknown state would be polled
// forever.
func checkOperation(op Operation) error {
	if op.ID == "" {
		return fmt.Errorf("the operation has no id")
	}
	switch op.State {
	case OperationPending, OperationRunning, OperationSucceeded, OperationFailed:
		return nil
	}
	return fmt.Errorf("operation %s has the unknown state %q (want PENDING, RUNNING, SUCCEEDED or FAILED)", op.ID, op.State)
}
