package plan

import (
	"strconv"
	"time"

	"github.com/distcache/distcache/layout"
)

// roleArgs completes the command line of a shim, node or gateway: the
// map (polled every poll, unless 0), the data-plane key and its replay
// protection (replayArgs), metrics and logs,
// and an emulated capacity unless rate is 0.
func (o Options) roleArgs(args []string, metricsAddr string, p *Plan, poll time.Duration, rate float64) []string {
	args = append(args, "--map="+p.MapFile, "--data-plane-key-dir="+p.DataPlaneKeyDir)
	args = append(append(args, replayArgs(p.Cluster)...), "--metrics-addr="+metricsAddr, "--log-level="+o.LogLevel)
	if poll > 0 {
		args = append(args, "--map-poll="+poll.String())
	}
	if rate > 0 {
		args = append(args, "--emulated-capacity="+strconv.FormatFloat(rate, 'f', -1, 64))
	}
	return args
}

// redisArgs are a local Redis's arguments: the operator's (with the
// append-only file in dir), bound to host and in the foreground.
func redisArgs(c *layout.Cluster, host, addr, dir string) []string {
	_, port := splitPort(addr)
	args := layout.RedisArgs(&c.Spec, port, dir)
	return append(args, "--bind", host, "--daemonize", "no")
}
