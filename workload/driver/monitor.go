package driver

import (
	"time"

	"github.com/distcache/distcache/client"
)

// progressInfo describes a phase to Config.Progress.
type progressInfo struct {
	mode     Mode
	phase    string
	total    uint64
	duration time.Duration
}

// monitor samples a running phase: it calls Config.Progress about ten times
// a second and, for a measured phase, records a timeline point every
// Config.Interval. Its goroutine owns every field but stopc and done until
// done is closed.
type monitor struct {
	r       *runner
	info    progressInfo
	start   time.Time
	t       *tally
	clients []*client.Client // whose retries, timeouts, reads and hits the timeline counts
	sample  bool

	stopc chan time.Time // receives the phase's end
	done  chan struct{}  // closed when the goroutine has returned

	timeline []Point
	last     sampleState // at the previous timeline point
	recent   []doneAt    // progress samples of about the last second
}

// sampleState is the counters at one instant.
type sampleState struct {
	at                time.Time
	completed, errors uint64
	retries, timeouts uint64
	gets, hits        uint64
}

// doneAt is a progress sample.
type doneAt struct {
	at   time.Time
	done uint64
}

// startMonitor starts monitoring a phase that started at start.
func (r *runner) startMonitor(info progressInfo, start time.Time, t *tally, clients []*client.Client, sample bool) *monitor {
	m := &monitor{r: r, info: info, start: start, t: t, clients: clients, sample: sample,
		stopc: make(chan time.Time), done: make(chan struct{})}
	if sample {
		m.last = m.state(start)
	}
	go m.run()
	return m
}

// stop ends monitoring at end (after the phase's last operation) and
// returns the timeline.
func (m *monitor) stop(end time.Time) []Point {
	m.stopc <- end
	<-m.done
	return m.timeline
}

func (m *monitor) run() {
	defer close(m.done)
	progress := time.NewTicker(progressEvery)
	defer progress.Stop()
	var samples <-chan time.Time
	if m.sample {
		t := time.NewTicker(m.r.cfg.Interval)
		defer t.Stop()
		samples = t.C
	}
	for {
		select {
		case end := <-m.stopc:
			if m.sample && end.Sub(m.last.at) >= m.r.cfg.Interval/10 {
				m.point(end) // the last, partial interval
			}
			m.progress(end)
			return
		case now := <-progress.C:
			m.progress(now)
		case now := <-samples:
			m.point(now)
		}
	}
}

// state reads the counters now.
func (m *monitor) state(now time.Time) sampleState {
	s := sampleState{at: now, completed: m.t.completed.Load(), errors: m.t.errors.Load()}
	for _, c := range m.clients {
		st := c.Stats()
		s.retries += st.Retries
		s.timeouts += st.Timeouts
		s.gets += st.Gets
		s.hits += st.Hits
	}
	return s
}

// point appends the timeline point of the interval ending now.
func (m *monitor) point(now time.Time) {
	s := m.state(now)
	secs := s.at.Sub(m.last.at).Seconds()
	if secs <= 0 {
		return
	}
	p := Point{
		T:            s.at.Sub(m.start).Seconds(),
		OpsPerSecond: float64(s.completed-m.last.completed) / secs,
		Errors:       s.errors - m.last.errors,
		Retries:      s.retries - m.last.retries,
		Timeouts:     s.timeouts - m.last.timeouts,
	}
	if gets := s.gets - m.last.gets; gets > 0 {
		// Hits are counted as reads finish, gets as they start: an
		// interval can end between the two.
		h := min(float64(s.hits-m.last.hits)/float64(gets), 1)
		p.HitRatio = &h
	}
	m.timeline = append(m.timeline, p)
	m.last = s
}

// progress calls Config.Progress, with the rate over about the last second.
func (m *monitor) progress(now time.Time) {
	fn := m.r.cfg.Progress
	if fn == nil {
		return
	}
	done := m.t.completed.Load()
	m.recent = append(m.recent, doneAt{now, done})
	for len(m.recent) > 1 && now.Sub(m.recent[1].at) >= time.Second {
		m.recent = m.recent[1:]
	}
	var rate float64
	first := m.recent[0]
	if secs := now.Sub(first.at).Seconds(); secs > 0 {
		rate = float64(done-first.done) / secs
	} else if secs := now.Sub(m.start).Seconds(); secs > 0 {
		rate = float64(done) / secs
	}
	fn(Progress{Mode: m.info.mode, Phase: m.info.phase, Done: done, Total: m.info.total,
		Elapsed: now.Sub(m.start), Duration: m.info.duration, Rate: rate})
}
