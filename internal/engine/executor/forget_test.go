package executor_test

import (
	"context"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// A deleted topic's unfinished replication factor change: Forget removes
// its broker throttle and its record; a finished one keeps the brokers'
// rates as they are (they are no longer its own) and loses its record.
func TestForgetRemovesAnUnfinishedOperationsThrottleAndRecord(t *testing.T) {
	for _, tc := range []struct {
		name      string
		phase     executor.Phase
		wantRates int
	}{{"unfinished", executor.PhaseReassign, 0}, {"finished", executor.PhaseCompleted, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 3, 6)
			ctx := context.Background()
			if err := r.f.SetThrottle(ctx, []int32{1, 2}, 5<<20); err != nil {
				t.Fatal(err)
			}
			key := "topic/test/orders"
			if err := r.store.Save(ctx, &executor.Operation{Key: key, ID: "op-rf", Kind: executor.KindReplicationFactor,
				Phase: tc.phase, ThrottledBrokers: []int32{1, 2}, ThrottleRate: 5 << 20}); err != nil {
				t.Fatal(err)
			}
			if err := r.ex.Forget(ctx, key, `kafkascale_topic "orders"`); err != nil {
				t.Fatal(err)
			}
			if op, _ := r.store.Load(ctx, key); op != nil {
				t.Fatalf("the record of %s is still there, in phase %s", op.ID, op.Phase)
			}
			if got := len(r.f.rates); got != tc.wantRates {
				t.Fatalf("%d broker(s) keep a rate, want %d", got, tc.wantRates)
			}
			// Nothing to forget: no error, nothing changed.
			if err := r.ex.Forget(ctx, "topic/test/none", `kafkascale_topic "none"`); err != nil {
				t.Fatal(err)
			}
		})
	}
}
