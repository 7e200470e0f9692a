package failover

import (
	"fmt"
	"time"

	"github.com/distcache/distcache/placement/partmap"
)

// Policy is when members are fenced, failed and restored.
type Policy struct {
	// Grace is how long an Active member must be continuously not Ready
	// before it is marked Failed.
	Grace time.Duration
	// FenceLead is how long before the grace period ends a member that is
	// not Ready is marked Fenced: it stops serving cached values and
	// readers leave it, while it keeps its keys. Storage shims stop waiting
	// for a member's acknowledgements once it has been fenced for the
	// serving lease (plus the map's delivery lag), so a lead of at least
	// that much lets writes of its keys go on as soon as it is Failed. The
	// lead is capped at half the grace period, so one missed probe never
	// fences a member; 0 fails members without fencing them first.
	FenceLead time.Duration
	// FenceAfter, when positive, fences a member that has not been Ready
	// for this long, if that is earlier than the fence lead does: a
	// controller that probes often fences a member a few missed probes
	// after it stopped answering, so writes of its keys wait for it only
	// that long plus the serving lease (docs/dataplane.md, Fencing), long
	// before the grace period moves its keys. Fencing costs little: the
	// member is Active again as soon as it is Ready. 0 leaves fencing to
	// FenceLead alone.
	FenceAfter time.Duration
	// HoldDown is how long a Failed member must be continuously Ready before
	// it is marked Active again.
	HoldDown time.Duration
}

// Observation is a member's health as last seen.
type Observation struct {
	// Ready reports whether the member is serving.
	Ready bool
	// Since is when Ready last changed: the pod's Ready condition's
	// lastTransitionTime, or when the controller first saw it so.
	Since time.Time
	// Leaving reports a member stopped on purpose (its pod is being
	// deleted: a drain, an eviction, a rollout): a policy that fences
	// fences it at once, so that readers leave it and shims stop waiting
	// for it while it drains, before its process stops.
	Leaving bool
	// Departing reports a member whose layer is leaving the map (its
	// SwitchFabric is being deleted or is gone): an Active member is
	// fenced at once, whatever the policy, and stays fenced while it is
	// Ready; a layer whose members all depart has no last active member
	// to keep.
	Departing bool
}

// Decision is what Decide concluded for one member.
type Decision struct {
	// State is the state the member should have now.
	State partmap.MemberState
	// Changed reports that State differs from the current one.
	Changed bool
	// Recheck, when positive, is how long until a running grace period or
	// hold-down ends and the member should be looked at again; 0 means
	// nothing is pending.
	Recheck time.Duration
}

// Change records one member's transition, for events and logs.
type Change struct {
	// Layer and Member name the layer and the member.
	Layer, Member string
	// From and To are the member's states before and after.
	From, To partmap.MemberState
	// After is how long the member had been not Ready (when failed) or Ready
	// (when restored).
	After time.Duration
}

// Validate reports the first problem that makes p unusable.
func (p Policy) Validate() error {
	if p.Grace <= 0 {
		return fmt.Errorf("cannot use failover policy: grace period must be positive, got %v", p.Grace)
	}
	if p.HoldDown <= 0 {
		return fmt.Errorf("cannot use failover policy: hold-down period must be positive, got %v", p.HoldDown)
	}
	if p.FenceLead < 0 {
		return fmt.Errorf("cannot use failover policy: fence lead must not be negative, got %v", p.FenceLead)
	}
	if p.FenceAfter < 0 {
		return fmt.Errorf("cannot use failover policy: fence-after must not be negative, got %v", p.FenceAfter)
	}
	return nil
}

// fenceAfter is how long a member must be not Ready to be fenced.
func (p Policy) fenceAfter() time.Duration {
	d := p.Grace - min(p.FenceLead, p.Grace/2)
	if p.FenceAfter > 0 {
		d = min(d, p.FenceAfter)
	}
	return d
}

// fences reports whether the policy fences members before failing them.
func (p Policy) fences() bool { return p.FenceLead > 0 || p.FenceAfter > 0 }

// Decide returns the state a member in state current should have at now
// given its observation o. A member that owns keys (Active or Fenced) and
// has not been Ready for at least p.Grace fails; an Active one not Ready
// for the grace period less the fence lead is fenced first; a Fenced
// member that is Ready again is Active at once (it never lost its keys); a
// Failed member Ready for at least p.HoldDown is restored; otherwise the
// state is kept and Recheck is the time left until the next threshold, if
// any. A Since after now counts as no time elapsed, and an unknown current
// state is treated as Active. p is assumed valid (see Validate).
func (p Policy) Decide(current partmap.MemberState, o Observation, now time.Time) Decision {
	state := current
	if !state.Valid() {
		state = partmap.Active
	}
	d := Decision{State: state}
	elapsed := elapsedSince(o, now)
	switch {
	case o.Departing:
		if state == partmap.Active {
			d.State = partmap.Fenced
		}
	case state.Owns() && !o.Ready:
		switch {
		case elapsed >= p.Grace:
			d.State = partmap.Failed
		case state == partmap.Active && p.fences() && (o.Leaving || elapsed >= p.fenceAfter()):
			d.State, d.Recheck = partmap.Fenced, p.Grace-elapsed
		case state == partmap.Active && p.fences():
			d.Recheck = p.fenceAfter() - elapsed
		default:
			d.Recheck = p.Grace - elapsed
		}
	case state == partmap.Fenced && o.Ready:
		d.State = partmap.Active
	case state == partmap.Failed && o.Ready:
		if elapsed >= p.HoldDown {
			d.State = partmap.Active
		} else {
			d.Recheck = p.HoldDown - elapsed
		}
	}
	d.Changed = d.State != current
	return d
}

// Apply decides every member of m from obs (keyed by member name) at now.
//
// A member without an observation is treated as not Ready since now: an
// Active one starts its grace period now and a Failed one stays Failed. The
// caller is expected to record when it first saw each member and pass that
// as Since, so that the grace period survives a controller restart.
//
// Apply never fences or fails the last active member of a layer: when no
// member of a layer would stay Active, the owning member (Active or Fenced)
// that has been not Ready the shortest (the latest Since; the first in
// member order on a tie) is kept or made Active with no recheck pending,
// since a layer without active members would serve none of its keys. It is
// fenced or fails once another member of the layer is restored.
//
// Apply returns the next map (m itself when nothing changed, else a copy
// whose Version is m's plus one), the changes in map order (layers, then
// members), and the smallest positive Recheck over all members (0 if none).
// m is not modified. p is assumed valid (see Validate).
func (p Policy) Apply(m *partmap.Map, obs map[string]Observation, now time.Time) (next *partmap.Map, changes []Change, recheck time.Duration) {
	if m == nil {
		return nil, nil, 0
	}
	next = m
	for l := range m.Layers {
		layer := &m.Layers[l]
		decisions := p.decideLayer(layer, obs, now)
		for i, d := range decisions {
			if d.Recheck > 0 && (recheck == 0 || d.Recheck < recheck) {
				recheck = d.Recheck
			}
			if !d.Changed {
				continue
			}
			if next == m {
				next = m.Clone()
				next.Version++
			}
			mb := &layer.Members[i]
			next.Layers[l].Members[i].State = d.State
			changes = append(changes, Change{
				Layer:  layer.Name,
				Member: mb.Name,
				From:   mb.State,
				To:     d.State,
				After:  elapsedSince(observe(obs, mb.Name, now), now),
			})
		}
	}
	return next, changes, recheck
}

// decideLayer decides every member of layer and enforces the last-active
// rule.
func (p Policy) decideLayer(layer *partmap.Layer, obs map[string]Observation, now time.Time) []Decision {
	decisions := make([]Decision, len(layer.Members))
	active, departing := 0, 0
	for i, mb := range layer.Members {
		o := observe(obs, mb.Name, now)
		decisions[i] = p.Decide(mb.State, o, now)
		if decisions[i].State == partmap.Active {
			active++
		}
		if o.Departing {
			departing++
		}
	}
	if active > 0 || departing == len(layer.Members) {
		return decisions
	}
	// No member stays Active, so every member that owns keys now was
	// decided Fenced or Failed: keep the one that has been not Ready the
	// shortest.
	keep := -1
	var latest time.Time
	for i, mb := range layer.Members {
		if !mb.State.Owns() {
			continue
		}
		since := observe(obs, mb.Name, now).Since
		if keep < 0 || since.After(latest) {
			keep, latest = i, since
		}
	}
	if keep >= 0 {
		decisions[keep] = Decision{State: partmap.Active, Changed: layer.Members[keep].State != partmap.Active}
	}
	return decisions
}

// observe returns the observation of member name, or not Ready since now.
func observe(obs map[string]Observation, name string, now time.Time) Observation {
	if o, ok := obs[name]; ok {
		return o
	}
	return Observation{Ready: false, Since: now}
}

// elapsedSince is how long o has held at now; a future Since counts as 0.
func elapsedSince(o Observation, now time.Time) time.Duration {
	return max(now.Sub(o.Since), 0)
}
