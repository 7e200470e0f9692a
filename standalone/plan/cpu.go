package plan

import (
	"math"
	"strconv"
)

// Real CPU instead of emulated capacity: with Options.ServerCPU each
// server of the cluster runs under a CPU quota of its own (package
// cpuquota), as a pod with a CPU limit would — a storage shard's
// redis-server and shim share one, since together they are the shard's
// storage server, and each cache node has one. Benchmarks then measure
// what the processes cost on equal CPU (docs/benchmarks.md, make
// bench-real-cpu). The Go processes among them get a GOMAXPROCS of the
// quota rounded up, as the runtime would take from a pod's limit.

// setCPUGroups names the CPU group of every Redis, shim and cache node
// when o.ServerCPU is set.
func (p *Plan) setCPUGroups(o Options) {
	if o.ServerCPU <= 0 {
		return
	}
	p.ServerCPU = o.ServerCPU
	procs := strconv.Itoa(max(1, int(math.Ceil(o.ServerCPU))))
	for i := range p.Processes {
		pr := &p.Processes[i]
		switch pr.Kind {
		case Redis, Shim:
			pr.CPUGroup = pr.Shard
		case Node:
			pr.CPUGroup = pr.Name
		default:
			continue
		}
		if pr.Kind != Redis {
			pr.Env = []string{"GOMAXPROCS=" + procs}
		}
	}
}
