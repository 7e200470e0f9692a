package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// benchReport is the part of `distcache bench --json` the load table reads.
type benchReport struct {
	Modes []struct {
		Mode     string `json:"mode"`
		Timeline []struct {
			T            float64  `json:"t_seconds"`
			OpsPerSecond float64  `json:"ops_per_second"`
			Errors       uint64   `json:"errors"`
			Retries      uint64   `json:"retries"`
			Timeouts     uint64   `json:"timeouts"`
			HitRatio     *float64 `json:"hit_ratio"`
		} `json:"timeline"`
	} `json:"modes"`
}

// loadTable reads a `distcache bench` run: its log as `kubectl logs
// --timestamps` prints it, whose progress lines tell when the measured
// window of mode started, and its JSON report, whose timeline it writes
// per minute since stop (minute k: [stop+k·1m, stop+(k+1)·1m)), back
// being when the API server came back.
func loadTable(w io.Writer, logPath, reportPath, mode string, stop, back time.Time, interval time.Duration) error {
	start, err := measureStart(logPath, mode)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(reportPath)
	if err != nil {
		return err
	}
	var r benchReport
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%s: cannot read the JSON report: %w", reportPath, err)
	}
	type row struct {
		ops, hits, hitOps, secs float64
		errors, timeouts, retr  uint64
	}
	rows := map[int]*row{}
	first, last := 0, 0
	step := interval.Seconds()
	for _, m := range r.Modes {
		if m.Mode != mode {
			continue
		}
		for _, p := range m.Timeline {
			end := start.Add(time.Duration(p.T * float64(time.Second)))
			// The bin's middle decides its minute.
			k := int(math.Floor(end.Add(-interval / 2).Sub(stop).Minutes()))
			rr := rows[k]
			if rr == nil {
				rr = &row{}
				rows[k] = rr
			}
			if len(rows) == 1 || k < first {
				first = k
			}
			if len(rows) == 1 || k > last {
				last = k
			}
			rr.ops += p.OpsPerSecond * step
			rr.secs += step
			rr.errors += p.Errors
			rr.timeouts += p.Timeouts
			rr.retr += p.Retries
			if p.HitRatio != nil {
				rr.hits += *p.HitRatio * p.OpsPerSecond * step
				rr.hitOps += p.OpsPerSecond * step
			}
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("%s: no timeline of mode %s", reportPath, mode)
	}
	fmt.Fprintf(w, "\nThe load (%s, measured window from %s): per minute since the stop, from its timeline (bins of %v).\n\n",
		mode, start.UTC().Format(time.RFC3339), interval)
	fmt.Fprintf(w, "| minute | from (UTC) | API server | seconds | ops/s | client hit share | hits/s | errors | timeouts | retries |\n")
	fmt.Fprintf(w, "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for k := first; k <= last; k++ {
		rr := rows[k]
		if rr == nil || rr.secs < 1 {
			continue // a sliver of the window in a minute of its own
		}
		from := stop.Add(time.Duration(k) * time.Minute)
		phase := phaseOf(from, stop, back)
		share := ""
		if rr.hitOps > 0 {
			share = fmt.Sprintf("%.1f %%", 100*rr.hits/rr.hitOps)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %.0f | %.1f | %s | %.1f | %d | %d | %d |\n",
			k, stamp(from), phase, rr.secs, rr.ops/rr.secs, share, rr.hits/rr.secs, rr.errors, rr.timeouts, rr.retr)
	}
	return nil
}

// measureStart is the time of the first progress line of mode's measured
// window in a log with timestamps.
func measureStart(path, mode string) (time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		ts, line, ok := strings.Cut(sc.Text(), " ")
		if !ok || !strings.HasPrefix(line, mode+" measure") {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			return at, nil
		}
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, err
	}
	return time.Time{}, fmt.Errorf("%s: no %q progress line", path, mode+" measure")
}
