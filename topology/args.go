package topology

import (
	"strconv"
	"time"

	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/operator/api/v1alpha1"
)

// The command lines of the data-plane roles, shared by the operator's pod
// templates and standalone mode's local processes, so that a spec setting
// reaches a cache node or shim the same way in both.

// NodeArgs are the `distcache node` arguments of member of layer l,
// serving on listen. The caller adds --map and --metrics-addr.
func (c *Cluster) NodeArgs(l Layer, member, listen string) []string {
	args := []string{
		"node", "--member=" + member,
		"--listen=" + listen,
		"--capacity=" + strconv.Itoa(int(max(l.Spec.Capacity.Entries, 0))),
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
	return args
}

// ShimArgs are the `distcache shim` arguments of shard in front of the
// Redis at redisAddr, serving on listen. The caller adds --map and
// --metrics-addr.
func (c *Cluster) ShimArgs(shard, redisAddr, listen string) []string {
	return ShimArgs(&c.Spec, shard, redisAddr, listen)
}

// ShimArgs is Cluster.ShimArgs for a spec that has not been laid out.
func ShimArgs(spec *v1alpha1.CacheClusterSpec, shard, redisAddr, listen string) []string {
	args := []string{"shim", "--shard=" + shard, "--redis=" + redisAddr, "--listen=" + listen}
	if d := spec.Coherence.InvalidateTimeout; d != nil {
		args = append(args, "--invalidate-timeout="+d.Duration.String())
	}
	if d := spec.Coherence.PreviousMapGrace; d != nil {
		args = append(args, "--prev-map-grace="+d.Duration.String())
	}
	return args
}

// RedisArgs are the redis-server arguments of a storage shard on port,
// working in dir, with the spec's append-only setting (AppendOnly) and no
// snapshots.
func RedisArgs(spec *v1alpha1.CacheClusterSpec, port int, dir string) []string {
	args := []string{"--port", strconv.Itoa(port), "--save", "", "--dir", dir}
	return append(args, AppendOnlyArgs(AppendOnly(spec))...)
}

// Failover defaults: the API's documented defaults of spec.failover.
const (
	DefaultGracePeriod = 30 * time.Second
	DefaultHoldDown    = 60 * time.Second
)

// FailoverPolicy is the spec's failover section with the API's defaults,
// as the operator and the standalone control loop apply it.
func FailoverPolicy(spec *v1alpha1.CacheClusterSpec) failover.Policy {
	p := failover.Policy{Grace: DefaultGracePeriod, HoldDown: DefaultHoldDown}
	if d := spec.Failover.GracePeriod; d != nil && d.Duration > 0 {
		p.Grace = d.Duration
	}
	if d := spec.Failover.HoldDown; d != nil && d.Duration > 0 {
		p.HoldDown = d.Duration
	}
	return p
}
