package executor_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// sleepLog is the fake clock, with every wait recorded.
type sleepLog struct {
	*fakeClock
	mu     sync.Mutex
	sleeps []time.Duration
}

func (c *sleepLog) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	return c.fakeClock.Sleep(ctx, d)
}

// slowReads makes each listing of the reassignments in flight take cost on
// the fake clock: a cluster where a poll costs that much.
type slowReads struct {
	*fakeCluster
	clock *fakeClock
	cost  time.Duration
}

func (s slowReads) Reassignments(ctx context.Context) ([]executor.Reassignment, error) {
	_ = s.clock.Sleep(ctx, s.cost)
	return s.fakeCluster.Reassignments(ctx)
}

// A running reassignment is polled every pollCostFactor (4) times what a
// poll costs, between MinPollInterval and PollInterval, counted from the
// poll's start; without MinPollInterval, every PollInterval from the poll's
// start.
func TestPollIntervalFollowsThePollsCost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		min     time.Duration
		cost    time.Duration
		want    time.Duration // the wait after a poll
		notWant time.Duration
	}{
		{"cheap polls", 100 * time.Millisecond, 10 * time.Millisecond, 90 * time.Millisecond, 990 * time.Millisecond},
		{"polls of 50ms", 100 * time.Millisecond, 50 * time.Millisecond, 150 * time.Millisecond, 950 * time.Millisecond},
		{"polls of 400ms", 100 * time.Millisecond, 400 * time.Millisecond, 600 * time.Millisecond, 1200 * time.Millisecond},
		{"fixed interval", 0, 50 * time.Millisecond, 950 * time.Millisecond, 150 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 3, 12)
			clock := &sleepLog{fakeClock: r.clock}
			port := slowReads{fakeCluster: r.f, clock: r.clock, cost: tc.cost}
			ex := executor.New(executor.Deps{Kafka: port, Scaler: r.sc, Store: r.store, Clock: clock},
				executor.Settings{PollInterval: time.Second, MinPollInterval: tc.min})
			op, err := ex.Scale(context.Background(), scaleReq(5))
			if err != nil {
				t.Fatal(err)
			}
			r.assertAtTarget(t, op)
			clock.mu.Lock()
			defer clock.mu.Unlock()
			if !slices.Contains(clock.sleeps, tc.want) || slices.Contains(clock.sleeps, tc.notWant) {
				t.Errorf("waits %v: want some of %s and none of %s", clock.sleeps, tc.want, tc.notWant)
			}
		})
	}
}
