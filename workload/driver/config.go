package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
)

// Mode is a system the driver benchmarks.
type Mode string

const (
	// NoCache is the paper's baseline: every read goes straight to the
	// key's storage shim (client.Config.Bypass).
	NoCache Mode = "nocache"
	// DistCache routes reads over the cache layers by power-of-two-choices.
	DistCache Mode = "distcache"
	// Twemproxy is a sharding Redis proxy without a cache (twemproxy) in
	// front of the cluster's own Redis servers: every operation goes to
	// its key's Redis by the proxy's consistent hashing, past the shims.
	// Its operations go through Config.Twemproxy, on keys of their own
	// (twemproxyPrefix), and its loads are the Redis servers' commands
	// (RedisWorker).
	Twemproxy Mode = "twemproxy"
)

// modeOrder is the order modes run in: Twemproxy first, before any cache
// node holds a copy.
var modeOrder = []Mode{Twemproxy, NoCache, DistCache}

// Defaults applied to zero fields of Config.
const (
	DefaultKeys          = 100_000
	DefaultSkew          = 0.99
	DefaultValueSize     = 128
	DefaultDuration      = 10 * time.Second
	DefaultConcurrency   = 64
	DefaultClients       = 4
	DefaultPreload       = 1000
	DefaultWarmup        = 3 * time.Second
	DefaultInterval      = 250 * time.Millisecond
	DefaultProbeDuration = 3 * time.Second
	DefaultOpTimeout     = 2 * time.Second
	DefaultCheckTimeout  = 2 * time.Minute
	DefaultMapPoll       = 50 * time.Millisecond
)

// MaxHotRacksKeys bounds the key space of a run with Config.HotRacks: its
// permutations are tables of 8 bytes a key.
const MaxHotRacksKeys = 10_000_000

// Probe constants (package doc): the probe offers probeLoad × the storage
// servers' summed capacity, and the measured rate puts the busiest member at
// targetUtilization of its capacity.
const (
	probeLoad         = 0.2
	targetUtilization = 0.7
)

// bulkLoad is the share of the storage servers' summed capacity the preload
// and the read-back may use. They run as fast as that allows, not as fast
// as they could: an emulated server queues what it cannot serve yet, and
// once its queue is longer than the transport's first retransmission
// (50 ms), every request is sent again and costs it again, and the queue
// never drains.
const bulkLoad = 0.5

// progressEvery is the period of Config.Progress calls.
const progressEvery = 100 * time.Millisecond

// FailureMode is how a Failure fails its cache node.
type FailureMode string

// Failure modes.
const (
	// FailKill kills the node abruptly (Cluster.Kill, SIGKILL) and starts
	// it again, with an empty cache, DownFor later (Cluster.Restart): a
	// crash. It is the mode of a Failure without one.
	FailKill FailureMode = "kill"
	// FailPause stops the node's process (Cluster.Pause, SIGSTOP) and
	// continues it DownFor later (Cluster.Resume, SIGCONT): a node that
	// hangs, keeping its sockets, its cache and the requests queued to
	// it, and answers them late once continued.
	FailPause FailureMode = "pause"
	// FailSlow delays every datagram the node's data-plane socket sends
	// (its replies and its requests to the shims) by Failure.Delay
	// (Cluster.Slow) until DownFor later (Cluster.Unslow): a slow node
	// that still answers everything, a gray failure its health checks do
	// not see.
	FailSlow FailureMode = "slow"
)

// failureModes are the modes in the order the flags list them.
var failureModes = []FailureMode{FailKill, FailPause, FailSlow}

// ParseFailureMode parses a failure mode's name ("kill", "pause" or
// "slow").
func ParseFailureMode(s string) (FailureMode, error) {
	m := FailureMode(s)
	if !slices.Contains(failureModes, m) {
		return "", fmt.Errorf("unknown failure mode %q (want %q, %q or %q)", s, FailKill, FailPause, FailSlow)
	}
	return m, nil
}

// Failure is a cache-node failure injected into DistCache's measured window
// (the paper's fig. 11).
type Failure struct {
	// Member is the cache node to fail (its member name in the map).
	Member string
	// Mode is how it fails (default FailKill).
	Mode FailureMode
	// Delay is the delay of every datagram the member sends, for FailSlow
	// (which needs it positive); other modes ignore it.
	Delay time.Duration
	// At is when, after the measured window starts, the member fails.
	// The capacity is measured before the failure, so At should leave
	// room for it: with At under Config.Interval it is measured over the
	// whole window instead.
	At time.Duration
	// DownFor is how long it stays failed before it recovers (restarted,
	// resumed or no longer slowed). If the window ends first it recovers
	// at the window's end.
	DownFor time.Duration
}

// mode is f's mode, FailKill by default.
func (f Failure) mode() FailureMode {
	if f.Mode == "" {
		return FailKill
	}
	return f.Mode
}

// Progress is what Config.Progress is told about the phase running.
type Progress struct {
	Mode  Mode   // "" for the phases of no mode (preload, check)
	Phase string // "preload", "warmup", "probe", "measure" or "check"
	// Done is the operations (or keys) finished, Total the phase's bound
	// on them.
	Done, Total uint64
	// Elapsed is the time since the phase started, Duration its time
	// bound.
	Elapsed, Duration time.Duration
	// Rate is the operations finished per second over the last second.
	Rate float64
}

// Config configures Run. Zero fields take the defaults given.
type Config struct {
	// MapFile is the partition map file the cluster publishes. The driver
	// loads it and follows new versions (polled every DefaultMapPoll),
	// handing each to every client.
	MapFile string
	// MapSource, when set, is read instead of MapFile: the operator's
	// ConfigMap through the Kubernetes API (package kubemap).
	MapSource mapwatch.Source
	// Keys is the size of the key space (default DefaultKeys); rank r is
	// key workload.Key(scrambler.Permute(r)), by a second scrambler from
	// ShiftAt on.
	Keys uint64
	// Skew is the Zipf exponent, 0 for uniform (default DefaultSkew; set
	// Uniform for 0).
	Skew float64
	// Uniform selects the uniform workload (Skew 0), which a zero Skew
	// cannot express.
	Uniform bool
	// ValueSize is the size of a written value in bytes (default
	// DefaultValueSize); a value is never shorter than its unique header
	// (mode, key, sequence number).
	ValueSize int
	// WriteRatio is the share of operations that are Puts (default 0).
	WriteRatio float64
	// Duration is the measured window per mode (default DefaultDuration).
	Duration time.Duration
	// Count, if not 0, ends a measured window after Count operations if
	// Duration has not ended it before. Without it the window issues at
	// most rate × Duration operations.
	Count uint64
	// Concurrency is the most operations outstanding at once (default
	// DefaultConcurrency).
	Concurrency int
	// Clients is the number of client.Client instances per mode, each its
	// own UDP socket (default DefaultClients); workers share them evenly.
	Clients int
	// Rate is the offered rate in operations per second; 0 chooses it per
	// mode with a probe (package doc), which needs emulated capacities.
	Rate float64
	// Poisson makes arrivals a Poisson process instead of evenly spaced.
	Poisson bool
	// Preload is the number of hottest ranks written once, before the
	// first mode, so that hot keys exist and can be cached (default
	// min(Keys, DefaultPreload); negative: none).
	Preload int
	// Warmup is the unmeasured load offered before DistCache's measurement
	// so that the nodes' hot-key detectors fill their caches (default
	// DefaultWarmup; negative: none).
	Warmup time.Duration
	// Modes are the systems to run (default NoCache and DistCache); they
	// run in the order Twemproxy, NoCache, DistCache whatever the order
	// given.
	Modes []Mode
	// Via, if set, carries the operations of NoCache and DistCache through
	// a store in front of each of the driver's clients instead of calling
	// the clients: a Redis client of a gateway that serves with it
	// (`distcache bench --via gateway`). The driver closes a store that is
	// an io.Closer; the clients' Stats still count what went through them.
	Via func(*client.Client) (Store, error)
	// ViaName names Via in the report (ReportConfig.Via), e.g. "gateway".
	ViaName string
	// Twemproxy is the store of the Twemproxy mode (needed to run it): a
	// Redis client of the proxy. The Cluster must be a RedisWorker.
	Twemproxy Store
	// Failure, if set, is injected into DistCache's measured window.
	Failure *Failure
	// ShiftAt, if positive, shifts the hot set at that time after
	// DistCache's measured window starts (as Failure.At): every operation
	// issued from then on maps its Zipf rank to a key by a second key
	// permutation, seeded from Seed like the first but with another label,
	// so the hot keys turn cold and other keys turn hot with the same
	// skew. The window's end makes the first permutation current again.
	// It must be under Duration. The preload then writes the Preload
	// hottest ranks of both permutations, since a cache node caches only
	// keys that exist. 0: no shift.
	ShiftAt time.Duration
	// HotRacks, if positive, puts the hot set on the storage of the
	// cluster's first HotRacks racks: both permutations give the lowest
	// ranks to the keys stored there, in their own order, then the rest.
	// It must be below the cluster's racks, and the key space at most
	// MaxHotRacksKeys (a table of every key's rank). The simulator draws
	// hot keys from every rack, so it does not predict such a run.
	HotRacks int
	// Interval is the timeline's sample period (default DefaultInterval).
	Interval time.Duration
	// ServerCapacity is one storage server's capacity in work units per
	// second, the unit of the normalized throughput. 0 takes the largest
	// shard capacity Cluster.Work reports; if that is 0 too the normalized
	// figures are omitted.
	ServerCapacity float64
	// ProbeDuration is the probe's window (default DefaultProbeDuration).
	ProbeDuration time.Duration
	// OpTimeout bounds one operation (default DefaultOpTimeout). A write
	// without a reply by then has an unknown outcome.
	OpTimeout time.Duration
	// CheckTimeout bounds the preload, and the final read-back of the
	// written keys, each (default DefaultCheckTimeout); keys not read back
	// by then are reported unchecked.
	CheckTimeout time.Duration
	// Client is the template of every client's configuration; the driver
	// sets Bypass, Seed and Logger, and Registerer must be nil (each
	// client gets a private registry).
	Client client.Config
	// Seed seeds the key permutation (as the simulator does, so a
	// prediction with the same seed has the same hot keys), the operation
	// streams and the clients.
	Seed uint64
	// Progress, if set, is called about ten times a second, never
	// concurrently, with the running phase's progress (and once as each
	// phase ends).
	Progress func(Progress)
	// Logger receives structured logs (default: discarded).
	Logger *slog.Logger

	// hooks are test hooks (nil in production).
	hooks *hooks
}

// hooks let the package's tests act at fixed points of a run.
type hooks struct {
	// afterWarmup runs after DistCache's warm-up, before its probe and
	// measurement.
	afterWarmup func(ctx context.Context)
	// beforeCheck runs before the read-back with the keys it will read.
	beforeCheck func(ctx context.Context, keys []string)
}

// WithDefaults returns c with the defaults applied and the modes in order.
func (c Config) WithDefaults() Config {
	if c.Keys == 0 {
		c.Keys = DefaultKeys
	}
	if c.Uniform {
		c.Skew = 0
	} else if c.Skew == 0 {
		c.Skew = DefaultSkew
	}
	c.ValueSize = orDefault(c.ValueSize, DefaultValueSize)
	c.Duration = orDefault(c.Duration, DefaultDuration)
	c.Concurrency = orDefault(c.Concurrency, DefaultConcurrency)
	c.Clients = orDefault(c.Clients, DefaultClients)
	if c.Preload == 0 {
		c.Preload = int(min(c.Keys, DefaultPreload))
	}
	c.Preload = int(min(uint64(max(c.Preload, 0)), c.Keys))
	if c.Warmup == 0 {
		c.Warmup = DefaultWarmup
	}
	c.Warmup = max(c.Warmup, 0)
	if len(c.Modes) == 0 {
		c.Modes = []Mode{NoCache, DistCache}
	}
	var modes []Mode
	for _, m := range modeOrder {
		if slices.Contains(c.Modes, m) {
			modes = append(modes, m)
		}
	}
	for _, m := range c.Modes {
		if !slices.Contains(modeOrder, m) {
			modes = append(modes, m) // refused by validate
		}
	}
	c.Modes = modes
	c.Interval = orDefault(c.Interval, DefaultInterval)
	c.ProbeDuration = orDefault(c.ProbeDuration, DefaultProbeDuration)
	c.OpTimeout = orDefault(c.OpTimeout, DefaultOpTimeout)
	c.CheckTimeout = orDefault(c.CheckTimeout, DefaultCheckTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// validate checks a configuration with defaults applied.
func (c Config) validate() error {
	var errs []error
	if c.MapFile == "" && c.MapSource == nil {
		errs = append(errs, errors.New("no map file or source"))
	}
	if math.IsNaN(c.Skew) || c.Skew < 0 {
		errs = append(errs, fmt.Errorf("skew %v must be at least 0", c.Skew))
	}
	if !(c.WriteRatio >= 0 && c.WriteRatio <= 1) {
		errs = append(errs, fmt.Errorf("write ratio %v must be in [0, 1]", c.WriteRatio))
	}
	if !(c.Rate >= 0) || math.IsInf(c.Rate, 1) {
		errs = append(errs, fmt.Errorf("rate %v must be a finite number of operations per second, 0 to probe", c.Rate))
	}
	if !(c.ServerCapacity >= 0) || math.IsInf(c.ServerCapacity, 1) {
		errs = append(errs, fmt.Errorf("server capacity %v must be finite and not negative", c.ServerCapacity))
	}
	for _, m := range c.Modes {
		if !slices.Contains(modeOrder, m) {
			errs = append(errs, fmt.Errorf("unknown mode %q (want %q, %q or %q)", m, NoCache, DistCache, Twemproxy))
		}
		if m == Twemproxy && c.Twemproxy == nil {
			errs = append(errs, errors.New("mode twemproxy needs the proxy's store (Twemproxy)"))
		}
	}
	if f := c.Failure; f != nil {
		switch {
		case f.Member == "":
			errs = append(errs, errors.New("failure without a member"))
		case f.At < 0 || f.DownFor < 0:
			errs = append(errs, errors.New("failure times must not be negative"))
		case !slices.Contains(failureModes, f.mode()):
			errs = append(errs, fmt.Errorf("unknown failure mode %q (want %q, %q or %q)", f.Mode, FailKill, FailPause, FailSlow))
		case f.mode() == FailSlow && f.Delay <= 0:
			errs = append(errs, fmt.Errorf("a slow failure needs a positive delay, not %v", f.Delay))
		case !slices.Contains(c.Modes, DistCache):
			errs = append(errs, errors.New("a failure is injected into the distcache mode, which is not run"))
		}
	}
	switch {
	case c.ShiftAt < 0:
		errs = append(errs, fmt.Errorf("hot-set shift time %v must not be negative", c.ShiftAt))
	case c.ShiftAt > 0 && c.ShiftAt >= c.Duration:
		errs = append(errs, fmt.Errorf("hot-set shift time %v must be within the measured window of %v", c.ShiftAt, c.Duration))
	case c.ShiftAt > 0 && !slices.Contains(c.Modes, DistCache):
		errs = append(errs, errors.New("the hot set shifts in the distcache mode, which is not run"))
	}
	switch {
	case c.HotRacks < 0:
		errs = append(errs, fmt.Errorf("hot racks %d must not be negative", c.HotRacks))
	case c.HotRacks > 0 && c.Keys > MaxHotRacksKeys:
		errs = append(errs, fmt.Errorf("a hot set on %d racks needs a table of every key: %d keys is more than %d", c.HotRacks, c.Keys, MaxHotRacksKeys))
	}
	if c.Client.Registerer != nil {
		errs = append(errs, errors.New("client template with a Registerer: every client needs its own"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid benchmark configuration: %w", err)
	}
	return nil
}
