// Package plan lays out a cache cluster as processes on one host: a
// redis-server and a storage shim per storage shard, a cache node per
// member of every software layer, the control loop that fails them over
// and a Redis-compatible gateway (`distcache gateway`) that Redis clients
// reach the cluster through, each on loopback ports chosen here, with the
// partition map (version 1) that addresses them.
//
// It starts from the shared topology (package topology), so the members,
// seeds and ring of a standalone cluster are those the operator would
// publish for the same YAML, and the processes get the same flags as the
// operator's pods (layout.NodeArgs, ShimArgs, RedisArgs). Only the
// addresses differ: loopback ports instead of pod DNS names.
//
// Capacity emulation (DistCache §6.1): the paper's testbed rate-limits each
// emulated storage server to an equal share of one Redis server and each
// emulated cache switch to the aggregate of the servers in one rack, so
// that a small testbed shows the balancing of many servers. Options.ShardRate
// gives every shim that emulated capacity and every cache node ShardRate ×
// shards per rack (or Options.NodeRate).
package plan

import (
	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/internal/freeport"

	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/placement/partmap"
)

// Kind is what a process runs.
type Kind string

// Kinds of processes.
const (
	Redis Kind = "redis" // redis-server of one storage shard
	Shim  Kind = "shim"  // storage shim of one shard
	Node  Kind = "node"  // cache node of one layer member
	// ControlLoop is the cluster's control loop (`distcache controlloop`):
	// it probes the nodes and publishes new map versions.
	ControlLoop Kind = "controlloop"
	// Gateway is the Redis-compatible gateway (`distcache gateway`): Addr
	// is its Redis (TCP) address.
	Gateway Kind = "gateway"
	// Prometheus is a Prometheus server scraping the cluster (`distcache
	// up --prometheus`): Addr is its web address.
	Prometheus Kind = "prometheus"
	// Switch is a software switch of a switch-backed layer's member
	// (`distcache switch`): Addr is its coherence address.
	Switch Kind = "switch"
	// ClientLeaf is a software switch running the client leaf program
	// (`distcache switch --program client_leaf`) for a client-leaf switch
	// of the cluster's fabric: Addr is its data address. It is no member
	// of the map: the control loop does not probe it.
	ClientLeaf Kind = "client-leaf"
	// Fabric is the controller that programs the switches and client
	// leaves (`distcache fabric`).
	Fabric Kind = "fabric"
)

// Process is one local process of the cluster.
type Process struct {
	// Name is unique in the plan: the member name of a node, the shard name
	// of a shim, the shard name + "-redis" of a Redis, the cluster name +
	// "-controlloop" of the control loop, the cluster name + "-gateway" of
	// the gateway.
	Name string
	Kind Kind
	// Shard is the storage shard of a shim or Redis; Layer the layer of a
	// node.
	Shard, Layer string
	// Path and Args are the command line.
	Path string
	Args []string
	// Addr is the data-plane UDP address of a shim or node, the TCP
	// address of a Redis, the Redis (TCP) address of the gateway, or the
	// web address of a Prometheus.
	Addr string
	// MetricsAddr is the /metrics and /healthz address of a shim, node,
	// the control loop or the gateway.
	MetricsAddr string
	// Dir is the working directory (a Redis keeps its append-only file
	// there, and finds it there again when restarted).
	Dir string
	// LogFile receives the process's output.
	LogFile string
	// Env is the process's environment on top of the supervisor's: the
	// GOMAXPROCS of a shim, node or control loop (gomaxprocs.go).
	Env []string
	// EmulatedRate is the emulated capacity in work units per second (0:
	// none).
	EmulatedRate float64
	// CPUGroup names the server whose CPU quota the process shares
	// (Options.ServerCPU): a storage shard's name for its Redis and shim,
	// a member's for its cache node; "" for none.
	CPUGroup string
	// ACLFile is the ACL file a Redis starts from (storage.auth), which
	// the cluster writes from Plan.RedisLogin before starting it.
	ACLFile string
	// Auth and TLS say that a gateway requires AUTH
	// (Options.GatewayUsersDir) and serves Redis clients over TLS
	// (Options.GatewayTLSCert).
	Auth, TLS bool
}

// Options are the host-specific settings of a plan.
type Options struct {
	// RunDir holds the map file, logs and Redis data.
	RunDir string
	// Binary is the distcache executable; RedisServer the redis-server one.
	Binary, RedisServer string
	// Prometheus, when set, is the prometheus executable: the plan runs one
	// that scrapes every process through TargetsFile.
	Prometheus string
	// NoGateway leaves out the Redis-compatible gateway the plan runs by
	// default (`distcache up --gateway=false`); so does the spec's
	// gateway.replicas 0.
	NoGateway bool
	// GatewayUsersDir, when set, is a directory with a file per user,
	// named as the user and holding its password: the gateway requires
	// AUTH (`distcache gateway --users-dir`, `distcache up
	// --gateway-users-dir`), standalone mode's spec.gateway.usersSecretName.
	// GatewayTLSCert and GatewayTLSKey, both or neither, are a PEM
	// certificate and its key: the gateway serves Redis clients over TLS
	// (--tls-cert, --tls-key), standalone mode's tlsSecretName. The gateway
	// reads them while it runs (the users at every AUTH, the certificate
	// when it changes). Check makes them absolute.
	GatewayUsersDir, GatewayTLSCert, GatewayTLSKey string
	// RedisAuthDir and RedisTLSDir stand for the Secrets of storage.auth
	// and storage.tls: a file per key (the password and previous password;
	// tls.crt, tls.key and the CA bundle), as a Secret is mounted
	// (rediscreds.go). Check makes them absolute.
	RedisAuthDir, RedisTLSDir string
	// SwitchPipelineDir stands for the ConfigMap or Secret of the fabrics'
	// pipelineSource, a file per key (switchpipeline.go).
	SwitchPipelineDir string
	// Host is the address every process listens on (default 127.0.0.1).
	Host string
	// ShardRate is the emulated capacity of a storage shard in work units
	// per second (0: not emulated).
	ShardRate float64
	// NodeRate is the emulated capacity of a cache node (0: ShardRate ×
	// shards per rack, the aggregate of one rack as in DistCache §6.1).
	NodeRate float64
	// MapPoll is how often the processes check the map file (0: their
	// default); the switches' controllers check it at least every quarter
	// of the serving lease, which they renew by reading it
	// (switchMapPoll). Cache nodes hold the shims' leases instead. Every
	// process also reads the file as soon as inotify says it changed
	// (mapwatch.File.Notify): the poll bounds how late a process may learn
	// of a new map when inotify is not available.
	MapPoll time.Duration
	// LogLevel is the processes' log level (default info).
	LogLevel string
	// Ports hands out free ports (default: freeport.Ports).
	Ports func(host string, tcp, udp int) (tcpPorts, udpPorts []int, err error)
	// GOMAXPROCS of the shims, cache nodes and control loop: 0 chooses it
	// from CPUs (MaxProcs); negative leaves the runtime's default (and a
	// GOMAXPROCS in the environment, which they inherit).
	GOMAXPROCS int
	// CPUs is the number of CPUs the processes share (default
	// runtime.NumCPU()).
	CPUs int
	// ServerCPU, when positive, is the CPU quota in CPUs of every server:
	// a storage shard's redis-server and shim together, and each cache
	// node (cpu.go).
	ServerCPU float64
	// Domains names the failure domains of cache members, by member name:
	// standalone mode's stand-in for the Kubernetes nodes and zones their
	// pods run on (`distcache up --member-domain`). The map places a key's
	// candidates on distinct hosts, and zones, where they allow it
	// (package partmap, failure domains).
	Domains map[string]Domain
}

// Plan is a cluster laid out on one host.
type Plan struct {
	Cluster *layout.Cluster
	// Map is version 1 of the partition map, with the processes' addresses.
	Map *partmap.Map
	// MapFile is where the map is published; every process reads it.
	MapFile string
	// DataPlaneKeyDir holds the cluster's data-plane key (package
	// wireauth): every shim and node gets it as --data-plane-key-dir, and
	// clients that find the cluster by its run directory use it too.
	DataPlaneKeyDir string
	// ControlLoopConfig is the control loop's configuration file, which
	// the cluster writes before starting it; EventsFile is where the loop
	// records member state changes.
	ControlLoopConfig, EventsFile string
	// Processes in start order: Redis servers, shims, cache nodes, the
	// control loop, the gateway (unless Options.NoGateway) and Prometheus
	// (with Options.Prometheus).
	Processes []Process
	// ShardRate and NodeRate are the emulated capacities (0: none).
	ShardRate, NodeRate float64
	// MetricsAddr is the supervisor's own /metrics address (`distcache
	// up`: its processes' restarts and readiness).
	MetricsAddr string
	// TargetsFile lists every /metrics address with its labels, in
	// Prometheus' file-based service discovery format (package promsd).
	TargetsFile string
	// PrometheusConfig is the configuration of the plan's Prometheus
	// (Options.Prometheus), which the cluster writes before starting it.
	PrometheusConfig string
	// GOMAXPROCS is that of the shims, cache nodes and control loop (0:
	// the runtime's default).
	GOMAXPROCS int
	// ServerCPU is Options.ServerCPU: each server's CPU quota (0: none).
	ServerCPU float64
	// RedisLogin is the shims' login to Redis (storage.auth and tls).
	RedisLogin redisconn.Settings
	// Persistence is what the Redis servers keep across crashes, as
	// layout.Persistence summarises it: "aof-always" or "aof-everysec"
	// (the append-only file in each Redis's Dir), "none", or "unmanaged"
	// (external Redis servers).
	Persistence string
}

// ErrUnsupported is wrapped when a spec asks for something only a
// Kubernetes cluster provides.
var ErrUnsupported = errors.New("not supported in standalone mode")

// New lays out c on one host. It refuses what Check refuses.
func New(c *layout.Cluster, o Options) (*Plan, error) {
	o = o.withDefaults()
	if err := Check(c, &o); err != nil {
		return nil, err
	}
	if o.NodeRate == 0 {
		o.NodeRate = o.ShardRate * float64(c.ShardsPerRack())
	}
	p := &Plan{
		RedisLogin: redisLogin(c, o), Cluster: c, MapFile: filepath.Join(o.RunDir, "map.json"), DataPlaneKeyDir: KeyDir(o.RunDir), ShardRate: o.ShardRate, NodeRate: o.NodeRate,
		ControlLoopConfig: filepath.Join(o.RunDir, "controlloop.json"), EventsFile: filepath.Join(o.RunDir, "events.jsonl"),
	}
	external := c.Spec.Storage.External
	p.Persistence = layout.Persistence(layout.AppendOnly(&c.Spec))
	if len(external) > 0 {
		p.Persistence = layout.PersistenceUnmanaged
	}
	shards := c.Racks() * c.ShardsPerRack()
	redises := shards
	if len(external) > 0 {
		redises = 0
	}
	members := 0
	for _, l := range c.SoftwareLayers() {
		members += c.Nodes(l)
	}
	// TCP: a port per Redis, a metrics port per shim, node, the control
	// loop and the supervisor, a Redis and a metrics port for the gateway
	// and a web port for Prometheus; UDP: a data-plane port per shim and
	// node.
	runGateway := runsGateway(c, o)
	gateway, prometheus := 0, 0
	if runGateway {
		gateway = 2
	}
	if o.Prometheus != "" {
		prometheus = 1
	}
	wantTCP, wantUDP := redises+shards+members+2+gateway+prometheus+switchPorts(c), shards+members
	tcpPorts, udpPorts, err := o.Ports(o.Host, wantTCP, wantUDP)
	if err != nil {
		return nil, fmt.Errorf("cannot lay out %s: %w", c.Name, err)
	}
	if len(tcpPorts) < wantTCP || len(udpPorts) < wantUDP {
		return nil, fmt.Errorf("cannot lay out %s: got %d TCP and %d UDP ports, want %d and %d", c.Name, len(tcpPorts), len(udpPorts), wantTCP, wantUDP)
	}
	tcp, udp := &portQueue{host: o.Host, ports: tcpPorts}, &portQueue{host: o.Host, ports: udpPorts}
	p.MetricsAddr = tcp.next()
	p.TargetsFile = filepath.Join(o.RunDir, "prometheus-targets.json")
	a := &addresser{members: map[string][]string{}, cluster: c.Name, domains: o.Domains}
	for r := range c.Racks() {
		for s := range c.ShardsPerRack() {
			shard := c.ShardName(r, s)
			var redis *Process
			redisAddr := ""
			if len(external) > 0 {
				redisAddr = external[r*c.ShardsPerRack()+s]
				a.redis = append(a.redis, redisAddr)
			} else {
				redisAddr = tcp.next()
				a.redis = append(a.redis, redisAddr)
				dir := filepath.Join(o.RunDir, "redis", shard)
				redis = &Process{
					Name: shard + "-redis", Kind: Redis, Shard: shard,
					Path: o.RedisServer, Args: redisArgs(c, o.Host, redisAddr, dir),
					Addr: redisAddr, Dir: dir, LogFile: o.log(shard + "-redis"),
				}
			}
			shimAddr, metricsAddr := udp.next(), tcp.next()
			a.shards = append(a.shards, shimAddr)
			shim := Process{
				Name: shard, Kind: Shim, Shard: shard, Path: o.Binary,
				Args:    o.roleArgs(append(c.ShimArgs(shard, redisAddr, shimAddr, layout.LocalMapDeliveryLag), shimLoginArgs(p.RedisLogin)...), metricsAddr, p, o.MapPoll, o.ShardRate),
				Addr:    shimAddr,
				LogFile: o.log(shard), MetricsAddr: metricsAddr, EmulatedRate: o.ShardRate,
			}
			if redis != nil {
				o.localRedisSecurity(c, redis, &shim)
				p.Processes = append(p.Processes, *redis)
			}
			p.Processes = append(p.Processes, shim)
		}
	}
	a.perRack = c.ShardsPerRack()
	for _, l := range c.SoftwareLayers() {
		for i := range c.Nodes(l) {
			member := partmap.MemberName(c.Name, l.Name, i)
			nodeAddr, metricsAddr := udp.next(), tcp.next()
			a.members[l.Name] = append(a.members[l.Name], nodeAddr)
			p.Processes = append(p.Processes, Process{
				Name: member, Kind: Node, Layer: l.Name, Path: o.Binary,
				Args:    o.roleArgs(c.NodeArgs(l, member, nodeAddr), metricsAddr, p, o.MapPoll, o.NodeRate),
				Addr:    nodeAddr,
				LogFile: o.log(member), MetricsAddr: metricsAddr, EmulatedRate: o.NodeRate,
			})
		}
	}
	if err := p.addSwitches(c, o, tcp); err != nil {
		return nil, err
	}
	loop, loopMetrics := c.Name+"-controlloop", tcp.next()
	p.Processes = append(p.Processes, Process{
		Name: loop, Kind: ControlLoop, Path: o.Binary,
		Args:    []string{"controlloop", "--config=" + p.ControlLoopConfig, "--metrics-addr=" + loopMetrics, "--log-level=" + o.LogLevel},
		LogFile: o.log(loop), MetricsAddr: loopMetrics,
	})
	if runGateway {
		p.addGateway(c, o, tcp)
	}
	if o.Prometheus != "" {
		dir, webAddr := filepath.Join(o.RunDir, "prometheus"), tcp.next()
		p.PrometheusConfig = filepath.Join(dir, "prometheus.yml")
		p.Processes = append(p.Processes, Process{
			Name: c.Name + "-prometheus", Kind: Prometheus, Path: o.Prometheus,
			Args: []string{"--config.file=" + p.PrometheusConfig, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
				"--storage.tsdb.retention.time=1d", "--web.listen-address=" + webAddr, "--log.level=warn"},
			Addr: webAddr, Dir: dir, LogFile: o.log(c.Name + "-prometheus"),
		})
	}
	if p.Map, err = firstMap(c, a); err != nil {
		return nil, err
	}
	p.setMaxProcs(o)
	p.setCPUGroups(o)
	if err := p.checkNames(); err != nil {
		return nil, err
	}
	return p, nil
}

// Check refuses what New would refuse before anything is laid out: a
// spec that needs Kubernetes (Secrets without their files) or switches
// standalone mode cannot run (checkSwitches), and gateway files (o.GatewayUsersDir, GatewayTLSCert,
// GatewayTLSKey) that are missing, unreadable, not a certificate and its
// key, or given to a plan that runs no gateway. It makes those paths
// absolute. `distcache up` calls it before it starts the cluster in the
// background, so that such a mistake is its own error rather than a line
// in the log of the process that runs the cluster.
func Check(c *layout.Cluster, o *Options) error {
	if err := o.checkSwitches(c); err != nil {
		return err
	}
	if err := checkDomains(c, o.Domains); err != nil {
		return err
	}
	g := c.Spec.Gateway
	if g.UsersSecretName != "" {
		return fmt.Errorf("cannot run the gateway with usersSecretName %s: standalone mode has no Secrets: pass the users as files with distcache up --gateway-users-dir DIR (a file per user, named as the user, holding its password): %w",
			g.UsersSecretName, ErrUnsupported)
	}
	if g.TLSSecretName != "" {
		return fmt.Errorf("cannot run the gateway with tlsSecretName %s: standalone mode has no Secrets: pass the certificate as files with distcache up --gateway-tls-cert FILE --gateway-tls-key FILE (PEM): %w",
			g.TLSSecretName, ErrUnsupported)
	}
	if err := o.checkRedisDirs(c); err != nil {
		return err
	}
	if dp := c.Spec.DataPlane; dp != nil && dp.DirectReads && o.ShardRate > 0 {
		return fmt.Errorf("cannot emulate the shards' capacity with spec.dataPlane.directReads: clients would read misses from Redis past the shims that count it; turn one off")
	}
	if dp := c.Spec.DataPlane; dp != nil && dp.DirectWrites && !dp.DirectReads {
		return fmt.Errorf("cannot write directly without spec.dataPlane.directReads: clients write to the Redis servers they read")
	}
	return o.checkGatewayFiles(runsGateway(c, *o))
}

// checkNames verifies that every process has a name of its own and that
// the map names every shim and node as the plan does: the processes find
// themselves in the map by these names.
func (p *Plan) checkNames() error {
	seen := map[string]bool{}
	for _, pr := range p.Processes {
		if seen[pr.Name] {
			return fmt.Errorf("cannot lay out %s: two processes are named %s", p.Cluster.Name, pr.Name)
		}
		seen[pr.Name] = true
		switch pr.Kind {
		case Node:
			if _, _, ok := p.Map.Member(pr.Name); !ok {
				return fmt.Errorf("cannot lay out %s: member %s is not in the partition map", p.Cluster.Name, pr.Name)
			}
		case Shim:
			if _, _, ok := p.Map.StorageShard(pr.Name); !ok {
				return fmt.Errorf("cannot lay out %s: shard %s is not in the partition map", p.Cluster.Name, pr.Name)
			}
		}
	}
	return nil
}

// Process returns the process named name.
func (p *Plan) Process(name string) (Process, bool) {
	for _, pr := range p.Processes {
		if pr.Name == name {
			return pr, true
		}
	}
	return Process{}, false
}

func (o Options) withDefaults() Options {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.Ports == nil {
		o.Ports = freeport.Ports
	}
	return o
}

// KeyDir is the data-plane key directory of the cluster whose run
// directory is runDir.
func KeyDir(runDir string) string { return filepath.Join(runDir, "data-plane-key") }

func (o Options) log(name string) string { return filepath.Join(o.RunDir, "logs", name+".log") }

// portQueue hands out the free ports of a plan, each once, in order.
type portQueue struct {
	host  string
	ports []int
}

// next is the address of the next port. New checks that Options.Ports
// returned as many as it takes.
func (q *portQueue) next() string {
	port := q.ports[0]
	q.ports = q.ports[1:]
	return hostPort(q.host, port)
}

// addresser places the planned addresses into the map.
type addresser struct {
	shards  []string            // shim addresses, rack by rack
	redis   []string            // the plan's own redis-servers, rack by rack; none for external Redis
	perRack int                 // shards per rack
	members map[string][]string // layer → member addresses by ordinal
	cluster string
	domains map[string]Domain // by member name (Options.Domains)
}

func (a *addresser) ShardAddress(rack, shard int) string { return a.shards[rack*a.perRack+shard] }

// RedisAddress is the shard's Redis: the redis-server the plan starts for
// it, or its external endpoint. Clients read it directly with
// spec.dataPlane.directReads, logged in as the shims are.
func (a *addresser) RedisAddress(rack, shard int) string {
	if i := rack*a.perRack + shard; i < len(a.redis) {
		return a.redis[i]
	}
	return ""
}

func (a *addresser) MemberAddress(layer string, i int) string {
	if m := a.members[layer]; i < len(m) {
		return m[i]
	}
	return ""
}
