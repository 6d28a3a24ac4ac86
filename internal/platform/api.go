// Package platform implements the ways kafkascale asks a platform to add or
// remove brokers: the HTTP scaling API (this file's wire types and client.go),
// an external command, or nothing at all (brokers managed elsewhere).
//
// The wire types below are the contract of docs/scaling-api.openapi.yaml. The
// local cluster command (cmd/kafkascale-local) serves the same contract for
// real, so the client and the server share these types.
package platform

// OperationState is the lifecycle of one scaling operation on the platform.
type OperationState string

const (
	OperationPending   OperationState = "PENDING"
	OperationRunning   OperationState = "RUNNING"
	OperationSucceeded OperationState = "SUCCEEDED"
	OperationFailed    OperationState = "FAILED"
)

// Done reports whether the operation has reached a terminal state.
func (s OperationState) Done() bool { return s == OperationSucceeded || s == OperationFailed }

// BrokerState is the platform's view of one broker process. It is not
// Kafka's view: a broker the platform reports RUNNING may still be fenced.
type BrokerState string

const (
	BrokerStarting BrokerState = "STARTING"
	BrokerRunning  BrokerState = "RUNNING"
	BrokerStopping BrokerState = "STOPPING"
	BrokerStopped  BrokerState = "STOPPED"
)

// Broker is one broker as the platform knows it.
type Broker struct {
	ID    int32       `json:"id"`
	Rack  string      `json:"rack,omitempty"`
	State BrokerState `json:"state"`
}

// Operation is one asynchronous scaling request.
type Operation struct {
	ID      string         `json:"id"`
	State   OperationState `json:"state"`
	Message string         `json:"message,omitempty"`
}

// Cluster is the answer to GET /v1/clusters/{id}.
type Cluster struct {
	ID          string     `json:"id"`
	BrokerCount int        `json:"broker_count"`
	Brokers     []Broker   `json:"brokers"`
	Operation   *Operation `json:"operation"`
}

// SetBrokerCountRequest is the body of PUT /v1/clusters/{id}/broker-count.
// RemoveBrokerIDs names which brokers leave on a scale-in; the platform picks
// when it is empty. Repeating the same request is idempotent: it returns the
// operation already under way for it.
type SetBrokerCountRequest struct {
	BrokerCount     int     `json:"broker_count"`
	RemoveBrokerIDs []int32 `json:"remove_broker_ids,omitempty"`
}

// SetBrokerCountResponse is the 202 answer to a PUT of the broker count.
type SetBrokerCountResponse struct {
	Operation Operation `json:"operation"`
}

// ErrorBody is the JSON body of every 4xx and 5xx answer.
type ErrorBody struct {
	Error string `json:"error"`
}
