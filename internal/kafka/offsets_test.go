package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// answers returns a list function that answers p0 of topic t with errs in
// turn, then with offset 42, counting its calls.
func answers(calls *int, errs ...error) func(context.Context) (kadm.ListedOffsets, error) {
	return func(context.Context) (kadm.ListedOffsets, error) {
		o := kadm.ListedOffset{Topic: "t", Partition: 0, Offset: 42}
		if *calls < len(errs) {
			o = kadm.ListedOffset{Topic: "t", Partition: 0, Offset: -1, Err: errs[*calls]}
		}
		*calls++
		return kadm.ListedOffsets{"t": {0: o}}, nil
	}
}

func TestListOffsetsAsksAgainAfterALeaderElection(t *testing.T) {
	calls := 0
	got, err := listOffsets(context.Background(), nil, answers(&calls, kerr.OffsetNotAvailable, kerr.NotLeaderForPartition, kerr.LeaderNotAvailable))
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := got.Lookup("t", 0); o.Err != nil || o.Offset != 42 || calls != 4 {
		t.Fatalf("got offset %d (%v) after %d calls; want 42 after 4", o.Offset, o.Err, calls)
	}
}

func TestListOffsetsReturnsWhatDoesNotPass(t *testing.T) {
	// An unknown topic is the callers' "not there", and an authorization
	// failure does not pass by asking again: one call each.
	for _, want := range []error{kerr.UnknownTopicOrPartition, kerr.TopicAuthorizationFailed} {
		calls := 0
		got, err := listOffsets(context.Background(), nil, answers(&calls, want))
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := got.Lookup("t", 0); !errors.Is(o.Err, want) || calls != 1 {
			t.Errorf("%v: got %v after %d calls; want it after 1", want, o.Err, calls)
		}
	}
}

func TestListOffsetsStopsWithItsContext(t *testing.T) {
	// A leader that never catches up: the caller's deadline ends the
	// retries, and the last answer names the partition's error.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	calls := 0
	never := make([]error, 1000)
	for i := range never {
		never[i] = kerr.OffsetNotAvailable
	}
	got, err := listOffsets(ctx, nil, answers(&calls, never...))
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := got.Lookup("t", 0); !errors.Is(o.Err, kerr.OffsetNotAvailable) || calls < 2 || calls > 10 {
		t.Fatalf("got %v after %d calls; want OFFSET_NOT_AVAILABLE after a few", o.Err, calls)
	}
}

func TestListOffsetsWaitsOnlyForTheNeededPartitions(t *testing.T) {
	// p1 has no leader (its brokers dead) and nobody asked for it: the
	// read of p0 does not wait for it.
	calls := 0
	list := func(context.Context) (kadm.ListedOffsets, error) {
		calls++
		return kadm.ListedOffsets{"t": {
			0: {Topic: "t", Partition: 0, Offset: 42},
			1: {Topic: "t", Partition: 1, Offset: -1, Err: kerr.LeaderNotAvailable},
		}}, nil
	}
	got, err := listOffsets(context.Background(), func(_ string, p int32) bool { return p == 0 }, list)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := got.Lookup("t", 0); o.Offset != 42 || calls != 1 {
		t.Fatalf("got offset %d after %d calls; want 42 after 1", o.Offset, calls)
	}
}

func TestListOffsetsGivesUpOnAPartitionWithNoLeader(t *testing.T) {
	// A needed partition with no leader at all: its error comes after
	// offsetsRetryFor, not at the end of the caller's request timeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	calls := 0
	never := make([]error, 1000)
	for i := range never {
		never[i] = kerr.LeaderNotAvailable
	}
	start := time.Now()
	got, err := listOffsets(ctx, nil, answers(&calls, never...))
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := got.Lookup("t", 0); !errors.Is(o.Err, kerr.LeaderNotAvailable) || ctx.Err() != nil {
		t.Fatalf("got %v after %s and %d calls; want LEADER_NOT_AVAILABLE before the caller's deadline", o.Err, time.Since(start), calls)
	}
}
