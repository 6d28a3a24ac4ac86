package engine_test

import (
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

// Each part of the ETA from its inputs: brokers at the measured time when
// the method matches and at the default otherwise, the copy at the
// throttle, a poll and the settle time per group, the finish once.
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
			name: "nothing to do",
			in:   engine.ETAInputs{Throttle: mib},
			want: engine.ETA{Throttle: mib},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := engine.EstimateGroups(tc.groups, tc.in)
			if got != tc.want {
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
		e.Adding.Round(time.Second).String() + " adding 3 broker(s) (default, not yet measured)",
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
