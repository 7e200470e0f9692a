package plan

import (
	"runtime"
	"strconv"
)

// A standalone cluster runs all its processes on one host, where a
// Kubernetes cluster would give each pod CPUs of its own (and a CPU limit,
// from which the Go runtime takes its GOMAXPROCS). The demo's 32 shims and
// 12 cache nodes on a 2-CPU machine each default to one P per CPU: their
// schedulers look for work on the other P before they sleep, and wake each
// other's threads for every datagram, which on such a machine costs more
// than the requests do. So the shims, cache nodes and control loop get a
// GOMAXPROCS of MaxProcs: together the Go processes' Ps are about twice
// the CPUs, as per-pod CPU limits would make them. The gateway, which
// every Redis client goes through, keeps the runtime's default, as do
// Redis and Prometheus. docs/benchmarks.md has the measurement.

// MaxProcs is the GOMAXPROCS of each of goProcs Go processes sharing cpus
// CPUs: ⌈2·cpus/goProcs⌉, at least 1 and at most cpus (the runtime's
// default); 0 (leave the default) when either is unknown.
func MaxProcs(goProcs, cpus int) int {
	if cpus <= 0 || goProcs <= 0 {
		return 0
	}
	return min(cpus, (2*cpus+goProcs-1)/goProcs)
}

// setMaxProcs sets the GOMAXPROCS of the shims, cache nodes and control
// loop of p (Options.GOMAXPROCS, or MaxProcs when it is 0) in their
// environment and in p.GOMAXPROCS.
func (p *Plan) setMaxProcs(o Options) {
	n := o.GOMAXPROCS
	if n == 0 {
		goProcs := 0
		for _, pr := range p.Processes {
			if pr.Kind != Redis && pr.Kind != Prometheus {
				goProcs++
			}
		}
		cpus := o.CPUs
		if cpus == 0 {
			cpus = runtime.NumCPU()
		}
		n = MaxProcs(goProcs, cpus)
	}
	if n <= 0 {
		return
	}
	p.GOMAXPROCS = n
	for i := range p.Processes {
		switch p.Processes[i].Kind {
		case Shim, Node, ControlLoop:
			p.Processes[i].Env = []string{"GOMAXPROCS=" + strconv.Itoa(n)}
		}
	}
}
