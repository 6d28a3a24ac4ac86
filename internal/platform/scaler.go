package platform

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Scaler asks a platform to run a given number of brokers. The cluster
// resource's executor calls ScaleTo after it has drained the brokers that
// leave (scale-in) or before it moves replicas onto new ones (scale-out), and
// then waits, through Kafka, for the brokers to register or to go.
type Scaler interface {
	// ScaleTo returns once the platform reports the change done (or, for
	// ExternalScaler, at once). removeBrokerIDs names the brokers that leave
	// on a scale-in and is empty on a scale-out.
	ScaleTo(ctx context.Context, brokerCount int, removeBrokerIDs []int32) error
	// Describe names the method for plans and logs. It holds no secret.
	Describe() string
}

var (
	_ Scaler = (*HTTPScaler)(nil)
	_ Scaler = (*CommandScaler)(nil)
	_ Scaler = ExternalScaler{}
)

// HTTPScaler scales through the HTTP scaling API: one PUT of the broker
// count, then polling of the operation until it ends.
type HTTPScaler struct {
	Client *HTTPClient
	// PollInterval is the wait between two polls of the operation; zero
	// means DefaultPollInterval.
	PollInterval time.Duration
}

// ScaleTo returns nil when the operation SUCCEEDED. Its errors wrap those of
// SetBrokerCount and WaitOperation, so IsUnauthorized and the others, and
// errors.As to *OperationFailedError, see through them.
func (s *HTTPScaler) ScaleTo(ctx context.Context, brokerCount int, removeBrokerIDs []int32) error {
	if s.Client == nil {
		return errors.New("HTTP scaler has no client; this is a bug in kafkascale, please report it")
	}
	what := scaleWhat(brokerCount, removeBrokerIDs)
	op, err := s.Client.SetBrokerCount(ctx, SetBrokerCountRequest{BrokerCount: brokerCount, RemoveBrokerIDs: removeBrokerIDs})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch op.State {
	case OperationSucceeded:
		return nil
	case OperationFailed:
		return fmt.Errorf("%s: %w", what, &OperationFailedError{OperationID: op.ID, Message: s.Client.scrub.string(op.Message)})
	}
	if _, err := s.Client.WaitOperation(ctx, op.ID, s.PollInterval); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// AwaitIdle returns once the platform runs no scaling operation: the
// one an interrupted apply asked for goes on after it, and a later request
// with another count is refused (409) until it ends. Its outcome does not
// matter here, only that it is over: the caller reads the brokers after.
func (s *HTTPScaler) AwaitIdle(ctx context.Context) error {
	if s.Client == nil {
		return errors.New("HTTP scaler has no client; this is a bug in kafkascale, please report it")
	}
	cl, err := s.Client.GetCluster(ctx)
	if err != nil {
		return fmt.Errorf("reading the platform's running scaling operation: %w", err)
	}
	if cl.Operation == nil || cl.Operation.State.Done() {
		return nil
	}
	_, err = s.Client.WaitOperation(ctx, cl.Operation.ID, s.PollInterval)
	if fe := (*OperationFailedError)(nil); errors.As(err, &fe) {
		return nil
	}
	return err
}

// Describe names the endpoint and cluster, never the token.
func (s *HTTPScaler) Describe() string {
	if s.Client == nil {
		return "HTTP scaling API (not configured)"
	}
	return fmt.Sprintf("HTTP scaling API at %s, cluster %q", s.Client.Endpoint(), s.Client.ClusterID())
}

// ExternalScaler does nothing: brokers are started and stopped by other
// means (an operator, an autoscaling group, a person), and the executor
// waits for them to register with Kafka or to leave.
type ExternalScaler struct{}

// ScaleTo returns nil at once, unless ctx has already ended.
func (ExternalScaler) ScaleTo(ctx context.Context, brokerCount int, removeBrokerIDs []int32) error {
	if brokerCount < 1 {
		return fmt.Errorf("broker count %d is not positive; a cluster needs at least one broker", brokerCount)
	}
	return ctx.Err()
}

// Describe says that brokers come and go by other means.
func (ExternalScaler) Describe() string {
	return "external: brokers are started and stopped by other means; kafkascale only waits for them"
}

func scaleWhat(brokerCount int, removeBrokerIDs []int32) string {
	if len(removeBrokerIDs) == 0 {
		return fmt.Sprintf("scaling to %d brokers", brokerCount)
	}
	return fmt.Sprintf("scaling to %d brokers, removing broker(s) %s", brokerCount, joinIDs(removeBrokerIDs))
}

// joinIDs writes broker ids the way they are handed to commands: 4,5.
func joinIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(int64(id), 10)
	}
	return strings.Join(parts, ",")
}
