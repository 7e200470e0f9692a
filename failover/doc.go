// Package failover decides when a cache member is fenced and marked Failed
// in the partition map and when it is restored to Active.
//
// DistCache (FAST '19, §4.4) handles a cache node failure in the controller:
// the failed switch or node is removed from its layer's consistent-hash ring,
// so only its 1/n share of the layer's keys moves, spread over the survivors,
// while the other layers keep serving those keys meanwhile. When the node
// recovers it is added back and takes back exactly that share. In this
// repository the ring is built by partmap.Compile, which skips Failed
// members, so this package only decides member states; the control loop (the
// Kubernetes operator, or the standalone control loop) publishes the map it
// returns.
//
// # Algorithm
//
// For every member the control loop supplies an Observation: whether the
// member is Ready and since when (the pod's Ready condition's
// lastTransitionTime, or when the controller first saw it so). Decide then
// applies a two-threshold hysteresis:
//
//   - an Active member that has not been Ready for the grace period less
//     Policy.FenceLead (at most half of it), or for Policy.FenceAfter if
//     that is shorter, is marked Fenced: it keeps its
//     keys, so writes still invalidate it, but it serves no cached value and
//     readers leave it; a Fenced member that is Ready again is Active at
//     once;
//   - a member that has not been Ready for at least Policy.Grace is marked
//     Failed;
//   - a Failed member that has been Ready for at least Policy.HoldDown is
//     marked Active again;
//   - otherwise the state is kept, and Decision.Recheck says when the running
//     grace period or hold-down ends, so the loop can requeue exactly then.
//
// Apply runs Decide over a whole map, returns the next version (the input
// itself when nothing changed) and the transitions for events and logs. It
// never fails the last active member of a layer: a layer without active
// members owns no keys, and every read of the layer would find no owner.
//
// # Why fence first
//
// A shim may stop waiting for a member's acknowledgement of an invalidation
// only once the member can no longer serve a cached value (docs/dataplane.md,
// Fencing): a member serves only under a lease it renews by reading the map,
// so the shim waits for the lease to run out after it learns that the member
// left. Fencing the member that long before failing it moves that wait into
// the grace period, where the member is being waited for anyway. A
// controller that probes often does better with FenceAfter: it fences a
// member a few missed probes after it stopped answering, so writes of the
// member's keys stall for about that plus the lease, not the grace period,
// while the keys stay where they are until the grace period is over.
//
// # Why hysteresis
//
// A member that misses one readiness probe, or restarts quickly, should not
// move its keys: every move empties caches on the new owners and sends the
// hot keys' load to storage until they warm up. The grace period absorbs
// short blips. Symmetrically, a member that comes back must stay Ready for a
// hold-down period before it takes its share back, so a crash-looping member
// does not move the same keys back and forth on every restart.
//
// # Why decisions depend only on observations
//
// Decide is a pure function of the member's current state, its observation
// and the time; Apply is Decide over the map plus the last-active rule. The
// controller keeps no timers or counters of its own: the running periods are
// recovered from Since. A controller that restarts, or a standby that takes
// over leadership, re-reads the published map and the same observations and
// reaches the same answer, so failover neither flaps nor forgets a period
// that was already running.
package failover
