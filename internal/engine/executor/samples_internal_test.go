package executor

import (
	"testing"
	"time"
)

// Samples of a rebalance that receives on hundreds of brokers are thinned
// by their brokers too, so the record stays bounded.
func TestSamplesBoundedByBrokers(t *testing.T) {
	var op Operation
	start := time.Unix(0, 0)
	for i := range 1000 {
		rec := make(map[int32]int64, 500)
		for b := range int32(500) {
			rec[b] = int64(i)
		}
		op.addSample(ProgressSample{At: start.Add(time.Duration(i) * time.Second), Received: rec})
	}
	if n := sampleEntries(op.Samples); n > maxSampleEntries {
		t.Fatalf("%d broker entries in %d samples; want at most %d", n, len(op.Samples), maxSampleEntries)
	}
	if len(op.Samples) < 10 || !op.Samples[0].At.Equal(start) || !op.Samples[len(op.Samples)-1].At.Equal(start.Add(999*time.Second)) {
		t.Fatalf("%d samples from %s to %s; want the first and the newest kept", len(op.Samples), op.Samples[0].At, op.Samples[len(op.Samples)-1].At)
	}
}

// projectETA's cases beside the steady copy (TestReEstimateFollowsThePaceSeen):
// too little behind to tell, a throttle raised halfway, and a stopped
// apply between two samples.
func TestProjectETA(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	sample := func(s int, copyLeft time.Duration, throttle int64) ProgressSample {
		// One second of verification after the copy.
		return ProgressSample{At: at(s), Phase: PhaseReassign, Copy: copyLeft, ETA: copyLeft + time.Second, Throttle: throttle}
	}
	const mib = 1 << 20
	cases := []struct {
		name   string
		before []ProgressSample
		cur    ProgressSample
		want   time.Duration
	}{{
		name:   "under a twentieth of the copy behind: no re-estimate",
		before: []ProgressSample{sample(0, 100*time.Second, 8*mib)},
		cur:    sample(10, 96*time.Second, 8*mib),
		want:   0,
	}, {
		// 8 s of the estimate done in 10 s: 2 s late, within three 1 s
		// polls, is the estimate's steps and the group's start, not pace.
		name:   "a copy a moment behind its estimate is on pace",
		before: []ProgressSample{sample(0, 100*time.Second, 8*mib), sample(5, 96*time.Second, 8*mib)},
		cur:    sample(10, 92*time.Second, 8*mib),
		want:   93 * time.Second,
	}, {
		// 10 s of the estimate done in 20 s, less the 3 s dead zone of
		// three 1 s polls: a pace of 10/17.
		name:   "half the pace: the copy left at the pace kept, the verification as it was",
		before: []ProgressSample{sample(0, 100*time.Second, 8*mib), sample(10, 95*time.Second, 8*mib)},
		cur:    sample(20, 90*time.Second, 8*mib),
		want:   (90*17/10 + 1) * time.Second,
	}, {
		// At 8 MiB/s the copy left fell 5 s per 10 s: half the pace.
		// Doubling the throttle halves the copy left (90 s -> 45 s), and
		// the pair across the change counts 5 s done at the old rate; then
		// 5 s per 10 s again, at the new one: 15 s in 30 s, 27 s less the
		// dead zone.
		name:   "a throttle raised halfway keeps the pace",
		before: []ProgressSample{sample(0, 100*time.Second, 8*mib), sample(10, 95*time.Second, 8*mib), sample(20, 45*time.Second, 16*mib)},
		cur:    sample(30, 40*time.Second, 16*mib),
		want:   (40*27/15 + 1) * time.Second,
	}, {
		// The copy went on while no apply ran; that pair is left out.
		name:   "a stopped apply between two samples says nothing of the pace",
		before: []ProgressSample{sample(0, 100*time.Second, 8*mib), sample(10, 95*time.Second, 8*mib), sample(3600, 40*time.Second, 8*mib)},
		cur:    sample(3610, 35*time.Second, 8*mib),
		want:   60500 * time.Millisecond, // 35 s at 10/17, and 1 s
	}, {
		// The last move has not ended for 6 s: its time counts as spent.
		name:   "no progress seen since the last sample that showed some",
		before: []ProgressSample{sample(0, 100*time.Second, 8*mib), sample(10, 95*time.Second, 8*mib), sample(20, 90*time.Second, 8*mib), sample(23, 90*time.Second, 8*mib)},
		cur:    sample(26, 90*time.Second, 8*mib),
		want:   (90*17/10 - 6 + 1) * time.Second,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := projectETA(c.before, c.cur, 10*time.Second, time.Second)
			if d := got - c.want; d > time.Millisecond || d < -time.Millisecond {
				t.Errorf("re-estimate %s, want %s", got, c.want)
			}
		})
	}
}
