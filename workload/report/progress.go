package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/distcache/distcache/workload/driver"
)

// Progress bar layout.
const (
	barCells = 30
	// lineEvery is how often a writer that is not a terminal gets a line
	// during a phase (besides its start and end).
	lineEvery = 5 * time.Second
)

// ProgressBar returns a driver.Config.Progress that shows the running phase
// on w. On a terminal it is one line redrawn in place (with \r), ending when
// the phase does; any other writer (a log file, CI output) gets a line when
// a phase starts, every lineEvery and when it ends, so the output stays
// readable without a terminal. The function is safe for concurrent use.
func ProgressBar(w io.Writer) func(driver.Progress) {
	pb := &progressBar{w: w, tty: isTerminal(w)}
	return pb.update
}

// progressBar is the state behind ProgressBar.
type progressBar struct {
	w   io.Writer
	tty bool

	mu       sync.Mutex // guards the fields below
	phase    string     // the phase shown last ("mode/phase")
	open     bool       // a terminal line is drawn and not ended
	width    int        // the width of that line, to blank what it leaves
	lastLine time.Time  // when a non-terminal line was written
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (pb *progressBar) update(p driver.Progress) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	phase := p.Phase
	if p.Mode != "" {
		phase = string(p.Mode) + " " + p.Phase
	}
	started := phase != pb.phase
	pb.phase = phase
	finished := fraction(p) >= 1
	if pb.tty {
		var b strings.Builder
		if started && pb.open {
			b.WriteString("\n")
			pb.width = 0
		}
		line := progressLine(phase, p, true)
		b.WriteString("\r" + line)
		if pad := pb.width - len([]rune(line)); pad > 0 {
			b.WriteString(strings.Repeat(" ", pad))
		}
		pb.width = len([]rune(line))
		pb.open = !finished
		if finished {
			b.WriteString("\n")
			pb.width = 0
		}
		_, _ = io.WriteString(pb.w, b.String()) // progress is best effort
		return
	}
	now := time.Now()
	if started || finished || now.Sub(pb.lastLine) >= lineEvery {
		pb.lastLine = now
		_, _ = io.WriteString(pb.w, progressLine(phase, p, false)+"\n") // progress is best effort
	}
}

// fraction is how far the phase is: done of total or elapsed of duration,
// whichever is further (the phase ends at the first bound), at most 1.
func fraction(p driver.Progress) float64 {
	var f float64
	if p.Total > 0 {
		f = float64(p.Done) / float64(p.Total)
	}
	if p.Duration > 0 {
		f = max(f, p.Elapsed.Seconds()/p.Duration.Seconds())
	}
	return min(f, 1)
}

// progressLine formats p, with a bar if bar is set.
func progressLine(phase string, p driver.Progress, bar bool) string {
	f := fraction(p)
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s", phase)
	if bar {
		n := int(f * barCells)
		fmt.Fprintf(&b, " [%s%s]", strings.Repeat("#", n), strings.Repeat(".", barCells-n))
	}
	fmt.Fprintf(&b, " %3.0f%%  %d/%d", 100*f, p.Done, p.Total)
	if p.Duration > 0 {
		fmt.Fprintf(&b, "  %s/%s", p.Elapsed.Round(100*time.Millisecond), p.Duration.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(&b, "  %s", p.Elapsed.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "  %s/s", num(p.Rate))
	return b.String()
}
