package sim

import (
	"fmt"

	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
)

// FailureTimeline is the schedule of the failure experiment (Figure 11), in
// steps of StepQueries query arrivals.
type FailureTimeline struct {
	Steps       int
	StepQueries int
	// Fail lists the steps at which spine nodes 0, 1, ... fail.
	Fail []int
	// DetectAfter is how many steps the controller takes to notice a failed
	// node and publish a map without it.
	DetectAfter int
	// Restore is the step at which every failed node returns and the
	// controller gives its partition back.
	Restore int
	// Load is the offered rate as a fraction of DistCache's maximum.
	Load float64
}

// DefaultTimeline fails four of the spine nodes one by one at half the
// maximum sending rate, as in §6.4.
func DefaultTimeline(quick bool) FailureTimeline {
	t := FailureTimeline{Steps: 80, StepQueries: 1 << 16, Fail: []int{10, 15, 20, 25}, DetectAfter: 4, Restore: 55, Load: 0.5}
	if quick {
		t.StepQueries = 1 << 14
	}
	return t
}

func runFailure(base Config, quick bool, progress func(string)) ([]Result, error) {
	return RunFailure(base, DefaultTimeline(quick), progress)
}

// RunFailure replays t: queries sent to a failed node get no answer; the
// client hedges them to the key's other holder after StallAfter and stops
// choosing the node (streamer.run), and without a live other holder they
// are lost, until the controller remaps the node's partition by consistent hashing (the next map
// version marks it Failed), after which its hot keys are cached by the
// surviving nodes that own them now. The result's throughput at each step is
// the rate of queries answered, in units of one server's throughput.
func RunFailure(base Config, t FailureTimeline, progress func(string)) ([]Result, error) {
	if len(t.Fail) > base.Spines-1 {
		return nil, fmt.Errorf("cannot run failure experiment: %d failures with %d spine nodes", len(t.Fail), base.Spines)
	}
	m, err := newModel(base)
	if err != nil {
		return nil, err
	}
	peak, err := m.evaluate([]Strategy{DistCache})
	if err != nil {
		return nil, err
	}
	offered := t.Load * peak[0].Throughput
	s, err := newStreamer(m, hashing.Derive(base.Seed, "failure"))
	if err != nil {
		return nil, err
	}
	down := map[int32]bool{}
	var out []Result
	p := m.placement(DistCache)
	for step := range t.Steps {
		changed, err := m.applyTimeline(t, step, down)
		if err != nil {
			return nil, err
		}
		if changed {
			p = m.placement(DistCache)
			if progress != nil {
				progress(fmt.Sprintf("failure: step %d, map version %d", step, m.pmap.Version))
			}
		}
		tl := s.run(p, t.StepQueries, 0, func(v int32) bool { return down[v] })
		served := offered * (1 - float64(tl.lost)/float64(t.StepQueries))
		out = append(out, Result{Experiment: "failure", X: float64(step), Strategy: DistCache, Throughput: served,
			Bottleneck: fmt.Sprintf("map v%d, %d spine nodes down, %d reads hedged", m.pmap.Version, len(down), tl.hedged)})
	}
	return out, nil
}

// applyTimeline applies the events of step: nodes failing, the controller
// remapping failed nodes, and the restore. It reports whether the partition
// map changed.
func (m *model) applyTimeline(t FailureTimeline, step int, down map[int32]bool) (bool, error) {
	changed := false
	for i, at := range t.Fail {
		v := int32(i)
		name := m.pmap.Layers[spineLayer].Members[v].Name
		switch {
		case step == at:
			down[v] = true
		case step == at+t.DetectAfter && step < t.Restore:
			ok, err := m.setState(name, partmap.Failed)
			if err != nil {
				return false, err
			}
			changed = changed || ok
		}
		if step == t.Restore {
			delete(down, v)
			ok, err := m.setState(name, partmap.Active)
			if err != nil {
				return false, err
			}
			changed = changed || ok
		}
	}
	return changed, nil
}

// setState publishes the next map version with member name in state, as the
// controller does, and reports whether anything changed.
func (m *model) setState(name string, state partmap.MemberState) (bool, error) {
	next, changed, err := m.pmap.WithState(name, state)
	if err != nil || !changed {
		return false, err
	}
	return true, m.setMap(next)
}
