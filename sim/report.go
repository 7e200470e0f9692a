// Reports: each experiment's results as CSV, as a markdown table and as a
// PNG plot.

package sim

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// failureExperiment is the experiment reported as a time series of one
// strategy, with the partition-map state in place of the bottleneck.
const failureExperiment = "failure"

// WriteReport writes DIR/<exp.Name>.csv, DIR/<exp.Name>.png and
// DIR/<exp.Name>.md for the results of one experiment, creating dir if
// needed.
func WriteReport(dir string, exp Experiment, results []Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot write report: %w", err)
	}
	base := filepath.Join(dir, exp.Name)
	err := writeFile(base+".csv", func(w io.Writer) error { return WriteCSV(w, results) })
	if err == nil {
		err = writeFile(base+".md", func(w io.Writer) error { return WriteMarkdown(w, exp, results) })
	}
	if err == nil {
		err = WritePlot(base+".png", exp, results)
	}
	if err != nil {
		return fmt.Errorf("cannot write report: %w", err)
	}
	return nil
}

// writeFile creates path and fills it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("cannot close %s: %w", path, cerr)
	}
	return err
}

// WriteCSV writes one row per result, in input order, under the header
// experiment,x,strategy,normalized_throughput.
func WriteCSV(w io.Writer, results []Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"experiment", "x", "strategy", "normalized_throughput"}); err != nil {
		return fmt.Errorf("cannot write CSV: %w", err)
	}
	for _, r := range results {
		row := []string{r.Experiment, strconv.FormatFloat(r.X, 'g', -1, 64),
			string(r.Strategy), strconv.FormatFloat(r.Throughput, 'f', 3, 64)}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("cannot write CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("cannot write CSV: %w", err)
	}
	return nil
}

// WriteMarkdown writes the results as GitHub markdown: one table per series
// with a row per x and a column per strategy, followed by the node limiting
// each strategy at the last x. The failure experiment gets a table of x,
// throughput and partition-map state instead.
func WriteMarkdown(w io.Writer, exp Experiment, results []Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s (paper figure %s)\n", exp.Name, exp.Figure)
	xLabel := exp.XLabel
	if xLabel == "" {
		xLabel = "x"
	}
	series := Series(results)
	for _, name := range series {
		rs := seriesResults(results, name)
		b.WriteString("\n")
		if len(series) > 1 {
			fmt.Fprintf(&b, "### %s\n\n", name)
		}
		strategies := strategiesIn(rs)
		if exp.Name == failureExperiment {
			thrLabel := "throughput"
			if len(strategies) == 1 {
				thrLabel = string(strategies[0]) + " throughput"
			}
			writeRow(&b, []string{xLabel, thrLabel, "state"})
			writeAlign(&b, 2, 1)
			// Consecutive rows that read the same share one row, "first–last".
			for i := 0; i < len(rs); {
				thr := fmt.Sprintf("%.1f", rs[i].Throughput)
				j := i + 1
				for j < len(rs) && rs[j].Bottleneck == rs[i].Bottleneck &&
					rs[j].Strategy == rs[i].Strategy && fmt.Sprintf("%.1f", rs[j].Throughput) == thr {
					j++
				}
				x := formatX(rs[i].X)
				if j > i+1 {
					x += "–" + formatX(rs[j-1].X)
				}
				writeRow(&b, []string{x, thr, rs[i].Bottleneck})
				i = j
			}
			continue
		}
		writeRow(&b, append([]string{xLabel}, strategyNames(strategies)...))
		writeAlign(&b, 1+len(strategies), 0)
		xs := xsIn(rs)
		for _, x := range xs {
			row := []string{formatX(x)}
			for _, s := range strategies {
				cell := "–"
				if r, ok := find(rs, x, s); ok {
					cell = fmt.Sprintf("%.1f", r.Throughput)
				}
				row = append(row, cell)
			}
			writeRow(&b, row)
		}
		if len(xs) > 0 {
			last := xs[len(xs)-1]
			fmt.Fprintf(&b, "\nLimiting node at the last x (%s):\n\n", formatX(last))
			for _, s := range strategies {
				if r, ok := find(rs, last, s); ok {
					fmt.Fprintf(&b, "- %s → %s\n", s, orDash(r.Bottleneck))
				}
			}
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("cannot write markdown: %w", err)
	}
	return nil
}

// writeRow writes one table row, escaping pipes in the cells.
func writeRow(b *strings.Builder, cells []string) {
	for _, c := range cells {
		fmt.Fprintf(b, "| %s ", strings.ReplaceAll(c, "|", `\|`))
	}
	b.WriteString("|\n")
}

// writeAlign writes the header separator: n right-aligned columns, except
// the last `left` ones which are left-aligned.
func writeAlign(b *strings.Builder, n, left int) {
	for i := range n + left {
		if i < n {
			b.WriteString("|---:")
		} else {
			b.WriteString("|---")
		}
	}
	b.WriteString("|\n")
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func formatX(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// seriesResults returns the results of series name.
func seriesResults(results []Result, name string) []Result {
	var out []Result
	for _, r := range results {
		if r.Experiment == name {
			out = append(out, r)
		}
	}
	return out
}

// strategiesIn returns the strategies present in results, in Strategies
// order, followed by any unknown ones in first-seen order.
func strategiesIn(results []Result) []Strategy {
	var out []Strategy
	for _, s := range Strategies {
		if slices.ContainsFunc(results, func(r Result) bool { return r.Strategy == s }) {
			out = append(out, s)
		}
	}
	for _, r := range results {
		if !slices.Contains(out, r.Strategy) {
			out = append(out, r.Strategy)
		}
	}
	return out
}

func strategyNames(ss []Strategy) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// xsIn returns the x values of results in first-seen order.
func xsIn(results []Result) []float64 {
	return firstSeen(results, func(r Result) float64 { return r.X })
}

// find returns the first result of strategy s at x.
func find(results []Result, x float64, s Strategy) (Result, bool) {
	i := slices.IndexFunc(results, func(r Result) bool { return r.X == x && r.Strategy == s })
	if i < 0 {
		return Result{}, false
	}
	return results[i], true
}

// WritePlot draws one line per strategy and series to the PNG file path,
// with the legend to the right of the plot: a colour per strategy and, if
// there are several series, a dash pattern per series. The scale and writes
// experiments use a logarithmic throughput axis, and scale a logarithmic x
// axis too; non-positive values are drawn at a small positive floor there.
func WritePlot(path string, exp Experiment, results []Result) (err error) {
	defer func() { // gonum/plot reports some invalid input by panicking
		if v := recover(); v != nil {
			err = fmt.Errorf("cannot draw plot %s: %v", path, v)
		}
	}()
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (DistCache paper fig. %s)", exp.Name, exp.Figure)
	p.X.Label.Text = exp.XLabel
	p.Y.Label.Text = "throughput (× one server)"
	p.Add(plotter.NewGrid())
	logY := len(results) > 0 && (exp.Name == "scale" || exp.Name == "writes")
	logX := len(results) > 0 && exp.Name == "scale"
	xFloor, yFloor := logFloor(results, func(r Result) float64 { return r.X }),
		logFloor(results, func(r Result) float64 { return r.Throughput })
	series := Series(results)
	var listed []Strategy
	for j, name := range series {
		rs := seriesResults(results, name)
		for _, s := range strategiesIn(rs) {
			var pts plotter.XYs
			for _, r := range rs {
				if r.Strategy != s {
					continue
				}
				x, y := r.X, r.Throughput
				if logX {
					x = max(x, xFloor)
				}
				if logY {
					y = max(y, yFloor)
				}
				pts = append(pts, plotter.XY{X: x, Y: y})
			}
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return fmt.Errorf("cannot plot %s %s: %w", name, s, err)
			}
			k := styleIndex(results, s)
			line.Color, points.Color = plotutil.Color(k), plotutil.Color(k)
			line.Dashes = plotutil.Dashes(j)
			points.Shape = plotutil.Shape(k)
			thumbs := []plot.Thumbnailer{line}
			if len(pts) <= 40 { // glyphs would clutter a long time series
				p.Add(points)
				thumbs = append(thumbs, points)
			}
			p.Add(line)
			if !slices.Contains(listed, s) { // each strategy once, solid
				listed = append(listed, s)
				solid := *line
				solid.Dashes = nil
				thumbs[0] = &solid
				p.Legend.Add(string(s), thumbs...)
			}
		}
	}
	if len(series) > 1 { // then each series' dash pattern
		for j, name := range series {
			l := plotter.NewFunction(func(float64) float64 { return 0 })
			l.Color, l.Dashes = color.Gray{Y: 0x60}, plotutil.Dashes(j)
			p.Legend.Add(strings.TrimPrefix(name, exp.Name+"/"), l)
		}
	}
	if logY { // whole decades, so that LogTicks labels at least two
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Min = math.Pow(10, math.Floor(math.Log10(p.Y.Min)))
		p.Y.Max = max(math.Pow(10, math.Ceil(math.Log10(p.Y.Max))), 10*p.Y.Min)
	} else {
		p.Y.Min = min(p.Y.Min, 0) // throughput from zero, as in the paper
	}
	if logX { // label the x values themselves: racks double at each step
		var ticks []plot.Tick
		for _, x := range xsIn(results) {
			ticks = append(ticks, plot.Tick{Value: max(x, xFloor), Label: formatX(x)})
		}
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.ConstantTicks(ticks)
		if p.X.Min == p.X.Max { // a single x: keep the range positive
			p.X.Min, p.X.Max = p.X.Min/2, p.X.Max*2
		}
	}
	img := vgimg.New(7*vg.Inch, 4.5*vg.Inch)
	dc := draw.New(img)
	legend := p.Legend
	p.Legend = plot.NewLegend()
	legend.Top, legend.Left = true, true
	em := vg.Length(legend.TextStyle.Font.Size)
	width := legend.Rectangle(dc).Size().X + em
	p.Draw(draw.Crop(dc, 0, -width, 0, 0))
	title := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	legend.Draw(draw.Crop(dc, dc.Size().X-width+em/2, 0, 0, -title))
	err = writeFile(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot save plot: %w", err)
	}
	return nil
}

// styleIndex picks the colour and glyph of strategy s: its place in
// Strategies, so that every plot draws a strategy alike.
func styleIndex(results []Result, s Strategy) int {
	if k := slices.Index(Strategies, s); k >= 0 {
		return k
	}
	return len(Strategies) + slices.Index(strategiesIn(results), s)
}

// logFloor returns the value drawn in place of non-positive values on a
// log axis: a tenth of the smallest positive value, or 0.01 if none is.
func logFloor(results []Result, value func(Result) float64) float64 {
	least := math.Inf(1)
	for _, r := range results {
		if v := value(r); v > 0 && v < least {
			least = v
		}
	}
	if math.IsInf(least, 1) {
		return 0.01
	}
	return least / 10
}
