package engine_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

func etaGroups(busiest ...int64) []engine.Group {
	gs := make([]engine.Group, len(busiest))
	for i, b := range busiest {
		gs[i] = engine.Group{Bytes: 2 * b, BusiestBrokerBytes: b}
	}
	return gs
}

// emptyMoves makes, for each broker, that many moves of an empty partition
// onto it.
func emptyMoves(onto map[int32]int) []engine.Move {
	var ms []engine.Move
	p := int32(0)
	for b, n := range onto {
		for range n {
			ms = append(ms, engine.Move{Topic: "t", Partition: p, OldReplicas: []int32{1}, NewReplicas: []int32{b}, Adding: []int32{b}, Removing: []int32{1}})
			p++
		}
	}
	return ms
}

// Each part of the ETA from its inputs: brokers at the measured time when
// the method matches and at the default otherwise, the copy at the
// throttle, a poll and the settle time per group plus one per move onto its
// busiest receiver, the finish once.
func TestETAParts(t *testing.T) {
	const mib = 1 << 20
	poll := 2 * time.Second
	measured := engine.Timings{Method: "http", BrokerAddSeconds: 40, BrokerRemoveSeconds: 7}
	for _, tc := range []struct {
		name   string
		groups []engine.Group
		in     engine.ETAInputs
		want   engine.ETA
	}{
		{
			name:   "scale-out before any measurement",
			groups: etaGroups(16*mib, 8*mib),
			in:     engine.ETAInputs{Throttle: 8 * mib, PollInterval: poll, AddBrokers: 2, Method: "http"},
			want: engine.ETA{AddBrokers: 2, Adding: 2 * engine.DefaultBrokerAddTime, Groups: 2, Bytes: 48 * mib, Throttle: 8 * mib,
				Copying: 3 * time.Second, Settling: 2 * (engine.GroupSettleTime + poll/2), Finishing: engine.FinishTime},
		},
		{
			name:   "scale-out measured with the same method",
			groups: etaGroups(16 * mib),
			in:     engine.ETAInputs{Throttle: 4 * mib, AddBrokers: 3, Measured: measured, Method: "http"},
			want: engine.ETA{AddBrokers: 3, Adding: 120 * time.Second, AddMeasured: true, Groups: 1, Bytes: 32 * mib, Throttle: 4 * mib,
				Copying: 4 * time.Second, Settling: engine.GroupSettleTime + engine.DefaultPollInterval/2, Finishing: engine.FinishTime},
		},
		{
			name:   "measured with another method: the defaults",
			groups: nil,
			in:     engine.ETAInputs{Throttle: mib, AddBrokers: 1, RemoveBrokers: 1, Measured: measured, Method: "command"},
			want: engine.ETA{AddBrokers: 1, Adding: engine.DefaultBrokerAddTime, RemoveBrokers: 1, Removing: engine.DefaultBrokerRemoveTime,
				Throttle: mib, Finishing: engine.FinishTime},
		},
		{
			name:   "scale-in measured",
			groups: etaGroups(10*mib, 10*mib, 10*mib),
			in:     engine.ETAInputs{Throttle: 10 * mib, PollInterval: poll, RemoveBrokers: 2, Measured: measured, Method: "http"},
			want: engine.ETA{RemoveBrokers: 2, Removing: 14 * time.Second, RemoveMeasured: true, Groups: 3, Bytes: 60 * mib, Throttle: 10 * mib,
				Copying: 3 * time.Second, Settling: 3 * (engine.GroupSettleTime + poll/2), Finishing: engine.FinishTime},
		},
		{
			name:   "group in progress half copied, finish done",
			groups: etaGroups(20*mib, 10*mib),
			in:     engine.ETAInputs{Throttle: 10 * mib, CopiedInFirstGroup: 20 * mib, SkipFinish: true},
			// Half of the first group's 40 MiB is there: 1s of its 2s left.
			want: engine.ETA{Groups: 2, Bytes: 60 * mib, Throttle: 10 * mib, Copying: 2 * time.Second,
				Settling: 2 * (engine.GroupSettleTime + engine.DefaultPollInterval/2)},
		},
		{
			// 40 empty moves onto broker 4 and 10 onto broker 5: the
			// busiest receiver's 40 moves settle one after another.
			name:   "many empty moves",
			groups: []engine.Group{{Steps: []engine.Step{{Moves: emptyMoves(map[int32]int{4: 40, 5: 10})}}}},
			in:     engine.ETAInputs{Throttle: mib},
			want: engine.ETA{Groups: 1, Throttle: mib,
				Settling: engine.GroupSettleTime + engine.DefaultPollInterval/2 + 40*engine.MoveSettleTime, Finishing: engine.FinishTime},
		},
		{
			name: "nothing to do",
			in:   engine.ETAInputs{Throttle: mib},
			want: engine.ETA{Throttle: mib},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := engine.EstimateGroups(tc.groups, tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			if sum := got.Adding + got.Copying + got.Settling + got.Finishing + got.Removing; got.Total() != sum {
				t.Fatalf("total %s is not the sum of the parts, %s", got.Total(), sum)
			}
		})
	}
}

// The breakdown names every part with its figure, and says when a broker
// time is a default rather than a measurement.
func TestETAString(t *testing.T) {
	const mib = 1 << 20
	e := engine.EstimateGroups(etaGroups(40*mib, 40*mib), engine.ETAInputs{Throttle: 8 * mib, AddBrokers: 3, Method: "http"})
	s := e.String()
	for _, want := range []string{
		"~" + e.Total().Round(time.Second).String() + ": ",
		e.Adding.Round(time.Second).String() + " adding 3 broker(s) (unknown until this scaling method has added a broker: counted at the default of 3s each)",
		"10s copying 160 MiB in 2 group(s) at 8 MiB/s per broker",
		e.Settling.Round(time.Second).String() + " starting and settling the groups",
		e.Finishing.Round(time.Second).String() + " verifying and electing leaders",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("%q does not contain %q", s, want)
		}
	}
	measured := engine.EstimateGroups(nil, engine.ETAInputs{RemoveBrokers: 2, Method: "http",
		Measured: engine.Timings{Method: "http", BrokerRemoveSeconds: 5}}).String()
	if !strings.Contains(measured, "10s removing 2 broker(s)") || strings.Contains(measured, "default") {
		t.Errorf("measured removal reads %q", measured)
	}
}

// A measurement replaces the kept figure of its kind only, and one under
// another method starts afresh.
func TestTimingsWith(t *testing.T) {
	got := engine.Timings{}.With("http", 20*time.Second, 0).With("http", 0, 4*time.Second)
	if got != (engine.Timings{Method: "http", BrokerAddSeconds: 20, BrokerRemoveSeconds: 4}) {
		t.Fatalf("got %+v", got)
	}
	if got := got.With("command", 0, 2*time.Second); got != (engine.Timings{Method: "command", BrokerRemoveSeconds: 2}) {
		t.Fatalf("another method: got %+v", got)
	}
}

func TestHumanBytes(t *testing.T) {
	for in, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 250 << 20: "250 MiB", 3 << 30: "3 GiB"} {
		if got := engine.HumanBytes(in); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

// A copy under live writes: a broker that copies B bytes while its moving
// partitions grow at r bytes/s finishes at B/(throttle-r), and the part
// beyond B/throttle is the catch-up. Writes near the throttle are named.
func TestETACatchesUpOnLiveWrites(t *testing.T) {
	const mib = 1 << 20
	move := func(topic string, from, to int32, bytes int64, rate float64) engine.Move {
		return engine.Move{Topic: topic, OldReplicas: []int32{from}, NewReplicas: []int32{to}, Adding: []int32{to}, Removing: []int32{from},
			Bytes: bytes, GrowthBytesPerSec: rate}
	}
	// Broker 3 receives 24 MiB of partitions written at 2 MiB/s in all;
	// at 8 MiB/s it copies for 24/(8-2) = 4s, not 3s.
	g := engine.Group{Bytes: 32 * mib, BusiestBrokerBytes: 24 * mib, Steps: []engine.Step{{Moves: []engine.Move{
		move("a", 1, 3, 16*mib, mib), move("b", 2, 3, 8*mib, mib), move("c", 2, 4, 8*mib, 0),
	}}}}
	e := engine.EstimateGroups([]engine.Group{g}, engine.ETAInputs{Throttle: 8 * mib})
	if e.Copying != 3*time.Second || e.CatchingUp != time.Second {
		t.Fatalf("copying %s, catching up %s; want 3s and 1s", e.Copying, e.CatchingUp)
	}
	if e.GrowthBytesPerSec != 2*mib || len(e.Saturated) != 0 {
		t.Fatalf("growth %v B/s, saturated %v; want 2 MiB/s and none", e.GrowthBytesPerSec, e.Saturated)
	}
	if s := e.String(); !strings.Contains(s, "1s catching up on 2 MiB/s written to the moving partitions") {
		t.Fatalf("the breakdown does not name the catch-up: %s", s)
	}

	// Half of the group copied already: half the bytes are left, at the
	// same rate of writes.
	e = engine.EstimateGroups([]engine.Group{g}, engine.ETAInputs{Throttle: 8 * mib, CopiedInFirstGroup: 16 * mib})
	if e.CatchingUp != 500*time.Millisecond {
		t.Fatalf("half copied: catching up %s, want 500ms", e.CatchingUp)
	}

	// Writes at 95% of the throttle into broker 3.
	hot := engine.Group{Bytes: 8 * mib, BusiestBrokerBytes: 8 * mib, Steps: []engine.Step{{Moves: []engine.Move{
		move("a", 1, 3, 8*mib, 7.6*mib),
	}}}}
	e = engine.EstimateGroups([]engine.Group{hot}, engine.ETAInputs{Throttle: 8 * mib})
	if len(e.Saturated) != 2 || e.Saturated[0] != 1 || e.Saturated[1] != 3 {
		t.Fatalf("saturated %v, want [1 3] (the sender and the receiver)", e.Saturated)
	}
	if s := e.String(); !strings.Contains(s, "raise the throttle") {
		t.Fatalf("the breakdown does not warn of writes at the throttle: %s", s)
	}

	// No growth measured: no catch-up, the copy as before.
	e = engine.EstimateGroups(etaGroups(24*mib), engine.ETAInputs{Throttle: 8 * mib})
	if e.CatchingUp != 0 || strings.Contains(e.String(), "catching up") {
		t.Fatalf("no growth, yet catching up %s: %s", e.CatchingUp, e)
	}
}

// SetGrowth reaches every move, and MovingPartitions lists each moving
// partition once with its size (a move's bytes over its new replicas).
func TestPlanGrowthPerMovingPartition(t *testing.T) {
	p := &engine.Plan{Groups: []engine.Group{
		{Steps: []engine.Step{{Moves: []engine.Move{{Topic: "a", Partition: 0, Adding: []int32{4, 5}, Bytes: 20}}}}},
		{Steps: []engine.Step{{Moves: []engine.Move{{Topic: "a", Partition: 1, Adding: []int32{4}, Bytes: 7}, {Topic: "b", Partition: 0, Bytes: 0}}}}},
	}}
	got := p.MovingPartitions()
	want := []engine.PartitionSize{{Topic: "a", Partition: 0, SizeBytes: 10}, {Topic: "a", Partition: 1, SizeBytes: 7}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("moving partitions %v, want %v", got, want)
	}
	// A copy with its own moves takes the rates; p keeps none.
	cp := p.WithOwnMoves()
	cp.SetGrowth(map[string]map[int32]float64{"a": {0: 1}})
	if p.Moves()[0].GrowthBytesPerSec != 0 || cp.Moves()[0].GrowthBytesPerSec != 1 {
		t.Fatalf("growth set on the copy reached the original: %v / %v", p.Moves()[0].GrowthBytesPerSec, cp.Moves()[0].GrowthBytesPerSec)
	}
	p.SetGrowth(map[string]map[int32]float64{"a": {1: 3.5}})
	ms := p.Moves()
	if ms[0].GrowthBytesPerSec != 0 || ms[1].GrowthBytesPerSec != 3.5 || ms[2].GrowthBytesPerSec != 0 {
		t.Fatalf("growth per move %v %v %v, want 0 3.5 0", ms[0].GrowthBytesPerSec, ms[1].GrowthBytesPerSec, ms[2].GrowthBytesPerSec)
	}
}
