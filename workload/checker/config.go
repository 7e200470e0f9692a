package checker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
)

// Defaults applied to zero fields of Config.
const (
	DefaultKeyPrefix       = "distcache-check:"
	DefaultKeys            = 32
	DefaultClients         = 4
	DefaultWorkers         = 16
	DefaultDuration        = 20 * time.Second
	DefaultMaxOps          = 200_000
	DefaultOpTimeout       = 2 * time.Second
	DefaultMapPoll         = 100 * time.Millisecond
	DefaultReadBackTimeout = 30 * time.Second
	DefaultCheckTimeout    = 2 * time.Minute
)

// Config configures a run. Zero fields take the defaults above, except
// Skew, WriteRatio and DeleteShare, whose zero values mean what they say.
type Config struct {
	// MapFile is the partition map file to follow (standalone mode's
	// map.json, or the operator's ConfigMap mounted in a pod), unless
	// MapSource is set.
	MapFile string
	// MapSource, when set, is where the map is followed instead of
	// MapFile: the operator's ConfigMap read through the Kubernetes API
	// (package kubemap).
	MapSource mapwatch.Source
	// MapPoll is how often the map is polled for a newer version.
	MapPoll time.Duration
	// Redis maps storage shard names to Redis addresses (host:port), for
	// reading keys back straight from Redis; shards without one are not
	// read that way.
	Redis map[string]string

	// KeyPrefix starts every key name (followed by workload.Key's).
	KeyPrefix string
	// Keys is the number of keys, Skew the exponent of their Zipf
	// popularity (0: uniform).
	Keys int
	Skew float64
	// WriteRatio is the share of operations that are writes, DeleteShare
	// the share of writes that are deletes.
	WriteRatio  float64
	DeleteShare float64

	// Clients is the number of clients (each its own UDP socket); the
	// first StaleClients of them are stale (see Checker.Freeze).
	Clients      int
	StaleClients int
	// Workers is the number of workers, worker w using client w%Clients;
	// each runs one operation at a time.
	Workers int
	// Seed seeds the workers' operation streams and the clients.
	Seed uint64
	// Rate bounds the timed workload's operations per second, across
	// workers (0: as fast as the workers go). A long run under faults
	// needs one: its history is kept in memory and checked at the end.
	Rate float64
	// Duration and MaxOps bound the timed workload: it ends at whichever
	// comes first.
	Duration time.Duration
	MaxOps   int64
	// OpTimeout bounds each operation.
	OpTimeout time.Duration
	// ReadBackTimeout bounds the preload's retries and the read-back.
	ReadBackTimeout time.Duration
	// CheckTimeout bounds the linearizability check; keys not decided by
	// then are unchecked.
	CheckTimeout time.Duration
	// Client is the template of every client's configuration; its
	// Registerer must be nil (each client keeps its metrics privately),
	// and Seed and Logger are set per client.
	Client client.Config

	// OutDir, when set, receives verdict.json, verdict.txt and, for every
	// failing key, its history and the visualization of its violation.
	OutDir string
	// Ready, when set, is called once the preload is done, as the timed
	// workload starts.
	Ready func()
	// Progress, when set, is called as each phase starts and every second
	// of the workload.
	Progress func(Progress)
	// Logger receives structured logs (default: discarded).
	Logger *slog.Logger
}

// mapSource is where the run follows the map.
func (c Config) mapSource() mapwatch.Source {
	if c.MapSource != nil {
		return c.MapSource
	}
	return mapwatch.File(c.MapFile)
}

func (c Config) withDefaults() Config {
	if c.MapPoll <= 0 {
		c.MapPoll = DefaultMapPoll
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if c.Keys == 0 {
		c.Keys = DefaultKeys
	}
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.MaxOps == 0 {
		c.MaxOps = DefaultMaxOps
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	if c.ReadBackTimeout == 0 {
		c.ReadBackTimeout = DefaultReadBackTimeout
	}
	if c.CheckTimeout == 0 {
		c.CheckTimeout = DefaultCheckTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// validate reports every invalid field of a defaulted Config.
func (c Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.MapFile == "" && c.MapSource == nil {
		bad("no partition map file or source")
	}
	if c.MapFile != "" && c.MapSource != nil {
		bad("both a partition map file and a map source")
	}
	if c.Rate < 0 {
		bad("negative rate %v", c.Rate)
	}
	if c.Keys < 1 {
		bad("keys %d, want at least 1", c.Keys)
	}
	if c.WriteRatio < 0 || c.WriteRatio > 1 {
		bad("write ratio %v outside [0, 1]", c.WriteRatio)
	}
	if c.DeleteShare < 0 || c.DeleteShare > 1 {
		bad("delete share %v outside [0, 1]", c.DeleteShare)
	}
	if c.Clients < 1 {
		bad("clients %d, want at least 1", c.Clients)
	}
	if c.StaleClients < 0 || c.StaleClients > c.Clients {
		bad("stale clients %d outside [0, clients %d]", c.StaleClients, c.Clients)
	}
	if c.Workers < 1 {
		bad("workers %d, want at least 1", c.Workers)
	}
	if c.Duration < 0 || c.MaxOps < 0 || c.OpTimeout < 0 || c.ReadBackTimeout < 0 || c.CheckTimeout < 0 {
		bad("negative duration or operation bound")
	}
	if c.Client.Registerer != nil {
		bad("the client template has a Registerer: clients cannot share one")
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot check: invalid configuration: %w", errors.Join(errs...))
	}
	return nil
}
