package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// replay writes the per-minute table of a finished run again from its
// directory (samples.tsv and window.env), with o's -mode, -before,
// -outage, -after and -every, which must be the run's. A sample's time is
// when its scrape started (the run itself measured rates between the
// replies; before 2026-12-06 05:30 UTC a sample carried the ticker's time,
// late after a kill).
func replay(w io.Writer, dir string, o options) error {
	stop, back, err := readWindow(filepath.Join(dir, "window.env"))
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(dir, "samples.tsv"))
	if err != nil {
		return err
	}
	defer f.Close()
	s := &scraper{scrapes: map[string][]scrape{}}
	type key struct {
		url string
		at  time.Time
	}
	index := map[key]int{} // into s.scrapes[url]
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 4 || fields[1] == "-" {
			continue // a mark
		}
		at, err := time.Parse(time.RFC3339Nano, fields[0])
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
		u := fields[1]
		if _, ok := s.scrapes[u]; !ok {
			s.urls = append(s.urls, u)
		}
		k := key{u, at}
		i, ok := index[k]
		if !ok {
			i = len(s.scrapes[u])
			index[k] = i
			var series map[string]float64
			if !strings.HasPrefix(fields[2], "# failed") {
				series = map[string]float64{}
			}
			s.scrapes[u] = append(s.scrapes[u], scrape{at: at, got: at, series: series})
		}
		if strings.HasPrefix(fields[2], "#") {
			continue
		}
		v, err := strconv.ParseFloat(fields[3], 64)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
		if m := s.scrapes[u][i].series; m != nil {
			m[fields[2]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	o.urls = s.urls
	s.writeMinutes(w, stop, back, o)
	return nil
}

// readWindow reads STOP and BACK from a window.env.
func readWindow(path string) (stop, back time.Time, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return stop, back, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		t, perr := time.Parse(time.RFC3339Nano, v)
		if perr != nil {
			return stop, back, fmt.Errorf("%s: %w", path, perr)
		}
		switch k {
		case "STOP":
			stop = t
		case "BACK":
			back = t
		}
	}
	if stop.IsZero() || back.IsZero() {
		return stop, back, fmt.Errorf("%s: no STOP or BACK", path)
	}
	return stop, back, nil
}
