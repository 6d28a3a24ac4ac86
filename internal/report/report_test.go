package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/report"
)

// syntheticCluster is brokers brokers over three racks holding partitions
// partitions of 3 replicas, 10 to 100 MiB each.
func syntheticCluster(brokers, partitions int) engine.Cluster {
	var c engine.Cluster
	racks := []string{"a", "b", "c"}
	for i := range brokers {
		c.Brokers = append(c.Brokers, engine.Broker{ID: int32(i + 1), Rack: racks[i%3], Alive: true})
	}
	for p := range partitions {
		var rs []int32
		for k := range 3 {
			rs = append(rs, int32((p+k)%brokers+1))
		}
		c.Partitions = append(c.Partitions, engine.Partition{Topic: fmt.Sprintf("t%d", p/100), Partition: int32(p % 100),
			Replicas: rs, SizeBytes: int64(10+p%91) << 20})
	}
	return c
}

func previewReport(t testing.TB, brokers, partitions, target int) report.Data {
	t.Helper()
	c := syntheticCluster(brokers, partitions)
	pv, err := executor.PreviewScale(c, target, nil, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	cost := executor.Cost{Preview: pv, Moves: pv.Plan.ReplicaMoves, Bytes: pv.Plan.TotalBytes, Leaving: pv.RemoveBrokers,
		ETA: pv.ETA(nil, "", 0, engine.DefaultThrottleBytesPerSec)}
	return report.FromPreview("synthetic", target, cost, time.Unix(0, 0))
}

// A 5,000-partition plan's page stays under 2 MB, with no reference to
// anything outside it.
func TestPlanPageOf5000PartitionsIsSmallAndSelfContained(t *testing.T) {
	d := previewReport(t, 12, 5000, 15)
	var b bytes.Buffer
	if err := report.Render(&b, d); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	t.Logf("5,000 partitions, 12 -> 15 brokers: %d moves in %d groups, page %d bytes", d.Moves, d.Groups, b.Len())
	if b.Len() >= 2<<20 {
		t.Fatalf("page of %d bytes; want under 2 MB", b.Len())
	}
	for _, ref := range []string{"src=", "href=", "url(", "@import", "<script", "<link"} {
		if strings.Contains(page, ref) {
			t.Errorf("the page holds %q: it must need nothing outside itself", ref)
		}
	}
	if n := strings.Count(page, "<svg"); n < 5 {
		t.Errorf("%d charts; want the three loads, the bytes received, the pairs and the groups", n)
	}
	for _, br := range d.Brokers {
		if !strings.Contains(page, fmt.Sprintf(`<tr data-broker="%d"`, br.ID)) {
			t.Errorf("no table row for broker %d", br.ID)
		}
	}
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("--output json: %d bytes", len(js))
}

// An operation's page draws its timeline from the record: the last
// sample's bytes per receiving broker, the rates between samples, the
// ETA against the actual end.
func TestOperationTimelineFollowsTheRecord(t *testing.T) {
	c := syntheticCluster(3, 12)
	pv, err := executor.PreviewScale(c, 4, nil, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	op := &executor.Operation{ID: "op-1", Key: "cluster/x", Kind: executor.KindScaleOut, Phase: executor.PhaseCompleted,
		Plan: pv.Plan, TargetBrokerCount: 4, ThrottleRate: 10 << 20, StartedAt: start, CompletedAt: start.Add(40 * time.Second),
		Phases: []executor.PhaseStart{{Phase: executor.PhaseAddBrokers, At: start}, {Phase: executor.PhaseReassign, At: start.Add(10 * time.Second)},
			{Phase: executor.PhaseFinish, At: start.Add(35 * time.Second)}, {Phase: executor.PhaseCompleted, At: start.Add(40 * time.Second)}}}
	in := pv.Plan.Traffic()[4].BytesIn
	for i := range 6 {
		op.Samples = append(op.Samples, executor.ProgressSample{At: start.Add(time.Duration(10+5*i) * time.Second), Phase: executor.PhaseReassign,
			Received: map[int32]int64{4: in * int64(i) / 5}, Throttle: 10 << 20, ETA: time.Duration(30-5*i) * time.Second})
	}
	// From the third sample on, the estimate made from the copy's pace.
	for i := 2; i < 6; i++ {
		op.Samples[i].Projected = time.Duration(27-5*i) * time.Second
	}
	d := report.FromOperation(op, start.Add(time.Hour))
	tl := d.Timeline
	if tl == nil || len(tl.Receivers) != 1 || tl.Receivers[0].Broker != 4 || tl.Receivers[0].Bytes != in {
		t.Fatalf("receivers %+v; want broker 4 with %d bytes", tl.Receivers, in)
	}
	r := tl.Receivers[0]
	if want := float64(in) / 25; r.Seconds != 25 || math.Abs(r.AverageRate-want) > 1 || math.Abs(r.PeakRate-float64(in/5)/5) > 1 {
		t.Fatalf("receiver %+v; want 25s at %.0f B/s, peak %.0f", r, want, float64(in/5)/5)
	}
	if s := tl.Samples[1]; s.PredictedEndSeconds != 40 || math.Abs(s.Rates[4]-float64(in/5)/5) > 1 {
		t.Fatalf("sample %+v", s)
	}
	if s, s2 := tl.Samples[1], tl.Samples[2]; s.ReEstimatedEndSeconds != 0 || s2.ReEstimatedEndSeconds != 37 {
		t.Fatalf("re-estimated ends %v and %v; want none, then 37", s.ReEstimatedEndSeconds, s2.ReEstimatedEndSeconds)
	}
	if p := tl.Phases[1]; p.Phase != "reassign" || p.Seconds != 25 {
		t.Fatalf("phase %+v; want reassign for 25s", p)
	}
	var b bytes.Buffer
	if err := report.Render(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="received"`, `id="rates"`, `id="estimate"`, `id="actual-end" data-v="40"`, "re-estimated end, from the pace seen", `<td data-v="37">37.0</td>`,
		fmt.Sprintf(`<td data-v="%d">`, in)} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

func BenchmarkRenderPlanOf5000Partitions(b *testing.B) {
	d := previewReport(b, 12, 5000, 15)
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if err := report.Render(&buf, d); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
}

// An operation still adding its brokers has no plan yet: its page shows
// the phases and the estimate, and no broker chart.
func TestPageOfAnOperationWithoutPlan(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	op := &executor.Operation{ID: "op-2", Key: "cluster/x", Kind: executor.KindScaleOut, Phase: executor.PhaseAddBrokers,
		TargetBrokerCount: 5, ThrottleRate: 10 << 20, StartedAt: start,
		Phases:  []executor.PhaseStart{{Phase: executor.PhaseAddBrokers, At: start}},
		Samples: []executor.ProgressSample{{At: start, Phase: executor.PhaseAddBrokers, Throttle: 10 << 20, ETA: time.Minute}}}
	var b bytes.Buffer
	if err := report.Render(&b, report.FromOperation(op, start.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	if page := b.String(); strings.Contains(page, `id="replicas"`) || !strings.Contains(page, `data-phase="add-brokers"`) || !strings.Contains(page, `id="estimate"`) {
		t.Fatalf("page of an operation without plan:\n%s", page)
	}
}

// A plan that moves partitions of a tiered topic copies only their local
// logs: the page and its JSON say how much stays in remote storage, from
// the plan the engine made.
func TestPlanPageSaysWhatStaysInRemoteStorage(t *testing.T) {
	c := syntheticCluster(3, 30)
	for i := range c.Partitions {
		p := &c.Partitions[i]
		p.CopyBytes, p.RemoteBytes = p.SizeBytes/10, p.SizeBytes-p.SizeBytes/10
	}
	pv, err := executor.PreviewScale(c, 5, nil, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if pv.Plan.RemoteBytes <= 0 {
		t.Fatalf("the plan of a tiered topic keeps %d bytes in remote storage; want some", pv.Plan.RemoteBytes)
	}
	cost := executor.Cost{Preview: pv, Moves: pv.Plan.ReplicaMoves, Bytes: pv.Plan.TotalBytes, RemoteBytes: pv.Plan.RemoteBytes,
		Leaving: pv.RemoveBrokers, ETA: pv.ETA(nil, "", 0, engine.DefaultThrottleBytesPerSec)}
	d := report.FromPreview("tiered", 5, cost, time.Unix(0, 0))
	if d.RemoteBytes != pv.Plan.RemoteBytes || d.Bytes != pv.Plan.TotalBytes {
		t.Errorf("report bytes %d, remote %d; want the plan's %d and %d", d.Bytes, d.RemoteBytes, pv.Plan.TotalBytes, pv.Plan.RemoteBytes)
	}
	var b bytes.Buffer
	if err := report.Render(&b, d); err != nil {
		t.Fatal(err)
	}
	if want := engine.HumanBytes(d.RemoteBytes) + " of the tiered topics' partitions moved stay in remote storage"; !strings.Contains(b.String(), want) {
		t.Errorf("the page does not say %q", want)
	}
}
