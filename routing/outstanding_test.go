package routing

import (
	"errors"
	"testing"
)

// request is one request of a stall scenario: sent to node at sent,
// answered at answered (0: never) or abandoned at abandoned (0: never).
type request struct {
	node                      NodeID
	sent, answered, abandoned int64
}

// replay applies the requests' events up to now to t, in time order.
func replay(t *LoadTable, reqs []request, now int64) {
	type event struct {
		at   int64
		kind int // 0 sent, 1 answered, 2 abandoned
		r    request
	}
	var evs []event
	for _, r := range reqs {
		evs = append(evs, event{r.sent, 0, r})
		if r.answered != 0 {
			evs = append(evs, event{r.answered, 1, r})
		}
		if r.abandoned != 0 {
			evs = append(evs, event{r.abandoned, 2, r})
		}
	}
	for at := int64(0); at <= now; at++ {
		for _, e := range evs {
			if e.at != at {
				continue
			}
			switch e.kind {
			case 0:
				t.Sent(e.r.node, at)
			case 1:
				t.Answered(e.r.node, e.r.sent)
			case 2:
				t.Abandoned(e.r.node)
			}
		}
	}
}

func TestStalled(t *testing.T) {
	const stallAfter = 20
	tests := []struct {
		name string
		reqs []request
		now  int64
		want bool
	}{
		{name: "never sent", now: 100, want: false},
		{name: "answered at once", reqs: []request{{node: 1, sent: 10, answered: 11}}, now: 100, want: false},
		{name: "one request, young", reqs: []request{{node: 1, sent: 90}}, now: 100, want: false},
		{name: "idle long, then one young request", reqs: []request{{node: 1, sent: 1, answered: 2}, {node: 1, sent: 95}}, now: 100, want: false},
		{name: "dead: nothing answered", reqs: []request{{node: 1, sent: 70}, {node: 1, sent: 90}}, now: 100, want: true},
		{
			name: "slow: answers keep coming, each 50 after its request",
			reqs: []request{{node: 1, sent: 10, answered: 60}, {node: 1, sent: 30, answered: 80}, {node: 1, sent: 50, answered: 100}, {node: 1, sent: 95}},
			now:  100, want: true,
		},
		{
			name: "fast and busy: never idle, answers 2 after each request",
			reqs: []request{{node: 1, sent: 10, answered: 12}, {node: 1, sent: 11, answered: 13}, {node: 1, sent: 12, answered: 60},
				{node: 1, sent: 85, answered: 87}, {node: 1, sent: 86, answered: 100}, {node: 1, sent: 99}},
			now: 100, want: false,
		},
		{name: "dead, its requests abandoned", reqs: []request{{node: 1, sent: 10, abandoned: 60}, {node: 1, sent: 20, abandoned: 70}}, now: 100, want: false},
		{
			name: "dead, abandoned, then tried again and silent",
			reqs: []request{{node: 1, sent: 10, abandoned: 60}, {node: 1, sent: 70}},
			now:  100, want: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := NewLoadTable(AgingConfig{}, WithStallAfter(stallAfter))
			if err != nil {
				t.Fatal(err)
			}
			replay(tab, tc.reqs, tc.now)
			if got := tab.Stalled(1, tc.now); got != tc.want {
				t.Errorf("Stalled = %v, want %v (in flight %d)", got, tc.want, tab.InFlight(1))
			}
		})
	}
}

func TestChoosePassesStalled(t *testing.T) {
	const stallAfter = 20
	tests := []struct {
		name        string
		loads       map[NodeID]float64
		reqs        []request
		failed      []NodeID
		want        int
		wantPassed  bool
		wantAllStal bool
	}{
		{
			name:  "least loaded wins when nothing is stalled",
			loads: map[NodeID]float64{1: 1, 2: 5},
			reqs:  []request{{node: 1, sent: 95}},
			want:  0,
		},
		{
			name:       "a stalled node is passed over however low its load",
			loads:      map[NodeID]float64{1: 0, 2: 5},
			reqs:       []request{{node: 1, sent: 50}},
			want:       1,
			wantPassed: true,
		},
		{
			name:        "all stalled: the one caught up most recently",
			loads:       map[NodeID]float64{1: 0, 2: 5},
			reqs:        []request{{node: 1, sent: 50}, {node: 2, sent: 60}},
			want:        1,
			wantAllStal: true,
		},
		{
			name:   "failed beats stalled: a stalled node is still chosen over a failed one",
			loads:  map[NodeID]float64{1: 0, 2: 5},
			reqs:   []request{{node: 2, sent: 50}},
			failed: []NodeID{1},
			want:   1, wantAllStal: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := NewLoadTable(AgingConfig{}, WithStallAfter(stallAfter))
			if err != nil {
				t.Fatal(err)
			}
			for n, l := range tc.loads {
				tab.Observe(n, l, 0)
			}
			for _, n := range tc.failed {
				tab.MarkFailed(n, true)
			}
			replay(tab, tc.reqs, 100)
			r := NewRouter(tab, 1)
			if got := r.Choose([]Candidate{{Node: 1}, {Node: 2}}, 100); got != tc.want {
				t.Errorf("Choose = %d, want %d", got, tc.want)
			}
			st := r.Stats()
			if (st.PassedStalled == 1) != tc.wantPassed || (st.AllStalled == 1) != tc.wantAllStal {
				t.Errorf("stats %+v: want passed %v, all stalled %v", st, tc.wantPassed, tc.wantAllStal)
			}
		})
	}
}

func TestStallTrackingOff(t *testing.T) {
	tab, err := NewLoadTable(AgingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tab.Sent(1, 0)
	if tab.InFlight(1) != 0 || tab.Stalled(1, 1<<40) {
		t.Fatal("a table without WithStallAfter tracks requests")
	}
	if _, err := NewLoadTable(AgingConfig{}, WithStallAfter(0)); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("WithStallAfter(0): err %v, want ErrInvalidConfig", err)
	}
}

func TestAbandonedNeverBelowZero(t *testing.T) {
	tab, err := NewLoadTable(AgingConfig{}, WithStallAfter(10))
	if err != nil {
		t.Fatal(err)
	}
	tab.Sent(1, 0)
	tab.Abandoned(1)
	tab.Abandoned(1)
	tab.Answered(1, 0)
	if n := tab.InFlight(1); n != 0 {
		t.Fatalf("in flight %d after more completions than requests, want 0", n)
	}
	tab.Sent(1, 100)
	if !tab.Stalled(1, 111) {
		t.Fatal("a request sent after extra completions does not count")
	}
}
