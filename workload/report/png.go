package report

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/distcache/distcache/workload/driver"
)

// Layout of the PNG.
const (
	pngWidth      = 8 * vg.Inch
	timelineInch  = 3.2
	barsInch      = 2.8
	maxBarLabels  = 48 // more members than this are drawn without names
	barFill       = 0.8
	capacityLevel = 1.0
	// headroom is the room above the highest value, for the legend.
	headroom = 1.35
)

var (
	modeColors = map[driver.Mode]color.Color{
		driver.NoCache:   color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff},
		driver.DistCache: color.RGBA{R: 0x22, G: 0x55, B: 0xcc, A: 0xff},
		driver.Twemproxy: color.RGBA{R: 0xcc, G: 0x77, B: 0x22, A: 0xff},
	}
	killColor    = color.RGBA{R: 0xc0, A: 0xff}
	restartColor = color.RGBA{G: 0x90, A: 0xff}
	shiftColor   = color.RGBA{R: 0x88, G: 0x22, B: 0xaa, A: 0xff}
	nodeColor    = color.RGBA{R: 0x33, G: 0x66, B: 0xcc, A: 0xff}
	shardColor   = color.RGBA{R: 0xdd, G: 0x88, B: 0x22, A: 0xff}
)

// WritePNG draws r to the PNG file path: the throughput timeline of every
// mode with the failure, the recovery and the hot-set shift marked (the
// paper's fig. 11), then per mode a bar per cache node and storage shard
// showing its utilisation over the window (work units per second without
// capacities). A mode whose members reported no load (a run that knew
// only the map, as bench --map-configmap) has no bars.
func WritePNG(path string, r *driver.Report) (err error) {
	defer func() { // gonum/plot reports some invalid input by panicking
		if v := recover(); v != nil {
			err = fmt.Errorf("cannot draw %s: %v", path, v)
		}
	}()
	plots := [][]*plot.Plot{{timelinePlot(r)}}
	for _, m := range r.Modes {
		if len(m.Nodes)+len(m.Shards) == 0 {
			continue // no member reported its load (a run that knew only the map)
		}
		p, err := barsPlot(m)
		if err != nil {
			return fmt.Errorf("cannot draw %s: %w", path, err)
		}
		plots = append(plots, []*plot.Plot{p})
	}
	height := vg.Length(timelineInch+barsInch*float64(len(plots)-1)) * vg.Inch
	img := vgimg.New(pngWidth, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 2 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	err = writeFile(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}

// timelinePlot draws each mode's completed operations per second over its
// measured window, and the failure, its recovery and the hot-set shift as
// vertical lines.
func timelinePlot(r *driver.Report) *plot.Plot {
	p := plot.New()
	p.Title.Text = "throughput over the measured window"
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "operations/s"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	var top float64
	end := 1.0 // the x axis' end: the longest window
	for i, m := range r.Modes {
		end = max(end, m.Seconds)
		if len(m.Timeline) == 0 {
			continue
		}
		pts := make(plotter.XYs, 0, len(m.Timeline)+1)
		pts = append(pts, plotter.XY{}) // the window starts at 0
		for _, pt := range m.Timeline {
			pts = append(pts, plotter.XY{X: pt.T, Y: pt.OpsPerSecond})
			top = max(top, pt.OpsPerSecond)
		}
		pts[0].Y = m.Timeline[0].OpsPerSecond
		line, err := plotter.NewLine(pts)
		if err != nil {
			continue // no finite points
		}
		line.Color = plotutil.Color(i)
		if c, ok := modeColors[m.Mode]; ok {
			line.Color = c
		}
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(string(m.Mode), line)
	}
	top = math.Max(top, 1) * headroom
	if f := r.Failure; f != nil && f.Killed {
		w := wordsOf(f)
		addMarker(p, f.KilledAt, top, killColor, w.mark+" "+f.Member)
		if f.Restarted {
			addMarker(p, f.RestartedAt, top, restartColor, w.unmark)
		}
	}
	if s := r.Shift; s != nil && s.Shifted {
		addMarker(p, s.At, top, shiftColor, "hot set shift")
	}
	p.Y.Min, p.Y.Max = 0, top
	p.X.Min, p.X.Max = 0, math.Max(p.X.Max, end)
	return p
}

// addMarker draws a dashed vertical line at x from 0 to top.
func addMarker(p *plot.Plot, x, top float64, c color.Color, label string) {
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
	if err != nil {
		return
	}
	l.Color = c
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(label, l)
}

// barsPlot draws a bar per cache node, then per storage shard, of a mode:
// utilisation when the members have capacities, else units per second.
func barsPlot(m driver.ModeResult) (*plot.Plot, error) {
	p := plot.New()
	util := hasCapacity(m.Nodes) || hasCapacity(m.Shards)
	p.Title.Text = fmt.Sprintf("%s: load per cache node and storage shard", m.Mode)
	if util {
		p.Y.Label.Text = "utilisation"
	} else {
		p.Y.Label.Text = "work units/s"
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	width := barWidth(len(m.Nodes) + len(m.Shards))
	var names []string
	var top float64
	for _, set := range []struct {
		loads []driver.Load
		color color.Color
		label string
	}{{m.Nodes, nodeColor, "cache nodes"}, {m.Shards, shardColor, "storage shards"}} {
		if len(set.loads) == 0 {
			continue
		}
		vals := make(plotter.Values, len(set.loads))
		for j, l := range set.loads {
			vals[j] = l.UnitsPerSecond
			if util {
				vals[j] = l.Utilization
			}
			names = append(names, l.Name)
			top = max(top, vals[j])
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, fmt.Errorf("cannot draw the %s of %s: %w", set.label, m.Mode, err)
		}
		bars.XMin = float64(len(names) - len(set.loads))
		bars.Color = set.color
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.Legend.Add(set.label, bars)
	}
	if len(names) <= maxBarLabels {
		p.NominalX(names...)
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	} else {
		p.X.Label.Text = fmt.Sprintf("%d members", len(names))
	}
	if util {
		top = max(top, capacityLevel)
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: capacityLevel}, {X: float64(len(names)) - 0.5, Y: capacityLevel}})
		if err == nil {
			l.Color = killColor
			l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(l)
			p.Legend.Add("capacity", l)
		}
	}
	p.Y.Min, p.Y.Max = 0, math.Max(top, 1)*headroom
	p.X.Min, p.X.Max = -0.5, math.Max(float64(len(names)), 1)-0.5
	return p, nil
}

// barWidth spreads n bars over the plot's width.
func barWidth(n int) vg.Length {
	if n == 0 {
		return vg.Points(10)
	}
	return max(vg.Points(1), min(vg.Points(24), pngWidth*barFill*0.85/vg.Length(n)))
}

func hasCapacity(ls []driver.Load) bool {
	for _, l := range ls {
		if l.Capacity > 0 {
			return true
		}
	}
	return false
}
