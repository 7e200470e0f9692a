package controlloop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/redundancy"
)

// DefaultCopiesInterval is how often copies are decided when
// CopiesConfig.Interval is zero.
const DefaultCopiesInterval = 5 * time.Second

// ReportSource gathers a round of the data plane's hot-key reports
// (redundancy.Scraper).
type ReportSource interface {
	Scrape(ctx context.Context, t redundancy.Targets) (redundancy.Reports, error)
}

// CopiesConfig makes a loop decide the copies of hot keys (package
// redundancy) every Interval, and publish them with the map.
type CopiesConfig struct {
	// Interval is how often (default DefaultCopiesInterval).
	Interval time.Duration
	// Plan is the cost model and its bounds.
	Plan redundancy.Config
	// Source reads the reports of Targets.
	Source  ReportSource
	Targets redundancy.Targets
}

// CopiesFileConfig is CopiesConfig in the configuration file.
type CopiesFileConfig struct {
	Interval Duration `json:"interval,omitempty"`
	// NodeCapacity and ServerCapacity are the requests per second a cache
	// node and a storage shard serve.
	NodeCapacity   float64 `json:"nodeCapacity"`
	ServerCapacity float64 `json:"serverCapacity"`
	// Slots is the number of keys a cache node holds (0: no limit).
	Slots int `json:"slots,omitempty"`
	// The other fields of redundancy.Config (0: its defaults).
	MaxCopies     int     `json:"maxCopies,omitempty"`
	MinRate       float64 `json:"minRate,omitempty"`
	CoherenceCost float64 `json:"coherenceCost,omitempty"`
	Hysteresis    float64 `json:"hysteresis,omitempty"`
	Headroom      float64 `json:"headroom,omitempty"`
	// Shards are the storage shims, whose metrics servers report their
	// keys' reads and writes.
	Shards []ShardConfig `json:"shards"`
}

// ShardConfig is a storage shim and where its metrics server answers.
type ShardConfig struct {
	// Name is the shard's name in the partition map.
	Name string `json:"name"`
	// MetricsAddr is the host:port of its metrics server.
	MetricsAddr string `json:"metricsAddr"`
}

func (c *CopiesFileConfig) validate() error {
	if c == nil {
		return nil
	}
	switch {
	case c.Interval < 0:
		return fmt.Errorf("copies: interval %v is negative", time.Duration(c.Interval))
	case !(c.NodeCapacity > 0) || !(c.ServerCapacity > 0):
		return fmt.Errorf("copies: nodeCapacity %v and serverCapacity %v must be positive", c.NodeCapacity, c.ServerCapacity)
	}
	for i, sh := range c.Shards {
		if sh.Name == "" || sh.MetricsAddr == "" {
			return fmt.Errorf("copies: shard %d needs a name and a metricsAddr", i)
		}
	}
	return nil
}

// config is the loop's CopiesConfig c describes, reading the reports of
// the members' metrics servers (their health addresses) and the shards'.
func (c *CopiesFileConfig) config(members []MemberConfig, source ReportSource) *CopiesConfig {
	if c == nil {
		return nil
	}
	t := redundancy.Targets{Shards: map[string]string{}}
	for _, mb := range members {
		t.Nodes = append(t.Nodes, mb.HealthAddr)
	}
	for _, sh := range c.Shards {
		t.Shards[sh.Name] = sh.MetricsAddr
	}
	return &CopiesConfig{
		Interval: time.Duration(c.Interval),
		Plan: redundancy.Config{
			NodeCapacity: c.NodeCapacity, ServerCapacity: c.ServerCapacity, Slots: c.Slots,
			MaxCopies: c.MaxCopies, MinRate: c.MinRate, CoherenceCost: c.CoherenceCost,
			Hysteresis: c.Hysteresis, Headroom: c.Headroom,
		},
		Source:  source,
		Targets: t,
	}
}

// scrapeCopies reads a round of reports if copies are decided and one is
// due at now; ok is false otherwise. A round some of whose processes did
// not answer is used, and the error logged.
func (l *Loop) scrapeCopies(ctx context.Context, now time.Time) (r redundancy.Reports, ok bool) {
	c := l.cfg.Copies
	if c == nil || now.Before(l.nextCopies) {
		return r, false
	}
	l.nextCopies = now.Add(c.Interval)
	r, err := c.Source.Scrape(ctx, c.Targets)
	if err != nil {
		if ctx.Err() != nil {
			return r, false
		}
		l.cfg.Logger.Warn("some hot-key reports are missing", "err", err)
	}
	return r, true
}

// withCopies returns m with the copies decided from r (m itself when they
// are unchanged). The caller holds mu.
func (l *Loop) withCopies(m *partmap.Map, r redundancy.Reports) (*partmap.Map, error) {
	p, err := partmap.Compile(m)
	if err != nil {
		return m, fmt.Errorf("cannot decide copies: %w", err)
	}
	res, err := redundancy.Plan(l.cfg.Copies.Plan, p, l.smoother.Add(r))
	if err != nil {
		return m, err
	}
	next, changed, err := m.WithCopies(res.Copies)
	if err != nil {
		return m, fmt.Errorf("cannot decide copies: %w", err)
	}
	l.metrics.copiesDecided(res)
	if changed {
		l.cfg.Logger.Info("copies of hot keys decided", "keys_by_copies", res.ByCopies, "decided", len(res.Copies), "rate", res.Rate, "map_version", next.Version)
	}
	return next, nil
}

func (c *CopiesConfig) validate() error {
	if c == nil {
		return nil
	}
	if c.Source == nil {
		return errors.New("cannot create control loop: copies need a report source")
	}
	return nil
}
