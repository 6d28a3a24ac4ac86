package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Found by the soak (seed 22, step 19): a plan right after a demotion
// moved __consumer_offsets' leaders failed with "StreamsGroupDescribe
// soak-app on broker 9: NOT_COORDINATOR". A moved or loading coordinator
// is asked again; any other error, or one that persists, is returned.
func TestRetryMovedCoordinator(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   error
	}{
		{"moved then answered", []error{fmt.Errorf("on broker 9: %w", kerr.NotCoordinator), kerr.CoordinatorLoadInProgress, nil}, 3, nil},
		{"not available then answered", []error{kerr.CoordinatorNotAvailable, nil}, 2, nil},
		{"another error is not retried", []error{kerr.GroupAuthorizationFailed, nil}, 1, kerr.GroupAuthorizationFailed},
		{"a coordinator that never settles", nil, coordinatorAttempts, kerr.NotCoordinator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := retryMovedCoordinator(ctx, func() error {
				calls++
				if tc.errs == nil {
					return kerr.NotCoordinator
				}
				return tc.errs[calls-1]
			})
			if calls != tc.wantCalls || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("%d calls, error %v; want %d calls, error %v", calls, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
}
