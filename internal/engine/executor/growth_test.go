package executor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// growingCluster is the fake cluster whose port also measures growth: every
// partition it is asked about is written at rate bytes/s, or the read
// fails with err.
type growingCluster struct {
	*fakeCluster
	rate   float64
	err    error
	asked  int
	window time.Duration
}

func (g *growingCluster) RecentGrowth(_ context.Context, parts []engine.PartitionSize, window time.Duration) (map[string]map[int32]float64, error) {
	g.asked, g.window = len(parts), window
	if g.err != nil {
		return nil, g.err
	}
	out := map[string]map[int32]float64{}
	for _, p := range parts {
		if out[p.Topic] == nil {
			out[p.Topic] = map[int32]float64{}
		}
		out[p.Topic][p.Partition] = g.rate
	}
	return out, nil
}

// The operation records the moving partitions' write rate with its moves,
// so the ETA it records, and every progress line after, counts the
// catch-up; a port that cannot read it costs only the catch-up.
func TestOperationRecordsTheMovingPartitionsGrowth(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{name: "measured"}, {name: "unreadable", err: errors.New("LIST_OFFSETS refused")}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 3, 12)
			g := &growingCluster{fakeCluster: r.f, rate: 2 << 20, err: tc.err}
			ex := executor.New(executor.Deps{Kafka: g, Scaler: r.sc, Store: r.store, Clock: r.clock},
				executor.Settings{PollInterval: time.Second})
			op, err := ex.Scale(context.Background(), scaleReq(5))
			if err != nil {
				t.Fatal(err)
			}
			if g.asked == 0 || g.window != engine.GrowthWindow {
				t.Fatalf("asked for %d partitions over %s; want the moving ones over %s", g.asked, g.window, engine.GrowthWindow)
			}
			withGrowth := 0
			for _, m := range op.Plan.Moves() {
				if m.GrowthBytesPerSec > 0 {
					withGrowth++
				}
			}
			eta := op.Plan.ETA(engine.ETAInputs{Throttle: op.ThrottleRate})
			if tc.err != nil {
				if withGrowth != 0 || eta.CatchingUp != 0 {
					t.Fatalf("growth unreadable, yet %d moves carry one and the ETA catches up %s", withGrowth, eta.CatchingUp)
				}
				return
			}
			if withGrowth != len(op.Plan.Moves()) || eta.CatchingUp <= 0 {
				t.Fatalf("%d of %d moves carry a growth rate, catch-up %s; want all, and more than 0", withGrowth, len(op.Plan.Moves()), eta.CatchingUp)
			}
		})
	}
}
