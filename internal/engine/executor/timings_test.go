package executor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// slowScaler takes per broker added or removed on the fake clock, as a
// platform starting or stopping machines does.
type slowScaler struct {
	*fakeScaler
	clock *fakeClock
	per   time.Duration
}

func (s slowScaler) ScaleTo(ctx context.Context, n int, remove []int32) error {
	changed := len(remove)
	if len(remove) == 0 {
		changed = n - len(s.f.brokers)
	}
	_ = s.clock.Sleep(ctx, time.Duration(changed)*s.per)
	return s.fakeScaler.ScaleTo(ctx, n, remove)
}

// A scale-out records its broker add time per broker with the scaling
// method; the next operation under the key carries it and adds its own
// remove time; the next plan's ETA uses both, and a plan under another
// method the defaults.
func TestOperationsMeasureBrokerTimes(t *testing.T) {
	r := newRig(t, 3, 12)
	addPer, removePer := 47*time.Second, 9*time.Second
	sc := slowScaler{fakeScaler: r.sc, clock: r.clock, per: addPer}
	ex := executor.New(executor.Deps{Kafka: r.f, Scaler: sc, Store: r.store, Clock: r.clock}, executor.Settings{PollInterval: time.Second})
	req := scaleReq(5)
	req.ScalingMethod = "http"
	op, err := ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := (engine.Timings{Method: "http", BrokerAddSeconds: addPer.Seconds()}); op.Timings != want {
		t.Fatalf("after the scale-out: timings %+v, want %+v", op.Timings, want)
	}

	sc.per = removePer
	ex = executor.New(executor.Deps{Kafka: r.f, Scaler: sc, Store: r.store, Clock: r.clock}, executor.Settings{PollInterval: time.Second})
	req = scaleReq(4)
	req.ScalingMethod = "http"
	if op, err = ex.Scale(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := engine.Timings{Method: "http", BrokerAddSeconds: addPer.Seconds(), BrokerRemoveSeconds: removePer.Seconds()}
	if op.Timings != want {
		t.Fatalf("after the scale-in: timings %+v, want %+v", op.Timings, want)
	}

	snap, err := r.f.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	prev, _ := r.store.Load(context.Background(), "cluster/test")
	pv, err := executor.PreviewScaleFrom(snap, prev, 6, nil, executor.BalanceNone, scaleReq(6).Options)
	if err != nil {
		t.Fatal(err)
	}
	if eta := pv.ETA(prev, "http", 0, 10<<20); !eta.AddMeasured || eta.Adding != 2*addPer {
		t.Errorf("the next scale-out's ETA adds 2 brokers in %s (measured %v), want 2 × %s", eta.Adding, eta.AddMeasured, addPer)
	}
	if eta := pv.ETA(prev, "command", 0, 10<<20); eta.AddMeasured || eta.Adding != 2*engine.DefaultBrokerAddTime {
		t.Errorf("under another method the ETA adds 2 brokers in %s (measured %v), want the default", eta.Adding, eta.AddMeasured)
	}
	// A time the other method declares replaces the default until it is
	// measured, and the line says which it is; a measurement wins over it.
	eta := pv.ETA(prev, "command", 90*time.Second, 10<<20)
	if !eta.AddDeclared || eta.Adding != 180*time.Second || !strings.Contains(eta.String(), "3m0s adding 2 broker(s) (the time the scaling method declares, not yet measured)") {
		t.Errorf("with a declared 90s per broker: %s (declared %v)", eta, eta.AddDeclared)
	}
	if eta := pv.ETA(prev, "http", 90*time.Second, 10<<20); !eta.AddMeasured || eta.AddDeclared || eta.Adding != 2*addPer {
		t.Errorf("measured and declared: the ETA adds 2 brokers in %s (measured %v, declared %v), want the measurement", eta.Adding, eta.AddMeasured, eta.AddDeclared)
	}
	if s := pv.ETA(prev, "command", 0, 10<<20).String(); !strings.Contains(s, "(unknown until this scaling method has added a broker: counted at the default of 3s each)") {
		t.Errorf("with neither a measurement nor a declared time the line does not say the add time is unknown: %s", s)
	}
}
