package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

//go:embed page.html.tmpl
var pageSource string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"bytes": engine.HumanBytes,
	"rate":  func(r float64) string { return engine.HumanBytes(int64(math.Round(r))) + "/s" },
	"secs": func(s float64) string {
		return (time.Duration(s * float64(time.Second))).Round(100 * time.Millisecond).String()
	},
	"since":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"label":   brokerLabel,
	"from":    func(b int32) string { return fromLabel(b) },
	"f1":      func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"f0":      func(f float64) string { return fmt.Sprintf("%.0f", f) },
	"at":      func(m map[int32]int64, b int32) int64 { return m[b] },
	"f1s":     func(n int64) float64 { return float64(n) },
	"endSecs": func(t *Timeline) float64 { return t.EndedAt.Sub(t.StartedAt).Seconds() },
	"dict":    dict,
}).Parse(pageSource))

// dict makes a map of its key, value pairs, for a template's argument.
func dict(kv ...any) map[string]any {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	return m
}

// view is Data with its charts drawn.
type view struct {
	Data
	Title                     string
	Replicas, Leaders, Disk   template.HTML
	Incoming, PairsChart      template.HTML
	GroupsChart               template.HTML
	Received, Rates, ETAChart template.HTML
	// ReceiverIDs are the receiving brokers, the samples table's columns.
	ReceiverIDs []int32
	// Refresh is how often the page reloads itself, in seconds; 0 never.
	Refresh int
}

// Render writes d as one self-contained HTML page: charts inlined as SVG,
// styles inlined, nothing fetched.
func Render(w io.Writer, d Data) error { return RenderRefreshing(w, d, 0) }

// RenderRefreshing is Render of a page that reloads itself every every
// (none when zero): the page `kafkascale watch --serve` serves of a
// running operation. The reload is the browser's own (meta refresh): the
// page still carries no script.
func RenderRefreshing(w io.Writer, d Data, every time.Duration) error {
	v := view{Data: d, Title: title(d), Refresh: int(every.Round(time.Second).Seconds())}
	if err := v.drawBrokers(); err != nil {
		return err
	}
	if err := v.drawMoves(); err != nil {
		return err
	}
	if err := v.drawTimeline(); err != nil {
		return err
	}
	return page.Execute(w, v)
}

func title(d Data) string {
	if d.Operation != nil {
		return fmt.Sprintf("kafkascale: operation %s (%s, %s)", d.Operation.ID, d.Operation.Kind, d.Operation.Phase)
	}
	return fmt.Sprintf("kafkascale: plan to %d brokers", d.TargetBrokerCount)
}

// brokerLabel names a broker with its rack, and marks one that joins (+)
// or leaves (−).
func brokerLabel(b Broker) string {
	s := fmt.Sprintf("%d (%s)", b.ID, b.Rack)
	if b.Rack == "" {
		s = fmt.Sprintf("%d", b.ID)
	}
	switch {
	case b.Joins:
		return "+" + s
	case b.Leaves:
		return "−" + s
	}
	return s
}

func fromLabel(b int32) string {
	if b < 0 {
		return "new replica"
	}
	return fmt.Sprintf("%d", b)
}

const mib = 1 << 20

func (v *view) drawBrokers() error {
	if len(v.Brokers) == 0 {
		return nil
	}
	labels := make([]string, len(v.Brokers))
	var rb, ra, lb, la, db, da []float64
	for i, b := range v.Brokers {
		labels[i] = brokerLabel(b)
		rb, ra = append(rb, float64(b.Before.Replicas)), append(ra, float64(b.After.Replicas))
		lb, la = append(lb, float64(b.Before.PreferredLeaders)), append(la, float64(b.After.PreferredLeaders))
		db, da = append(db, float64(b.Before.Bytes)/mib), append(da, float64(b.After.Bytes)/mib)
	}
	var err error
	if v.Replicas, err = beforeAfter("Replicas per broker", "replicas", labels, rb, ra); err != nil {
		return err
	}
	if v.Leaders, err = beforeAfter("Preferred leaders per broker", "preferred leaders", labels, lb, la); err != nil {
		return err
	}
	v.Disk, err = beforeAfter("Replica bytes per broker", "MiB", labels, db, da)
	return err
}

func (v *view) drawMoves() error {
	var labels []string
	var in []float64
	for _, b := range v.Brokers {
		if b.BytesIn > 0 {
			labels, in = append(labels, brokerLabel(b)), append(in, float64(b.BytesIn)/mib)
		}
	}
	var err error
	if len(labels) > 0 {
		if v.Incoming, err = bars("Bytes each broker receives", "broker (rack)", "MiB", labels, in); err != nil {
			return err
		}
	}
	if len(v.Pairs) > 0 {
		labels, in = nil, nil
		for _, p := range v.Pairs {
			labels, in = append(labels, fromLabel(p.From)+"→"+fmt.Sprint(p.To)), append(in, float64(p.Moves))
		}
		if v.PairsChart, err = bars("Replicas moved per broker pair", "from → to", "replicas", labels, in); err != nil {
			return err
		}
	}
	if len(v.GroupTotals) > 0 {
		labels, in = nil, nil
		for _, g := range v.GroupTotals {
			labels, in = append(labels, fmt.Sprint(g.Group)), append(in, float64(g.Bytes)/mib)
		}
		if len(labels) > 40 {
			// Beyond that the ticks overlap; the table lists every group.
			labels = thinLabels(labels, 40)
		}
		v.GroupsChart, err = bars("Bytes copied per group", "group", "MiB", labels, in)
	}
	return err
}

// thinLabels blanks all but about n of the labels, evenly spaced.
func thinLabels(labels []string, n int) []string {
	out := make([]string, len(labels))
	step := (len(labels) + n - 1) / n
	for i := range labels {
		if i%step == 0 {
			out[i] = labels[i]
		}
	}
	return out
}

func (v *view) drawTimeline() error {
	t := v.Timeline
	if t == nil || len(t.Samples) == 0 {
		return nil
	}
	for _, r := range t.Receivers {
		v.ReceiverIDs = append(v.ReceiverIDs, r.Broker)
	}
	xs := make([]float64, len(t.Samples))
	for i, s := range t.Samples {
		xs[i] = s.Seconds
	}
	var received, rates []series
	for _, b := range v.ReceiverIDs {
		rs, rr := series{name: fmt.Sprintf("broker %d", b), xs: xs}, series{name: fmt.Sprintf("broker %d", b), xs: xs}
		for _, s := range t.Samples {
			rs.ys = append(rs.ys, float64(s.Received[b])/mib)
			rr.ys = append(rr.ys, s.Rates[b]/mib)
		}
		received, rates = append(received, rs), append(rates, rr)
	}
	throttle := series{name: "throttle", xs: xs, limit: true}
	for _, s := range t.Samples {
		throttle.ys = append(throttle.ys, float64(s.Throttle)/mib)
	}
	var err error
	if v.Received, err = lines("Bytes each broker received", "seconds since the start", "MiB", received); err != nil {
		return err
	}
	if v.Rates, err = lines("Receive rate against the throttle", "seconds since the start", "MiB/s", append(rates, throttle)); err != nil {
		return err
	}
	predicted := series{name: "predicted end", xs: xs}
	for _, s := range t.Samples {
		predicted.ys = append(predicted.ys, s.PredictedEndSeconds)
	}
	ss := []series{predicted}
	reEstimated := series{name: "re-estimated end, from the pace seen"}
	for i, s := range t.Samples {
		if s.ReEstimatedEndSeconds > 0 {
			reEstimated.xs, reEstimated.ys = append(reEstimated.xs, xs[i]), append(reEstimated.ys, s.ReEstimatedEndSeconds)
		}
	}
	if len(reEstimated.xs) > 0 {
		ss = append(ss, reEstimated)
	}
	if !t.EndedAt.IsZero() {
		end := t.EndedAt.Sub(t.StartedAt).Seconds()
		ss = append(ss, series{name: "actual end", xs: []float64{0, slices.Max(xs)}, ys: []float64{end, end}, limit: true})
	}
	v.ETAChart, err = lines("When the estimate said it would end", "seconds since the start", "seconds since the start", ss)
	return err
}
