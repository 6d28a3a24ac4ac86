package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// A Metadata answer from a broker that has not yet heard of a broker the
// controller has unfenced leaves that broker out: the snapshot asks again
// rather than calling it fenced. A fenced registration is not waited for.
func TestUnlistedRunningBrokers(t *testing.T) {
	md := kmsg.NewPtrMetadataResponse()
	for _, id := range []int32{1, 2, 3} {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID = id
		md.Brokers = append(md.Brokers, b)
	}
	regs := []Registration{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4, Fenced: true}, {ID: 9}}
	if got := unlisted(md, regs); len(got) != 1 || got[0] != 9 {
		t.Errorf("unlisted = %v; want [9]: broker 9 runs but the answer does not list it, broker 4 is fenced", got)
	}
	if got := unlisted(md, regs[:4]); len(got) != 0 {
		t.Errorf("unlisted = %v; want none", got)
	}
}

// A read sent to every broker (ListGroups, DescribeLogDirs) that one broker
// refused, because it was starting or stopping, names that broker, so that
// the read is made again once it listens or is fenced; any other failure
// does not.
func TestRefusedNamesTheBroker(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	shards := &kadm.ShardErrors{Name: "ListGroups", Errs: []kadm.ShardError{
		{Broker: kadm.BrokerDetail{NodeID: 2, Host: "127.0.0.1", Port: 9093}, Err: kerr.CoordinatorLoadInProgress},
		{Broker: kadm.BrokerDetail{NodeID: 5, Host: "127.0.0.1", Port: 9096}, Err: dial},
	}}
	if bd := refused(fmt.Errorf("listing groups: %w", shards)); bd == nil || bd.ID != 5 || bd.Addr != "127.0.0.1:9096" {
		t.Errorf("refused(shard errors) = %+v; want broker 5 at 127.0.0.1:9096", bd)
	}
	down := &BrokerDownError{ID: 3, Addr: "127.0.0.1:9094", Err: dial}
	if bd := refused(fmt.Errorf("reading: %w", down)); bd != down {
		t.Errorf("refused(BrokerDownError) = %+v; want it", bd)
	}
	// The error that reaches the user names that broker, not the cluster
	// as unreachable.
	c := &Client{cfg: Config{RequestTimeout: time.Second, BootstrapServers: []string{"127.0.0.1:9092"}}}
	err := c.withTimeout(context.Background(), "listing groups", func(context.Context) error { return shards })
	if ue := (*UnreachableError)(nil); errors.As(err, &ue) || !strings.Contains(fmt.Sprint(err), "broker 5 (127.0.0.1:9096) refused the connection") {
		t.Errorf("the error of a read one broker refused: %v; want it to name broker 5, not the cluster as unreachable", err)
	}
	for _, err := range []error{nil, errors.New("timeout"), &kadm.ShardErrors{Errs: []kadm.ShardError{{Broker: kadm.BrokerDetail{NodeID: 2}, Err: kerr.CoordinatorLoadInProgress}}}} {
		if bd := refused(err); bd != nil {
			t.Errorf("refused(%v) = %+v; want none", err, bd)
		}
	}
}

// A call that met a broker refusing the connection is made again, as a
// request to any broker then goes to the next one: seconds after a broker
// was killed, a poll of the registrations failed an apply as "cluster
// unreachable" (ci18). Three refusals in a row are returned.
func TestRefusedCallIsMadeAgain(t *testing.T) {
	c := &Client{cfg: Config{RequestTimeout: time.Second, BootstrapServers: []string{"127.0.0.1:9092"}}}
	dial := fmt.Errorf("unable to dial: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	calls := 0
	err := c.readAny(context.Background(), "listing registered brokers", func(context.Context) error {
		if calls++; calls == 1 {
			return dial
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Errorf("one refusal, then an answer: %v after %d calls; want nil after 2", err, calls)
	}
	calls = 0
	err = c.readAny(context.Background(), "listing registered brokers", func(context.Context) error { calls++; return dial })
	if err == nil || calls != refusedTries {
		t.Errorf("refused every time: %v after %d calls; want the error after %d", err, calls, refusedTries)
	}
	calls = 0
	_ = c.readAny(context.Background(), "reading", func(context.Context) error { calls++; return errors.New("INVALID_REQUEST") })
	if calls != 1 {
		t.Errorf("another error was tried %d times; want once", calls)
	}
}
