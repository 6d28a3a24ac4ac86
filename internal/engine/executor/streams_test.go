package executor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// fakeStreams records what the run does, in order, and answers group
// descriptions from a script.
type fakeStreams struct {
	clock    *fakeClock
	calls    []string
	growErr  map[string]error
	members  int
	grown    bool
	unstable time.Duration // after the growth, unstable this long
	grownAt  time.Time
}

func (f *fakeStreams) GrowTogether(_ context.Context, _ executor.Work, topics []string, n int) error {
	f.calls = append(f.calls, fmt.Sprintf("grow %s to %d", strings.Join(topics, ","), n))
	if err := f.growErr[topics[0]]; err != nil {
		return err
	}
	f.grown, f.grownAt = true, f.clock.Now()
	return nil
}

func (f *fakeStreams) StreamsGroup(_ context.Context, app string, want map[string]int32) (executor.StreamsGroupStatus, error) {
	st := executor.StreamsGroupStatus{State: "Stable", Members: f.members}
	if f.members == 0 {
		st.State = "Empty"
	}
	if !f.grown || f.clock.Now().Sub(f.grownAt) < f.unstable {
		st.Stable, st.Why = false, "rebalancing"
		st.State = "Reconciling"
		return st, nil
	}
	st.Stable = f.members > 0 && want["orders"] == 8
	return st, nil
}

func (f *fakeStreams) StopApp(context.Context) error {
	f.calls = append(f.calls, "stop")
	f.members = 0
	return nil
}

func (f *fakeStreams) StartApp(context.Context) error {
	f.calls = append(f.calls, "start")
	f.members = 1
	return nil
}

func (f *fakeStreams) Notify(_ context.Context, app string, from, to int32, topics []string) error {
	f.calls = append(f.calls, fmt.Sprintf("notify %s %d->%d %s", app, from, to, strings.Join(topics, ",")))
	return nil
}

func plannedExpansion(t *testing.T, members int, protocol streams.Protocol) streams.Expansion {
	t.Helper()
	app := streams.App{ID: "shop", GroupExists: true, Protocol: protocol, Members: members, Topics: []streams.Topic{
		{Name: "orders", Role: streams.RoleSource, Partitions: 4},
		{Name: "counts", Role: streams.RoleSink, Partitions: 4},
		{Name: "shop-x-repartition", Role: streams.RoleRepartition, Partitions: 4},
	}}
	x, err := streams.PlanExpansion(streams.ExpansionRequest{App: app, Target: 8, StaticPartitioning: true, Quiesce: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestStreamsRunWaitsForAQuietStableGroupBeforeNotifying(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	f := &fakeStreams{clock: clock, members: 2, unstable: 7 * time.Second}
	r := executor.StreamsRun{Kafka: f, Grow: f, Notifier: f, Clock: clock, Quiet: 5 * time.Second, Poll: time.Second}
	if err := r.Run(context.Background(), plannedExpansion(t, 2, streams.ProtocolStreams)); err != nil {
		t.Fatal(err)
	}
	want := []string{"grow counts to 8", "grow orders,shop-x-repartition to 8", "notify shop 4->8 counts,orders,shop-x-repartition"}
	if !slices.Equal(f.calls, want) {
		t.Fatalf("calls %q, want %q", f.calls, want)
	}
	// Unstable for 7 s after the growth, then stable for the 5 s quiet period.
	if got := clock.Now().Sub(f.grownAt); got < 12*time.Second || got > 14*time.Second {
		t.Fatalf("notified %s after the growth, want 12-14 s (7 s unstable + 5 s quiet)", got)
	}
}

func TestStreamsRunQuiescesAClassicGroupAndRestartsItWhenAStepFails(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	f := &fakeStreams{clock: clock, members: 1}
	r := executor.StreamsRun{Kafka: f, Grow: f, Quiesce: f, Notifier: f, Clock: clock, Quiet: time.Second, Poll: time.Second}
	if err := r.Run(context.Background(), plannedExpansion(t, 1, streams.ProtocolClassic)); err != nil {
		t.Fatal(err)
	}
	want := []string{"grow counts to 8", "stop", "grow orders,shop-x-repartition to 8", "start", "notify shop 4->8 counts,orders,shop-x-repartition"}
	if !slices.Equal(f.calls, want) {
		t.Fatalf("calls %q, want %q", f.calls, want)
	}

	boom := errors.New("POLICY_VIOLATION")
	f = &fakeStreams{clock: clock, members: 1, growErr: map[string]error{"orders": boom}}
	r.Kafka, r.Grow, r.Quiesce, r.Notifier = f, f, f, f
	err := r.Run(context.Background(), plannedExpansion(t, 1, streams.ProtocolClassic))
	var se *executor.StreamsStepError
	if !errors.As(err, &se) || !errors.Is(err, boom) || se.Step.Kind != streams.StepGrowTogether || len(se.Done) != 3 {
		t.Fatalf("err = %v, want a StreamsStepError at the grow-together step after 3 done", err)
	}
	if want := []string{"grow counts to 8", "stop", "grow orders,shop-x-repartition to 8", "start"}; !slices.Equal(f.calls, want) {
		t.Fatalf("calls %q, want the app started again after the failure: %q", f.calls, want)
	}
}

// bundleApp is one app of a bundle in the fake: its own members and
// quiesce commands, sharing the growth (and the call log) with the others.
type bundleApp struct {
	*fakeStreams
	id      string
	members int
	never   bool // never stable
}

func (b *bundleApp) StreamsGroup(_ context.Context, app string, want map[string]int32) (executor.StreamsGroupStatus, error) {
	if app != b.id {
		return executor.StreamsGroupStatus{}, fmt.Errorf("app %s asked of %s's port", app, b.id)
	}
	st := executor.StreamsGroupStatus{State: "Stable", Members: b.members}
	st.Stable = !b.never && b.grown && b.members > 0 && want["orders"] == 8
	return st, nil
}

func (b *bundleApp) StopApp(context.Context) error {
	b.calls = append(b.calls, "stop "+b.id)
	b.members = 0
	return nil
}

func (b *bundleApp) StartApp(context.Context) error {
	b.calls = append(b.calls, "start "+b.id)
	b.members = 1
	return nil
}

func bundleExpansion(t *testing.T) streams.Expansion {
	t.Helper()
	app := func(id string, source string) streams.App {
		return streams.App{ID: id, GroupExists: true, Protocol: streams.ProtocolClassic, Members: 1, Topics: []streams.Topic{
			{Name: "orders", Role: streams.RoleSource, Partitions: 4},
			{Name: source, Role: streams.RoleSource, Partitions: 4},
			{Name: id + "-out", Role: streams.RoleSink, Partitions: 4},
			{Name: id + "-x-repartition", Role: streams.RoleRepartition, Partitions: 4},
		}}
	}
	x, err := streams.PlanExpansion(streams.ExpansionRequest{App: app("shop", "customers"), Target: 8, StaticPartitioning: true, Quiesce: true,
		CoExpand: []streams.CoApp{{App: app("fraud", "payments"), Quiesce: true, Notify: true}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// Every classic app of a bundle stops before the one growth and starts
// after it, each with its own commands: one outage window. Each is waited
// for on its own group and notified with its own topics.
func TestStreamsRunBundleQuiescesEveryAppInOneWindow(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	f := &fakeStreams{clock: clock}
	shop, fraud := &bundleApp{fakeStreams: f, id: "shop", members: 1}, &bundleApp{fakeStreams: f, id: "fraud", members: 2}
	r := executor.StreamsRun{Kafka: shop, Grow: f, Quiesce: shop, Notifier: f, Clock: clock, Quiet: time.Second, Poll: time.Second,
		Apps: map[string]executor.StreamsRunApp{"fraud": {Kafka: fraud, Quiesce: fraud, Notifier: f}}}
	if err := r.Run(context.Background(), bundleExpansion(t)); err != nil {
		t.Fatal(err)
	}
	want := []string{"grow fraud-out,shop-out to 8", "stop shop", "stop fraud",
		"grow customers,fraud-x-repartition,orders,payments,shop-x-repartition to 8", "start shop", "start fraud",
		"notify shop 4->8 shop-out,customers,orders,shop-x-repartition", "notify fraud 4->8 fraud-out,fraud-x-repartition,orders,payments"}
	if !slices.Equal(f.calls, want) {
		t.Fatalf("calls\n%q\nwant\n%q", f.calls, want)
	}

	// The growth fails: both apps start again.
	f = &fakeStreams{clock: clock, growErr: map[string]error{"customers": errors.New("POLICY_VIOLATION")}}
	shop, fraud = &bundleApp{fakeStreams: f, id: "shop", members: 1}, &bundleApp{fakeStreams: f, id: "fraud", members: 2}
	r.Kafka, r.Grow, r.Quiesce, r.Notifier = shop, f, shop, f
	r.Apps = map[string]executor.StreamsRunApp{"fraud": {Kafka: fraud, Quiesce: fraud, Notifier: f}}
	if err := r.Run(context.Background(), bundleExpansion(t)); err == nil {
		t.Fatal("a failed growth returned no error")
	}
	want = []string{"grow fraud-out,shop-out to 8", "stop shop", "stop fraud",
		"grow customers,fraud-x-repartition,orders,payments,shop-x-repartition to 8", "start shop", "start fraud"}
	if !slices.Equal(f.calls, want) {
		t.Fatalf("calls\n%q\nwant both apps started again\n%q", f.calls, want)
	}
}

// A plan for one app words its waits as it always did ("the group"); a
// bundle names each app's group.
func TestStreamsRunNamesTheGroupItGaveUpOn(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	f := &fakeStreams{clock: clock, members: 0} // never stable
	r := executor.StreamsRun{Kafka: f, Grow: f, Notifier: f, Clock: clock, Poll: time.Second}
	x := plannedExpansion(t, 1, streams.ProtocolStreams)
	err := r.Run(context.Background(), x)
	if err == nil || !strings.Contains(err.Error(), "gave up waiting for the group to be stable on 8 partitions") {
		t.Fatalf("err %v, want the single app's wording", err)
	}
	clock = &fakeClock{now: time.Unix(0, 0)}
	f = &fakeStreams{clock: clock}
	shop, fraud := &bundleApp{fakeStreams: f, id: "shop", members: 1, never: true}, &bundleApp{fakeStreams: f, id: "fraud", members: 1}
	r = executor.StreamsRun{Kafka: shop, Grow: f, Quiesce: shop, Notifier: f, Clock: clock, Poll: time.Second,
		Apps: map[string]executor.StreamsRunApp{"fraud": {Kafka: fraud, Quiesce: fraud, Notifier: f}}}
	if err := r.Run(context.Background(), bundleExpansion(t)); err == nil || !strings.Contains(err.Error(), "gave up waiting for group shop to be stable") {
		t.Fatalf("err %v, want group shop named", err)
	}
}
