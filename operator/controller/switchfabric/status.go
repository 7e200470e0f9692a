package switchfabric

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/stratum"
)

// Events of the switches' sessions.
const (
	// EventSwitchProgrammed: the operator became a switch's primary: it
	// pushed the pipeline (the switch starts with an empty cache and no
	// lease) or took over a switch that runs it, with its cache.
	EventSwitchProgrammed = "SwitchProgrammed"
	// EventSwitchLost: a programmed switch's session ended; the event's
	// note carries the reason (SwitchUnreachable, MastershipLost,
	// PipelineMismatch).
	EventSwitchLost = "SwitchLost"
)

// setStatus fills the fabric's status from what the phases found and
// from its fleet's sessions; before are the switch statuses as fetched.
func (r *Reconciler) setStatus(s *state, before []v1alpha1.SwitchStatus) {
	f := s.f
	f.Status.Switches = map[string]int32{}
	for _, sw := range f.Spec.Switches {
		f.Status.Switches[string(sw.Role)]++
	}
	switch {
	case s.blocked != nil:
		f.Status.Cluster, f.Status.SwitchStatuses, f.Status.Pipeline = "", nil, nil
		reason, msg := s.blocked.Reason, s.blocked.Message
		set(f, v1alpha1.ConditionReady, false, reason, msg)
		set(f, v1alpha1.ConditionProgressing, false, reason, msg)
		set(f, v1alpha1.ConditionDegraded, reason != v1alpha1.ReasonNotInUse, reason, msg)
		return
	case s.run == nil:
		// A phase failed (the API): the fleet, if one runs, goes on, and
		// the switches' statuses stay as they were rather than read as
		// gone, which the CacheCluster controller would fail over.
		return
	}
	f.Status.Cluster = s.binding.Cluster
	var pushed map[string]bool
	f.Status.SwitchStatuses, pushed = switchStatuses(s.run, before)
	f.Status.Pipeline = pipelineStatus(s.run)
	r.recordSessions(f, before, pushed)
	setConditions(f)
	if c := s.pipelineIssue; c != nil {
		// The switches serve on with the build they have; the fabric does
		// not run what its spec asks.
		set(f, v1alpha1.ConditionReady, false, c.Reason, c.Message)
		set(f, v1alpha1.ConditionDegraded, true, c.Reason, c.Message)
	}
}

// pipelineStatus is what status.pipeline says of the build rn's
// switches get.
func pipelineStatus(rn *running) *v1alpha1.PipelineStatus {
	rn.upgrade.Lock()
	b := rn.build
	rn.upgrade.Unlock()
	return &v1alpha1.PipelineStatus{Source: b.source, Digest: b.digest, Cookie: b.p.CookieHex(),
		DeviceConfigBytes: int64(len(b.p.DeviceConfig)), Since: &metav1.Time{Time: b.since}}
}

// switchStatuses reads each switch's session from the fleet, the client
// leaves' after the cache switches', and whether the session that
// programmed it pushed the pipeline (a client leaf's always does). A
// switch whose session is claiming mastership keeps its status from
// before: this replica has just become the leader and takes it over from
// the replica that was primary.
func switchStatuses(rn *running, before []v1alpha1.SwitchStatus) ([]v1alpha1.SwitchStatus, map[string]bool) {
	old := map[string]v1alpha1.SwitchStatus{}
	for _, ss := range before {
		old[ss.Name] = ss
	}
	out := make([]v1alpha1.SwitchStatus, 0, len(rn.binding.Switches)+len(rn.binding.ClientLeaves))
	pushed := map[string]bool{}
	for _, sm := range rn.binding.Switches {
		st := rn.runners[sm.Switch.Name].State()
		if o, ok := old[sm.Switch.Name]; ok && st.Claiming && o.Member == sm.Member {
			out = append(out, o)
			continue
		}
		pushed[sm.Switch.Name] = st.Pushed
		out = append(out, switchStatus(rn, sm.Switch.Name, sm.Member, sm.Member))
	}
	for _, ss := range clientLeafStatuses(rn) {
		pushed[ss.Name] = true
		out = append(out, ss)
	}
	return out, pushed
}

// switchStatus is the status of switch name, member of the map (""
// for none), inFleet in the fleet.
func switchStatus(rn *running, name, member, inFleet string) v1alpha1.SwitchStatus {
	st := rn.runners[name].State()
	ss := v1alpha1.SwitchStatus{Name: name, Member: member, Programmed: st.Programmed,
		Since: &metav1.Time{Time: st.Since}, Sessions: int32(min(st.Sessions, 1<<31-1))}
	if c, ok := rn.runners[name].(interface{ RunningCookie() uint64 }); ok && st.Programmed && c.RunningCookie() != 0 {
		ss.Cookie = fmt.Sprintf("%#016x", c.RunningCookie())
	}
	if !st.Programmed && st.Err != nil {
		ss.Reason, ss.Message = notProgrammedReason(st.Err), st.Err.Error()
	}
	ports, up := rn.fleet.Ports(inFleet)
	ss.Ports, ss.PortsUp = int32(ports), int32(up)
	return ss
}

// notProgrammedReason classifies why a session ended or could not start.
func notProgrammedReason(err error) string {
	switch {
	case errors.Is(err, cacheswitch.ErrBackup), errors.Is(err, stratum.ErrNotPrimary):
		return v1alpha1.ReasonMastershipLost
	case errors.Is(err, stratum.ErrPipelineRejected):
		return v1alpha1.ReasonPipelineMismatch
	default:
		return v1alpha1.ReasonSwitchUnreachable
	}
}

// setConditions sets Ready (every switch programmed), Progressing (a
// switch has not been reached yet) and Degraded (a switch is not
// programmed: it is failed over, its keys served by the layers below).
func setConditions(f *v1alpha1.SwitchFabric) {
	var down, starting []string
	reason := ""
	for _, ss := range f.Status.SwitchStatuses {
		switch {
		case ss.Programmed:
		case ss.Reason == "":
			starting = append(starting, ss.Name)
		default:
			down = append(down, ss.Name+" ("+ss.Reason+": "+ss.Message+")")
			reason = worse(reason, ss.Reason)
		}
	}
	n := len(f.Status.SwitchStatuses)
	programmed := n - len(down) - len(starting)
	msg := fmt.Sprintf("%d of %d switches programmed for CacheCluster %s", programmed, n, f.Status.Cluster)
	switch {
	case len(down) > 0:
		set(f, v1alpha1.ConditionReady, false, reason, msg+"; not: "+strings.Join(down, "; "))
	case len(starting) > 0:
		set(f, v1alpha1.ConditionReady, false, v1alpha1.ReasonCreating, msg)
	default:
		set(f, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled, msg)
	}
	if len(starting) > 0 {
		set(f, v1alpha1.ConditionProgressing, true, v1alpha1.ReasonCreating, "dialing "+strings.Join(starting, ", "))
	} else {
		set(f, v1alpha1.ConditionProgressing, false, v1alpha1.ReasonReconciled, "every switch has been dialed")
	}
	if len(down) > 0 {
		set(f, v1alpha1.ConditionDegraded, true, reason, strings.Join(down, "; "))
	} else {
		set(f, v1alpha1.ConditionDegraded, false, v1alpha1.ReasonReconciled, "no switch is lost")
	}
}

// worse is the reason to report of a and b: a pipeline mismatch needs a
// fix, mastership needs the other controller gone, an unreachable switch
// may come back.
func worse(a, b string) string {
	rank := map[string]int{"": 0, v1alpha1.ReasonSwitchUnreachable: 1, v1alpha1.ReasonMastershipLost: 2, v1alpha1.ReasonPipelineMismatch: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// recordSessions emits an event for every switch programmed in a new
// session (pushed says which pushed the pipeline) or lost since before.
func (r *Reconciler) recordSessions(f *v1alpha1.SwitchFabric, before []v1alpha1.SwitchStatus, pushed map[string]bool) {
	if r.Recorder == nil {
		return
	}
	old := map[string]v1alpha1.SwitchStatus{}
	for _, ss := range before {
		old[ss.Name] = ss
	}
	for _, ss := range f.Status.SwitchStatuses {
		o, known := old[ss.Name]
		// Regarding the switch's entry of the fabric: events of several
		// switches are each an event of their own, not a series of the
		// first (client-go aggregates events alike but for the note).
		sw := &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "SwitchFabric", Namespace: f.Namespace,
			Name: f.Name, UID: f.UID, FieldPath: fmt.Sprintf("spec.switches{%s}", ss.Name)}
		who, starts, meanwhile := fmt.Sprintf("switch %s (member %s)", ss.Name, ss.Member), "it starts with an empty cache", "it is failed over until programmed again"
		if ss.Member == "" {
			who, starts, meanwhile = "client leaf "+ss.Name, "its tables are written from the map", "its tables are not kept from the map until programmed again"
		}
		switch {
		case ss.Programmed && (!known || !o.Programmed || o.Sessions != ss.Sessions) && pushed[ss.Name]:
			r.Recorder.Eventf(sw, nil, corev1.EventTypeNormal, EventSwitchProgrammed, "Program",
				"%s programmed in session %d: pipeline pushed, %s", who, ss.Sessions, starts)
		case ss.Programmed && (!known || !o.Programmed || o.Sessions != ss.Sessions):
			r.Recorder.Eventf(sw, nil, corev1.EventTypeNormal, EventSwitchProgrammed, "Program",
				"%s taken over in session %d: it runs the pipeline already and keeps its cache", who, ss.Sessions)
		case !ss.Programmed && known && o.Programmed:
			r.Recorder.Eventf(sw, nil, corev1.EventTypeWarning, EventSwitchLost, "Program",
				"%s lost: %s: %s; %s", who, ss.Reason, ss.Message, meanwhile)
		}
	}
}

func set(f *v1alpha1.SwitchFabric, t v1alpha1.ConditionType, ok bool, reason, msg string) {
	v1alpha1.SetCondition(&f.Status.Conditions, f.Generation, t, ok, reason, msg)
}
