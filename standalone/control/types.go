// Package control is the local API of a standalone cluster: the running
// `distcache up` serves it on a Unix socket in its run directory, and
// `distcache status`, `down` and `bench` use it. It plays the part the
// Kubernetes API plays for the operator: the cluster's status, and the
// requests to kill a process (a crash, for failure experiments), restart it,
// pause and resume it (a hang), slow it down (a gray failure) and shut the
// cluster down.
//
// Endpoints (JSON):
//
//	GET  /v1/status                              Status
//	GET  /v1/work                                []Process, freshly scraped loads
//	POST /v1/processes/{name}/kill               SIGKILL, held down until restart
//	POST /v1/processes/{name}/restart            start it again
//	POST /v1/processes/{name}/pause              SIGSTOP, neither exited nor restarted until resume
//	POST /v1/processes/{name}/resume             SIGCONT (a no-op unless paused)
//	POST /v1/processes/{name}/slow?delay=100ms   delay every UDP datagram its data-plane socket sends
//	POST /v1/processes/{name}/unslow             stop delaying them (a no-op unless slowed)
//	POST /v1/shutdown                            stop every process and exit
//
// A failed request answers {"error": "..."} with 404 for an unknown
// process, 400 for a malformed request and 500 otherwise.
//
// Slowing a shim or cache node holds every datagram sent from its
// data-plane port (replies and requests alike) for the delay before it
// leaves, on the host's loopback: the cluster's own process queues them
// (NFQUEUE; see standalone/faults), which needs root and
// iptables-legacy. Slowing a slowed process changes its delay; the delay
// outlives restarts of the process (it follows its port) and ends with the
// cluster.
package control

import (
	"path/filepath"
	"time"
)

// SocketName is the control socket's file name in the run directory.
const SocketName = "control.sock"

// SocketPath is the control socket of the cluster running in runDir.
func SocketPath(runDir string) string { return filepath.Join(runDir, SocketName) }

// Phase is a cluster's overall state.
type Phase string

// Phases.
const (
	Starting Phase = "Starting" // processes starting, not all ready yet
	Ready    Phase = "Ready"    // every process ready, every member active
	Degraded Phase = "Degraded" // a process (or the control loop) is not ready, or a member is not active
	Stopping Phase = "Stopping" // shutting down
)

// Status is a cluster's state.
type Status struct {
	Cluster    string    `json:"cluster"`
	Phase      Phase     `json:"phase"`
	RunDir     string    `json:"runDir"`
	MapFile    string    `json:"mapFile"`
	MapVersion int64     `json:"mapVersion"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	// MetricsAddr is the supervisor's own /metrics address; TargetsFile
	// lists every process's, for Prometheus' file-based service discovery.
	MetricsAddr string `json:"metricsAddr,omitempty"`
	TargetsFile string `json:"targetsFile,omitempty"`
	// ShardRate and NodeRate are the emulated capacities in work units per
	// second (0: not emulated).
	ShardRate float64 `json:"shardRate,omitempty"`
	NodeRate  float64 `json:"nodeRate,omitempty"`
	// AdaptiveCopies reports that the control loop decides the copies of
	// hot keys by cost and benefit (distcache up --adaptive-copies).
	AdaptiveCopies bool `json:"adaptiveCopies,omitempty"`
	// Bundles reports that the data plane sends bundles
	// (spec.dataPlane.bundles): the cluster's clients may too.
	Bundles bool `json:"bundles,omitempty"`
	// Persistence is what the Redis servers keep across crashes:
	// "aof-always" or "aof-everysec" (each redis-server's append-only file
	// in the run directory's redis/<shard>/), "none" (memory only) or
	// "unmanaged" (external Redis servers).
	Persistence string    `json:"persistence"`
	Layers      []Layer   `json:"layers"`
	Processes   []Process `json:"processes"`
	Events      []Event   `json:"events,omitempty"`
}

// Layer is one cache layer's shape.
type Layer struct {
	Name         string `json:"name"`
	Nodes        int    `json:"nodes"`
	BoundToRacks bool   `json:"boundToRacks,omitempty"`
	// Entries is each node's cache capacity in entries.
	Entries int `json:"entries"`
}

// Process is one process of the cluster.
type Process struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // redis, shim, node, controlloop, gateway or prometheus
	Layer string `json:"layer,omitempty"`
	Shard string `json:"shard,omitempty"`
	// State is the supervisor's: Running, Backoff, Held, Paused or
	// Stopped.
	State string `json:"state"`
	// Slowed is the delay of every datagram the process's data-plane
	// socket sends, e.g. "100ms", while it is slowed ("" otherwise).
	Slowed string `json:"slowed,omitempty"`
	// MemberState is a node's state in the published map: Active, Fenced
	// or Failed.
	MemberState string `json:"memberState,omitempty"`
	Ready       bool   `json:"ready"`
	PID         int    `json:"pid,omitempty"`
	Restarts    int    `json:"restarts"`
	Addr        string `json:"addr"`
	MetricsAddr string `json:"metricsAddr,omitempty"`
	LogFile     string `json:"logFile"`
	// Auth and TLS say that a gateway requires AUTH and serves Redis
	// clients over TLS (`distcache up --gateway-users-dir`,
	// `--gateway-tls-cert`).
	Auth bool `json:"auth,omitempty"`
	TLS  bool `json:"tls,omitempty"`
	// WorkUnits is the cumulative work done (emulated cost units), Capacity
	// the emulated units per second (0: unlimited), Load the work rate over
	// the last scrape period, Coherence a shim's invalidations and updates
	// sent.
	WorkUnits uint64  `json:"workUnits"`
	Capacity  float64 `json:"capacity"`
	Load      float64 `json:"load"`
	Coherence uint64  `json:"coherence,omitempty"`
	// CPUGroup is the cgroup directory of the process's CPU quota and
	// CPUQuota that quota in CPUs (`distcache up --server-cpu`; "" and 0
	// without one).
	CPUGroup string  `json:"cpuGroup,omitempty"`
	CPUQuota float64 `json:"cpuQuota,omitempty"`
}

// Event is a member state change the control loop published in the map,
// as recorded in the run directory's events file.
type Event struct {
	Time       time.Time `json:"time"`
	Layer      string    `json:"layer"`
	Member     string    `json:"member"`
	From       string    `json:"from"`
	To         string    `json:"to"`
	MapVersion int64     `json:"mapVersion"`
}
