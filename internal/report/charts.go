package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The charts are drawn by gonum/plot into SVG that the page inlines. It
// lays out axes, ticks, bars, lines and legends itself, and renders on this
// side: the page carries no script and no font (the browser's own sans is
// used), so it opens offline and a chart costs a few kilobytes, where a
// JavaScript charting library would add its code (about a megabyte) to
// every page.

// chartWidth and chartHeight are a chart's size; the page scales it to its
// column.
const (
	chartWidth  = 9 * vg.Inch
	chartHeight = 3.6 * vg.Inch
)

// Colours of before and after, and of a throttle or an actual end drawn
// against the series.
var (
	beforeColor = color.RGBA{R: 0x9e, G: 0xb3, B: 0xc8, A: 0xff}
	afterColor  = color.RGBA{R: 0x1f, G: 0x5f, B: 0x9e, A: 0xff}
	limitColor  = color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff}
)

// series is one named line: xs and ys of equal length.
type series struct {
	name   string
	xs, ys []float64
	// limit draws it dashed in limitColor: a throttle, an actual end.
	limit bool
}

// svg renders p as inline SVG.
func svg(p *plot.Plot) (template.HTML, error) {
	c := vgsvg.New(chartWidth, chartHeight)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("drawing chart %q: %w", p.Title.Text, err)
	}
	// Inline in HTML: the XML declaration and comment before <svg> go.
	s := b.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	return template.HTML(s), nil //nolint:gosec // drawn here from numbers and escaped labels
}

func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// beforeAfter draws one group of two bars per label: before and after.
func beforeAfter(title, yLabel string, labels []string, before, after []float64) (template.HTML, error) {
	p := newPlot(title, "broker (rack)", yLabel)
	w := barWidth(len(labels), 2)
	for i, s := range []struct {
		name string
		vs   []float64
		c    color.Color
	}{{"before", before, beforeColor}, {"after", after, afterColor}} {
		bc, err := plotter.NewBarChart(plotter.Values(s.vs), w)
		if err != nil {
			return "", fmt.Errorf("chart %q: %w", title, err)
		}
		bc.Color, bc.LineStyle.Width = s.c, 0
		bc.Offset = w * vg.Length(float64(i)-0.5)
		p.Add(bc)
		p.Legend.Add(s.name, bc)
	}
	p.NominalX(labels...)
	// Room for the outer bars of the first and last groups.
	p.X.Min, p.X.Max = -0.6, float64(len(labels))-0.4
	headroom(p, slices.Max(append(slices.Clone(before), after...)))
	return svg(p)
}

// headroom starts the y axis at 0 and leaves room above the tallest of
// top for the legend.
func headroom(p *plot.Plot, top float64) {
	p.Y.Min, p.Y.Max = 0, max(top*1.3, 1)
}

// bars draws one bar per label.
func bars(title, xLabel, yLabel string, labels []string, vs []float64) (template.HTML, error) {
	p := newPlot(title, xLabel, yLabel)
	bc, err := plotter.NewBarChart(plotter.Values(vs), barWidth(len(labels), 1))
	if err != nil {
		return "", fmt.Errorf("chart %q: %w", title, err)
	}
	bc.Color, bc.LineStyle.Width = afterColor, 0
	p.Add(bc)
	p.NominalX(labels...)
	headroom(p, slices.Max(vs))
	return svg(p)
}

// barWidth fits n groups of per bars in the plot's width.
func barWidth(n, per int) vg.Length {
	w := (chartWidth - vg.Inch) / vg.Length(max(n, 1)*per) * 0.8
	return min(max(w, 1), 0.5*vg.Inch)
}

// lines draws each series as a line with points.
func lines(title, xLabel, yLabel string, ss []series) (template.HTML, error) {
	p := newPlot(title, xLabel, yLabel)
	n, top := 0, 0.0
	for _, s := range ss {
		xys := make(plotter.XYs, len(s.xs))
		for i := range s.xs {
			xys[i] = plotter.XY{X: s.xs[i], Y: s.ys[i]}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return "", fmt.Errorf("chart %q, series %q: %w", title, s.name, err)
		}
		l.Width = vg.Points(1.5)
		if s.limit {
			l.Color, l.Dashes = limitColor, []vg.Length{vg.Points(5), vg.Points(3)}
		} else {
			// plotutil's first colour is a red, limitColor's kin.
			l.Color = plotutil.Color(n + 2)
			n++
		}
		if len(s.ys) > 0 {
			top = max(top, slices.Max(s.ys))
		}
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	headroom(p, top)
	p.X.Min = 0
	return svg(p)
}
