package executor_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// completionLost is a store that loses every save of a completed
// operation until healed, as a store whose partition went leaderless just
// as the run finished.
type completionLost struct {
	*memStore
	healed bool
}

func (s *completionLost) Save(ctx context.Context, op *executor.Operation) error {
	if op.Phase == executor.PhaseCompleted && !s.healed {
		return errors.New("NOT_LEADER_OR_FOLLOWER")
	}
	return s.memStore.Save(ctx, op)
}

// countingPlatform passes requests to the fake platform and refuses, as a
// replacement of nothing, one that names a broker no longer registered.
type countingPlatform struct {
	*fakeScaler
}

func (p countingPlatform) ScaleTo(ctx context.Context, n int, remove []int32) error {
	for _, id := range remove {
		if p.f.brokers[id] == nil {
			p.calls = append(p.calls, fmt.Sprintf("%d %v", n, remove))
			return fmt.Errorf("replacing broker %d: the platform has no such broker", id)
		}
	}
	return p.fakeScaler.ScaleTo(ctx, n, remove)
}

// A run that unregistered the drained brokers and then could not record
// the completion leaves the operation in remove-brokers. The next run must
// not ask the platform again: the count with the brokers named is what a
// scaling API reads as a replacement, and the platform would start a new
// broker in the removed one's place. The simulation found it
// (internal/engine/executor/sim).
func TestResumedRemovalOfUnregisteredBrokersAsksThePlatformNothing(t *testing.T) {
	r := newRig(t, 4, 12)
	store := &completionLost{memStore: r.store}
	run := func() (*executor.Operation, error) {
		ex := executor.New(executor.Deps{Kafka: r.f, Scaler: countingPlatform{r.sc}, Store: store, Clock: r.clock}, executor.Settings{PollInterval: time.Second})
		return ex.Scale(context.Background(), scaleReq(3))
	}
	if _, err := run(); err == nil {
		t.Fatal("the first run recorded its completion; the store was to lose it")
	}
	stored, _ := r.store.Load(context.Background(), "cluster/test")
	if stored.Phase != executor.PhaseRemoveBrokers {
		t.Fatalf("stored phase %s after the lost completion, want %s", stored.Phase, executor.PhaseRemoveBrokers)
	}
	if got := len(r.f.brokers); got != 3 {
		t.Fatalf("%d brokers registered after the first run, want 3: it unregistered the drained one", got)
	}
	asked := len(r.sc.calls)

	store.healed = true
	op, err := run()
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	if op.Phase != executor.PhaseCompleted {
		t.Fatalf("resumed run ended in phase %s, want completed", op.Phase)
	}
	if len(r.sc.calls) != asked {
		t.Errorf("the resumed run asked the platform %v after the brokers were gone", r.sc.calls[asked:])
	}
	if got := len(r.f.brokers); got != 3 {
		t.Errorf("%d brokers registered after the resumed run, want 3", got)
	}
}
