package executor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

// The live re-estimate on real copies. testdata/reestimate holds the
// progress samples of real applies on local Kafka clusters (make
// bench-eta, which keeps every run's record), trimmed to what projectETA
// reads, with when the apply ended. Replaying projectETA over them says,
// in a moment, how far the re-estimate at a tenth of the bytes done is
// from the time that was really left, for the code as it is now.

// recordedCopy is one apply's samples, as testdata keeps them.
type recordedCopy struct {
	Scenario   string        `json:"scenario"`
	End        time.Time     `json:"end"`
	TotalBytes int64         `json:"total_bytes"`
	Interval   time.Duration `json:"sample_interval"`
	// Poll is the executor's poll interval; make bench-eta keeps the
	// default.
	Poll    time.Duration    `json:"poll_interval"`
	Samples []ProgressSample `json:"samples"`
}

// reEstimateOff is, for the first sample of c's copy with a tenth of its
// bytes done, what projectETA would have shown as left then (Shown), against
// the time really left, in percent; ok is false when the copy had no such
// sample.
func reEstimateOff(c recordedCopy) (off float64, at ProgressSample, ok bool) {
	for i, s := range c.Samples {
		if s.Phase != PhaseReassign || s.Done*10 < c.TotalBytes {
			continue
		}
		s.Projected = projectETA(c.Samples[:i], s, c.Interval, c.Poll)
		return 100 * (s.Shown().Seconds()/c.End.Sub(s.At).Seconds() - 1), s, true
	}
	return 0, ProgressSample{}, false
}

// What is shown as left at a tenth done is, per scenario, within 15 % of
// the time that was really left in the median run, as make bench-eta
// judges it, and within 25 % in every run, the bound the plan's own
// estimate is held to: on copies of 10 to 40 s whose estimate moves in
// steps of a 1 s poll, one step is up to 10 %, and a scale-in's default
// time to remove a broker (2 s) is over a local broker's by a second.
func TestReEstimateOnRecordedRuns(t *testing.T) {
	if dir := os.Getenv("KAFKASCALE_BENCH_SAMPLES"); dir != "" {
		trimRecordedRuns(t, dir)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "reestimate", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded runs in testdata/reestimate: %v", err)
	}
	offs := map[string][]float64{}
	for _, f := range files {
		var c recordedCopy
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &c)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		off, s, ok := reEstimateOff(c)
		if !ok {
			t.Errorf("%s (%s): no sample at a tenth done", filepath.Base(f), c.Scenario)
			continue
		}
		left := c.End.Sub(s.At)
		t.Logf("%-56s shown %5.1fs, really left %5.1fs, off %+5.1f%% (at %d%% done)", c.Scenario, s.Shown().Seconds(), left.Seconds(), off, 100*s.Done/c.TotalBytes)
		if off > 25 || off < -25 {
			t.Errorf("%s (%s): shown at a tenth done %s, really left %s: %+.0f%%, want within 25%%",
				filepath.Base(f), c.Scenario, s.Shown().Round(100*time.Millisecond), left.Round(100*time.Millisecond), off)
		}
		offs[c.Scenario] = append(offs[c.Scenario], off)
	}
	for scenario, os := range offs {
		slices.Sort(os)
		m := os[len(os)/2]
		if len(os)%2 == 0 {
			m = (os[len(os)/2-1] + os[len(os)/2]) / 2
		}
		t.Logf("%-56s median %+5.1f%% over %d runs", scenario, m, len(os))
		if m > 15 || m < -15 {
			t.Errorf("%s: median off %+.0f%% over %d runs (%.0f%%), want within 15%%", scenario, m, len(os), os)
		}
	}
}

// trimRecordedRuns writes, for each run make bench-eta kept in dir, what
// projectETA reads into testdata/reestimate.
func trimRecordedRuns(t *testing.T, dir string) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		var run struct {
			Scenario  string     `json:"scenario"`
			End       time.Time  `json:"end"`
			Operation *Operation `json:"operation"`
		}
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &run)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		op := run.Operation
		if op == nil || op.Plan == nil || op.Plan.TotalBytes == 0 {
			continue
		}
		c := recordedCopy{Scenario: run.Scenario, End: run.End, TotalBytes: op.Plan.TotalBytes, Interval: time.Second, Poll: time.Second}
		for _, s := range op.Samples {
			s.Received = nil
			c.Samples = append(c.Samples, s)
		}
		out, err := json.MarshalIndent(c, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		// Letters, digits, '-' and '.' only: a Go module's file names.
		name := strings.Map(func(r rune) rune {
			if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '.') {
				return r
			}
			return '_'
		}, filepath.Base(f))
		if err := os.WriteFile(filepath.Join("testdata", "reestimate", name), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
