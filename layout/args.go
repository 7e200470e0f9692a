package layout

import (
	"strconv"
	"time"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/failover"
)

// The command lines of the data-plane roles, shared by the operator's pod
// templates and standalone mode's local processes, so that a spec setting
// reaches a cache node or shim the same way in both.

// Map delivery lags: how old the map a data-plane process reads can be
// (the shims' --map-delivery-lag, docs/dataplane.md, Fencing).
const (
	// LocalMapDeliveryLag is that of a map file the control plane writes
	// on the processes' own host (standalone mode): none.
	LocalMapDeliveryLag = 0
	// APIMapDeliveryLag is that of the map read through the Kubernetes
	// API (package kubemap): every read is a GET without a
	// resourceVersion, a quorum read that returns what was committed
	// before it started, so the copy is never older than the read.
	APIMapDeliveryLag = 0
)

// NodeArgs are the `distcache node` arguments of member of layer l,
// serving on listen. The caller adds --map and --metrics-addr.
func (c *Cluster) NodeArgs(l Layer, member, listen string) []string {
	args := []string{
		"node", "--member=" + member,
		"--listen=" + listen,
		"--capacity=" + strconv.Itoa(int(max(l.Spec.Capacity.Entries, 0))),
		"--serving-lease=" + ServingLease(&c.Spec).String(),
	}
	if b := l.Spec.Capacity.Bytes; b != nil {
		args = append(args, "--capacity-bytes="+strconv.FormatInt(b.Value(), 10))
	}
	if d := c.Spec.HotKeys.Interval; d != nil {
		args = append(args, "--interval="+d.Duration.String())
	}
	if t := c.Spec.HotKeys.Threshold; t > 0 {
		args = append(args, "--hot-threshold="+strconv.Itoa(int(t)))
	}
	return append(args, DataPlaneArgs(&c.Spec)...)
}

// SwitchProgramming is how the fabric controller programs the cluster's
// switches: the serving lease every node and shim uses, the hot-key
// interval and threshold (0: the controller's defaults), and the
// switches' capacity (the first switch-backed layer's capacity.entries;
// 0: the default).
type SwitchProgramming struct {
	Lease        time.Duration
	Interval     time.Duration
	HotThreshold uint16
	Capacity     int
}

// SwitchProgramming is how the cluster's switches are programmed.
func (c *Cluster) SwitchProgramming() SwitchProgramming {
	p := SwitchProgramming{Lease: ServingLease(&c.Spec)}
	if d := c.Spec.HotKeys.Interval; d != nil {
		p.Interval = d.Duration
	}
	if t := c.Spec.HotKeys.Threshold; t > 0 {
		p.HotThreshold = uint16(min(t, 65535))
	}
	for _, l := range c.Layers {
		if !l.Software() && l.Spec.Capacity.Entries > 0 {
			p.Capacity = int(l.Spec.Capacity.Entries)
			break
		}
	}
	return p
}

// FabricArgs are the `distcache fabric` arguments of the cluster's
// switch-backed layers (SwitchProgramming).
func (c *Cluster) FabricArgs() []string {
	p := c.SwitchProgramming()
	args := []string{"--serving-lease=" + p.Lease.String()}
	if p.Interval > 0 {
		args = append(args, "--interval="+p.Interval.String())
	}
	if p.HotThreshold > 0 {
		args = append(args, "--hot-threshold="+strconv.Itoa(int(p.HotThreshold)))
	}
	if p.Capacity > 0 {
		args = append(args, "--capacity="+strconv.Itoa(p.Capacity))
	}
	return args
}

// DataPlaneArgs are the transport arguments that every cache node, shim
// and gateway of spec takes (spec.dataPlane).
func DataPlaneArgs(spec *v1alpha1.CacheClusterSpec) []string {
	if spec.DataPlane != nil && spec.DataPlane.Bundles {
		return []string{"--bundle"}
	}
	return nil
}

// ShimArgs are the `distcache shim` arguments of shard in front of the
// Redis at redisAddr, serving on listen, for processes that read their map
// with mapLag (LocalMapDeliveryLag or APIMapDeliveryLag). The caller adds
// --map and --metrics-addr.
func (c *Cluster) ShimArgs(shard, redisAddr, listen string, mapLag time.Duration) []string {
	return ShimArgs(&c.Spec, shard, redisAddr, listen, mapLag)
}

// ShimArgs is Cluster.ShimArgs for a spec that has not been laid out. The
// previous-map grace is raised to the lease plus mapLag when the spec's is
// shorter: a shim must remember a replaced map at least as long as it may
// wait for that map's owners.
func ShimArgs(spec *v1alpha1.CacheClusterSpec, shard, redisAddr, listen string, mapLag time.Duration) []string {
	lease := ServingLease(spec)
	args := []string{"shim", "--shard=" + shard, "--redis=" + redisAddr, "--listen=" + listen,
		"--serving-lease=" + lease.String()}
	if mapLag > 0 {
		args = append(args, "--map-delivery-lag="+mapLag.String())
	}
	if d := spec.Coherence.InvalidateTimeout; d != nil {
		args = append(args, "--invalidate-timeout="+d.Duration.String())
	}
	if d := spec.Coherence.PreviousMapGrace; d != nil || mapLag > 0 {
		grace := DefaultPreviousMapGrace
		if d != nil {
			grace = d.Duration
		}
		args = append(args, "--prev-map-grace="+max(grace, lease+mapLag).String())
	}
	return append(args, DataPlaneArgs(spec)...)
}

// LeaseMapPoll is how often a reader that renews serving leases by
// reading its map (a cache node, or the controller of a cluster's
// switches) reads it: every poll, and at least every quarter of the
// serving lease (docs/dataplane.md, Fencing). A poll of 0 is the quarter.
func LeaseMapPoll(lease, poll time.Duration) time.Duration {
	quarter := lease / 4
	if poll <= 0 {
		return quarter
	}
	return min(poll, quarter)
}

// BackstopMapPoll is how often a data-plane process that follows its map
// by a watch of the Kubernetes API also reads it: only in case the watch
// stalls, since every change reaches it through the watch within
// milliseconds. No lease depends on it: a shim that learns a change late
// only waits longer for the owners it released, a cache node reads its
// map at once when a shim's grant shows a newer one, and clients and
// gateways when a reply does.
const BackstopMapPoll = time.Minute

// NodeDrainTimeout is the most a cache node drains when it is told to stop
// (its --drain-timeout, package cachenode's drain.go): long enough for its
// map to show it fenced and for the shims to release it (twice the
// lease), plus a second for the map to arrive.
func NodeDrainTimeout(spec *v1alpha1.CacheClusterSpec) time.Duration {
	return 2*ServingLease(spec) + time.Second
}

// ServingLease is the spec's coherence.servingLease with the API's default.
func ServingLease(spec *v1alpha1.CacheClusterSpec) time.Duration {
	if d := spec.Coherence.ServingLease; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return DefaultServingLease
}

// RedisArgs are the redis-server arguments of a storage shard on port,
// working in dir, with the spec's append-only setting (AppendOnly) and no
// snapshots.
func RedisArgs(spec *v1alpha1.CacheClusterSpec, port int, dir string) []string {
	args := []string{"--port", strconv.Itoa(port), "--save", "", "--dir", dir}
	return append(args, AppendOnlyArgs(AppendOnly(spec))...)
}

// Failover and lease defaults: the API's documented defaults of
// spec.failover and spec.coherence.servingLease.
const (
	DefaultGracePeriod  = 30 * time.Second
	DefaultHoldDown     = 60 * time.Second
	DefaultServingLease = time.Second
	// DefaultPreviousMapGrace is spec.coherence.previousMapGrace's.
	DefaultPreviousMapGrace = 2 * time.Minute
)

// FailoverPolicy is the spec's failover section with the API's defaults,
// as the operator and the standalone control loop apply it, for processes
// that read their map with mapLag: members are fenced the serving lease
// plus mapLag before they fail (capped by failover.Policy), so that the
// shims may stop waiting for them as soon as they fail.
func FailoverPolicy(spec *v1alpha1.CacheClusterSpec, mapLag time.Duration) failover.Policy {
	p := failover.Policy{Grace: DefaultGracePeriod, HoldDown: DefaultHoldDown, FenceLead: ServingLease(spec) + mapLag}
	if d := spec.Failover.GracePeriod; d != nil && d.Duration > 0 {
		p.Grace = d.Duration
	}
	if d := spec.Failover.HoldDown; d != nil && d.Duration > 0 {
		p.HoldDown = d.Duration
	}
	return p
}
