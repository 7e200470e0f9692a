package controlloop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/google/renameio/v2"

	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/layersizing"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/redundancy"
)

// FileConfig is the control loop process's configuration file, which
// `distcache up` writes into the run directory and `distcache controlloop
// --config` reads (JSON, see testdata/config.golden.json).
type FileConfig struct {
	// MapFile is the partition map the loop resumes from and publishes to.
	MapFile string `json:"mapFile"`
	// EventsFile receives every member state change as one JSON line
	// (empty: none are written).
	EventsFile string `json:"eventsFile,omitempty"`
	// Interval is the probe period (zero: DefaultInterval).
	Interval Duration `json:"interval,omitempty"`
	// Policy is the failover policy.
	Policy PolicyConfig `json:"policy"`
	// Members are the cache members to probe, by their name in the map.
	Members []MemberConfig `json:"members"`
	// Copies, when set, makes the loop decide the copies of hot keys from
	// the reports of the members' and the shards' metrics servers.
	Copies *CopiesFileConfig `json:"copies,omitempty"`
	// Sizing, when set, makes the loop split a cache budget among the
	// layers from the nodes' miss-ratio curves.
	Sizing *SizingFileConfig `json:"sizing,omitempty"`
}

// PolicyConfig is a failover.Policy in the configuration file.
type PolicyConfig struct {
	Grace     Duration `json:"grace"`
	FenceLead Duration `json:"fenceLead,omitempty"`
	// FenceAfter is failover.Policy.FenceAfter.
	FenceAfter Duration `json:"fenceAfter,omitempty"`
	HoldDown   Duration `json:"holdDown"`
}

// MemberConfig is a cache member and where its health check answers.
type MemberConfig struct {
	// Name is the member's name in the partition map.
	Name string `json:"name"`
	// HealthAddr is the host:port that serves its /healthz.
	HealthAddr string `json:"healthAddr"`
	// DataAddr is its data-plane UDP address (IP:port), probed with a
	// PING (PingProber); empty: not probed.
	DataAddr string `json:"dataAddr,omitempty"`
}

// Duration is a time.Duration written as Go duration text ("250ms").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("cannot parse duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// PolicyOf is p as written in the configuration file.
func PolicyOf(p failover.Policy) PolicyConfig {
	return PolicyConfig{Grace: Duration(p.Grace), FenceLead: Duration(p.FenceLead), FenceAfter: Duration(p.FenceAfter), HoldDown: Duration(p.HoldDown)}
}

// Policy is the failover policy p describes.
func (p PolicyConfig) Policy() failover.Policy {
	return failover.Policy{Grace: time.Duration(p.Grace), FenceLead: time.Duration(p.FenceLead), FenceAfter: time.Duration(p.FenceAfter), HoldDown: time.Duration(p.HoldDown)}
}

// Validate reports the first problem that makes c unusable.
func (c FileConfig) Validate() error {
	if c.MapFile == "" {
		return errors.New("cannot use control loop configuration: mapFile is empty")
	}
	if c.Interval < 0 {
		return fmt.Errorf("cannot use control loop configuration: interval %v is negative", time.Duration(c.Interval))
	}
	if err := c.Policy.Policy().Validate(); err != nil {
		return fmt.Errorf("cannot use control loop configuration: %w", err)
	}
	seen := map[string]bool{}
	for i, m := range c.Members {
		switch {
		case m.Name == "":
			return fmt.Errorf("cannot use control loop configuration: member %d has no name", i)
		case m.HealthAddr == "":
			return fmt.Errorf("cannot use control loop configuration: member %s has no healthAddr", m.Name)
		case seen[m.Name]:
			return fmt.Errorf("cannot use control loop configuration: member %s is listed twice", m.Name)
		}
		seen[m.Name] = true
	}
	if err := c.Copies.validate(); err != nil {
		return fmt.Errorf("cannot use control loop configuration: %w", err)
	}
	if err := c.Sizing.validate(); err != nil {
		return fmt.Errorf("cannot use control loop configuration: %w", err)
	}
	return nil
}

// DecodeConfig decodes and validates a configuration file's content;
// unknown fields are an error.
func DecodeConfig(data []byte) (FileConfig, error) {
	var c FileConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return FileConfig{}, fmt.Errorf("cannot decode control loop configuration: %w", err)
	}
	if dec.More() {
		return FileConfig{}, errors.New("cannot decode control loop configuration: data after the object")
	}
	return c, c.Validate()
}

// EncodeConfig encodes c as the configuration file's content.
func EncodeConfig(c FileConfig) ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode control loop configuration: %w", err)
	}
	return append(b, '\n'), nil
}

// LoadConfig reads the configuration file at path.
func LoadConfig(path string) (FileConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return FileConfig{}, fmt.Errorf("cannot read control loop configuration: %w", err)
	}
	c, err := DecodeConfig(b)
	if err != nil {
		return FileConfig{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// WriteConfig validates c and writes it to path atomically (a temporary
// file renamed over it).
func WriteConfig(path string, c FileConfig) error {
	if err := c.Validate(); err != nil {
		return err
	}
	b, err := EncodeConfig(c)
	if err != nil {
		return err
	}
	if err := renameio.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("cannot write control loop configuration: %w", err)
	}
	return nil
}

// Open returns the loop c describes, starting from the map currently
// published at c.MapFile (so a restarted loop never publishes an older
// version), probing every member's /healthz over HTTP, bounded by the
// shorter of ProbeTimeout and two intervals, and its data plane with a PING
// (PingProber) answered within one and a half intervals: a member whose data
// plane has answered later than that for patienceIntervals intervals (a
// gray failure, not a burst of load; grayPatienceIntervals when its
// /healthz reports capacity to spare, so it is not late for being busy),
// or whose /healthz has gone unanswered for httpPatienceIntervals (a hung
// process), is not Ready. Every member of that map must have a health
// address. reg, when not nil, receives the loop's metrics.
func Open(c FileConfig, logger *slog.Logger, reg prometheus.Registerer) (*Loop, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(c.MapFile)
	if err != nil {
		return nil, fmt.Errorf("cannot start the control loop: %w", err)
	}
	m, err := partmap.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("cannot start the control loop: %s: %w", c.MapFile, err)
	}
	addrs := make(map[string]string, len(c.Members))
	for _, mb := range c.Members {
		addrs[mb.Name] = mb.HealthAddr
	}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if addrs[mb.Name] == "" {
				return nil, fmt.Errorf("cannot start the control loop: member %s of %s has no health address in the configuration", mb.Name, c.MapFile)
			}
		}
	}
	interval := time.Duration(c.Interval)
	if interval <= 0 {
		interval = DefaultInterval
	}
	data, err := c.dataAddrs()
	if err != nil {
		return nil, err
	}
	ping, err := NewPingProber("127.0.0.1:0", data, min(ProbeTimeout, interval*3/2), patienceIntervals*interval, logger)
	if err != nil {
		return nil, fmt.Errorf("cannot start the control loop: %w", err)
	}
	reported := newUtilizations()
	ping.gray = grayFailure{patience: grayPatienceIntervals * interval, reported: reported}
	health := NewHTTPProber(addrs, min(ProbeTimeout, 2*interval), httpPatienceIntervals*interval)
	health.reported = reported
	l, err := New(Config{
		Policy: c.Policy.Policy(), MapFile: c.MapFile, EventsFile: c.EventsFile,
		Prober:   AllProbers{health, ping},
		Interval: time.Duration(c.Interval), Logger: logger, Registerer: reg,
		Copies: c.Copies.config(c.Members, redundancy.NewScraper()),
		Sizing: c.Sizing.config(c.Members, layersizing.NewScraper()),
	}, m)
	if err != nil {
		_ = ping.Close()
		return nil, err
	}
	return l, nil
}

// patienceIntervals is how many intervals a member's data-plane PINGs may
// go unanswered before it is not Ready (PingProber): a gray failure is
// caught after this, while a node whose PINGs wait behind a burst of its
// own traffic — a survivor taking a failed member's reads — and a starved
// machine's hiccups are absorbed.
const patienceIntervals = 10

// httpPatienceIntervals is how many intervals a member's /healthz checks may
// go unanswered before it is not Ready (HTTPProber). A node serves /healthz
// apart from its data plane's queue, so an overloaded node still answers
// it at once: checks left unanswered this long mean a hung or paused
// process (a dead one refuses them at once).
const httpPatienceIntervals = 4

// grayPatienceIntervals is how many intervals the PINGs of a member whose
// /healthz reports spare capacity may go unanswered before it is not Ready
// (grayFailure): a node that is slow without being busy is fenced as soon
// as a paused one.
const grayPatienceIntervals = httpPatienceIntervals

// dataAddrs returns the data-plane address of every member that has one.
func (c FileConfig) dataAddrs() (map[string]netip.AddrPort, error) {
	out := map[string]netip.AddrPort{}
	for _, mb := range c.Members {
		if mb.DataAddr == "" {
			continue
		}
		a, err := netip.ParseAddrPort(mb.DataAddr)
		if err != nil {
			return nil, fmt.Errorf("cannot start the control loop: member %s: data address %q: %w", mb.Name, mb.DataAddr, err)
		}
		out[mb.Name] = a
	}
	return out, nil
}
