package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/report"
)

// shownChart is one before/after chart of the page as the browser laid it
// out: its table's rows, and per broker label of its x axis the bars drawn
// above it.
type shownChart struct {
	Rows []struct {
		Broker int32   `json:"broker"`
		Change string  `json:"change"`
		Values []int64 `json:"values"` // before, after
	} `json:"rows"`
	Groups []struct {
		Label  string    `json:"label"`
		Before []float64 `json:"before"` // heights of the bars, px
		After  []float64 `json:"after"`
	} `json:"groups"`
	// BarsOnAxis counts the bars standing on the x axis: the legend's
	// swatches are not.
	BarsOnAxis int `json:"barsOnAxis"`
}

// readBrokersJS reads the three load charts. A bar belongs to the label
// whose centre is nearest its own, within half the labels' spacing.
const readBrokersJS = `(() => {
  const out = {};
  for (const id of ["replicas", "leaders", "bytes"]) {
    const fig = document.getElementById(id);
    const rows = [...fig.querySelectorAll("tbody tr")].map(tr => ({
      broker: +tr.dataset.broker, change: tr.children[2].textContent,
      values: [...tr.querySelectorAll("td[data-v]")].map(td => +td.dataset.v)}));
    const svg = fig.querySelector("svg");
    const paths = [...svg.querySelectorAll("path")];
    const bars = fill => paths.filter(p => getComputedStyle(p).fill === fill).map(p => p.getBoundingClientRect());
    const before = bars("rgb(158, 179, 200)"), after = bars("rgb(31, 95, 158)");
    const base = Math.max(...before.concat(after).map(r => r.bottom));
    const onAxis = rs => rs.filter(r => Math.abs(r.bottom - base) < 1.5);
    const labels = [...svg.querySelectorAll("text")].filter(t => /^[+−]?\d+ \(/.test(t.textContent));
    const centre = r => (r.left + r.right) / 2;
    const xs = labels.map(l => centre(l.getBoundingClientRect()));
    const half = xs.length > 1 ? Math.abs(xs[1] - xs[0]) / 2 : 1e9;
    const of = (rs, x) => onAxis(rs).filter(r => Math.abs(centre(r) - x) < half).map(r => r.height);
    out[id] = {rows, barsOnAxis: onAxis(before).length + onAxis(after).length,
      groups: labels.map((l, i) => ({label: l.textContent, before: of(before, xs[i]), after: of(after, xs[i])}))};
  }
  return out;
})()`

func readBrokers(t *testing.T, tab context.Context) map[string]shownChart {
	t.Helper()
	shown, err := chromedp.Run(tab, chromedp.Evaluate[map[string]shownChart](readBrokersJS))
	if err != nil {
		t.Fatalf("reading the page's broker charts: %v", err)
	}
	return shown
}

// checkBarGroups checks that each load chart has one group of a before
// and an after bar per broker, labelled with the broker, heights in
// proportion to the table's numbers, and the table those of --output json.
func checkBarGroups(t *testing.T, page string, shown map[string]shownChart, brokers []report.Broker) {
	t.Helper()
	for _, id := range []string{"replicas", "leaders", "bytes"} {
		ch := shown[id]
		if len(ch.Groups) != len(brokers) || len(ch.Rows) != len(brokers) || ch.BarsOnAxis != 2*len(brokers) {
			t.Fatalf("%s page, chart %s: %d labelled groups, %d rows, %d bars; want %d, %d, %d", page, id,
				len(ch.Groups), len(ch.Rows), ch.BarsOnAxis, len(brokers), len(brokers), 2*len(brokers))
		}
		var scale float64 // px per unit, from the tallest bar
		var top int64
		for i, b := range brokers {
			g, row := ch.Groups[i], ch.Rows[i]
			if want := brokerLabelOf(b); g.Label != want || len(g.Before) != 1 || len(g.After) != 1 {
				t.Fatalf("%s page, chart %s, group %d: label %q with bars %v / %v; want %q with one before and one after", page, id, i, g.Label, g.Before, g.After, want)
			}
			want := loadOf(id, b)
			if row.Broker != b.ID || len(row.Values) != 2 || row.Values[0] != want[0] || row.Values[1] != want[1] {
				t.Errorf("%s page, chart %s: row %+v; want broker %d with %v", page, id, row, b.ID, want)
			}
			if (b.Joins && row.Change != "joins") || (!b.Joins && !b.Leaves && row.Change != "") {
				t.Errorf("%s page, chart %s: broker %d marked %q", page, id, b.ID, row.Change)
			}
			for k, h := range []float64{g.Before[0], g.After[0]} {
				if want[k] > top {
					top, scale = want[k], h/float64(want[k])
				}
			}
		}
		for i, b := range brokers {
			want := loadOf(id, b)
			for k, h := range []float64{ch.Groups[i].Before[0], ch.Groups[i].After[0]} {
				if !near(h, float64(want[k])*scale, 1.5) {
					t.Errorf("%s page, chart %s, broker %d: bar of %.1f px for %d; want %.1f px", page, id, b.ID, h, want[k], float64(want[k])*scale)
				}
			}
		}
	}
}

func brokerLabelOf(b report.Broker) string {
	s := ""
	switch {
	case b.Joins:
		s = "+"
	case b.Leaves:
		s = "−"
	}
	return fmt.Sprintf("%s%d (%s)", s, b.ID, b.Rack)
}

// loadOf is the before and after numbers chart id shows of broker b.
func loadOf(id string, b report.Broker) [2]int64 {
	switch id {
	case "replicas":
		return [2]int64{int64(b.Before.Replicas), int64(b.After.Replicas)}
	case "leaders":
		return [2]int64{int64(b.Before.PreferredLeaders), int64(b.After.PreferredLeaders)}
	}
	return [2]int64{b.Before.Bytes, b.After.Bytes}
}

// checkAfterIsCluster checks the "after" column of the page against the
// cluster read after the apply: replicas and preferred leaders exactly,
// bytes up to what the operation log wrote meanwhile.
func checkAfterIsCluster(t *testing.T, shown map[string]shownChart, after map[int32]brokerLoad) {
	t.Helper()
	for i, row := range shown["replicas"].Rows {
		got := after[row.Broker]
		leaders, disk := shown["leaders"].Rows[i], shown["bytes"].Rows[i]
		if row.Values[1] != int64(got.replicas) || leaders.Values[1] != int64(got.leaders) {
			t.Errorf("broker %d: the page shows %d replicas, %d preferred leaders after; the cluster has %d, %d",
				row.Broker, row.Values[1], leaders.Values[1], got.replicas, got.leaders)
		}
		if d := got.bytes - disk.Values[1]; d < 0 || d > got.internal {
			t.Errorf("broker %d: the page shows %d bytes after; the cluster holds %d (%d of them in internal topics)",
				row.Broker, disk.Values[1], got.bytes, got.internal)
		}
		t.Logf("broker %d after: %d replicas, %d preferred leaders, %d bytes (cluster: %d, %d, %d)", row.Broker,
			row.Values[1], leaders.Values[1], disk.Values[1], got.replicas, got.leaders, got.bytes)
	}
}

// shownTimeline is the timeline's tables as the page shows them.
type shownTimeline struct {
	Phases    []string    `json:"phases"`
	Samples   [][]float64 `json:"samples"` // seconds, received per receiver…, throttle, ETA
	Columns   []int32     `json:"columns"`
	Receivers []struct {
		Broker int32     `json:"broker"`
		Values []float64 `json:"values"` // planned, received, seconds, average, peak, throttle
	} `json:"receivers"`
	ActualEnd float64 `json:"actualEnd"`
	Lines     int     `json:"lines"`
}

const readTimelineJS = `(() => {
  const v = td => +td.dataset.v;
  return {
    phases: [...document.querySelectorAll("#phases tbody tr")].map(tr => tr.dataset.phase),
    columns: [...document.querySelectorAll("#received thead th")].filter(th => th.textContent.startsWith("broker ")).map(th => +th.textContent.slice(7)),
    samples: [...document.querySelectorAll("#received tbody tr")].map(tr => [...tr.querySelectorAll("td[data-v]")].map(v)),
    receivers: [...document.querySelectorAll("#rates tbody tr")].map(tr => ({broker: +tr.dataset.broker, values: [...tr.querySelectorAll("td[data-v]")].map(v)})),
    actualEnd: +document.getElementById("actual-end").dataset.v,
    lines: document.querySelectorAll("#rates svg path").length,
  };
})()`

// checkTimeline checks the page's timeline against the operation record:
// its phases, every sample, and each receiving broker's copy under its
// throttle.
func checkTimeline(t *testing.T, tab context.Context, op *executor.Operation) {
	t.Helper()
	tl, err := chromedp.Run(tab, chromedp.Evaluate[shownTimeline](readTimelineJS))
	if err != nil {
		t.Fatalf("reading the page's timeline: %v", err)
	}
	var phases []string
	for _, p := range op.Phases {
		phases = append(phases, string(p.Phase))
	}
	if len(tl.Phases) != len(phases) || len(tl.Samples) != len(op.Samples) || len(op.Samples) < 3 {
		t.Fatalf("the page shows phases %v and %d samples; the record has %v and %d (at least 3 wanted)", tl.Phases, len(tl.Samples), phases, len(op.Samples))
	}
	for i, s := range op.Samples {
		row := tl.Samples[i]
		if len(row) != 3+len(tl.Columns) || !near(row[0], s.At.Sub(op.StartedAt).Seconds(), 1e-6) ||
			row[len(row)-2] != float64(s.Throttle) || !near(row[len(row)-1], s.ETA.Seconds(), 1e-6) {
			t.Errorf("sample %d: the page shows %v; the record has %+v", i, row, s)
		}
		for k, b := range tl.Columns {
			if row[1+k] != float64(s.Received[b]) {
				t.Errorf("sample %d, broker %d: the page shows %.0f bytes received; the record %d", i, b, row[1+k], s.Received[b])
			}
		}
	}
	traffic, last := op.Plan.Traffic(), op.Samples[len(op.Samples)-1]
	if len(tl.Receivers) == 0 {
		t.Fatal("the page shows no receiving broker")
	}
	for _, r := range tl.Receivers {
		planned, received, secs, avg, peak, thr := r.Values[0], r.Values[1], r.Values[2], r.Values[3], r.Values[4], r.Values[5]
		if planned != float64(traffic[r.Broker].BytesIn) || received != float64(last.Received[r.Broker]) || thr != float64(op.ThrottleRate) {
			t.Errorf("broker %d: the page shows planned %.0f, received %.0f, throttle %.0f; the record %d, %d, %d", r.Broker,
				planned, received, thr, traffic[r.Broker].BytesIn, last.Received[r.Broker], op.ThrottleRate)
		}
		// Kafka's quota is enforced over a window of seconds: the average
		// stays under the throttle, a moment between samples may not.
		if avg <= 0 || avg > 1.1*thr {
			t.Errorf("broker %d: received %.0f bytes in %.1fs, %.0f B/s on average; want under the throttle of %.0f B/s", r.Broker, received, secs, avg, thr)
		}
		t.Logf("broker %d received %.0f of %.0f bytes in %.1fs: %.0f B/s on average, %.0f at peak, throttle %.0f B/s", r.Broker, received, planned, secs, avg, peak, thr)
	}
	if want := op.CompletedAt.Sub(op.StartedAt).Seconds(); !near(tl.ActualEnd, want, 1e-6) {
		t.Errorf("actual end shown at %.3fs; the record ends %.3fs after its start", tl.ActualEnd, want)
	}
}
