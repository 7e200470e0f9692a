package controlloop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/distcache/distcache/layersizing"
	"github.com/distcache/distcache/placement/partmap"
)

// DefaultSizingInterval is how often the cache budget is split when
// SizingConfig.Interval is zero.
const DefaultSizingInterval = 30 * time.Second

// CurveSource reads the cache nodes' miss-ratio curves
// (layersizing.Scraper).
type CurveSource interface {
	Scrape(ctx context.Context, addrs map[string]string) (layersizing.Reports, error)
}

// SizingConfig makes a loop split a cache budget among the layers every
// Interval (package layersizing) and publish each layer's entries with the
// map.
type SizingConfig struct {
	// Interval is how often (default DefaultSizingInterval).
	Interval time.Duration
	// Plan is the budget and the layers it sizes.
	Plan layersizing.Config
	// Source reads the curves of Targets (metrics servers by member).
	Source  CurveSource
	Targets map[string]string
}

// SizingFileConfig is SizingConfig in the configuration file; the curves
// are read from the members' health addresses (their metrics servers).
type SizingFileConfig struct {
	Interval Duration `json:"interval,omitempty"`
	// Budget is the entries the members of Layers cache together.
	Budget int `json:"budget"`
	// Layers names the layers sized; Start is each one's entries a member
	// until the map gives some.
	Layers []string       `json:"layers"`
	Start  map[string]int `json:"start,omitempty"`
	// Hysteresis is the relative gain a new split must bring (0: the
	// default of package placement/sizing).
	Hysteresis float64 `json:"hysteresis,omitempty"`
}

func (c *SizingFileConfig) validate() error {
	switch {
	case c == nil:
		return nil
	case c.Interval < 0:
		return fmt.Errorf("sizing: interval %v is negative", time.Duration(c.Interval))
	case c.Budget <= 0:
		return fmt.Errorf("sizing: budget %d must be positive", c.Budget)
	case len(c.Layers) == 0:
		return errors.New("sizing: no layer to size")
	}
	return nil
}

// config is the loop's SizingConfig c describes.
func (c *SizingFileConfig) config(members []MemberConfig, source CurveSource) *SizingConfig {
	if c == nil {
		return nil
	}
	t := map[string]string{}
	for _, mb := range members {
		t[mb.Name] = mb.HealthAddr
	}
	return &SizingConfig{
		Interval: time.Duration(c.Interval),
		Plan:     layersizing.Config{Budget: c.Budget, Layers: c.Layers, Start: c.Start, Hysteresis: c.Hysteresis},
		Source:   source,
		Targets:  t,
	}
}

// scrapeSizing reads the curves if a split is due at now; ok is false
// otherwise. A round some of whose nodes did not answer is used (their
// layers keep their entries), and the error logged.
func (l *Loop) scrapeSizing(ctx context.Context, now time.Time) (r layersizing.Reports, ok bool) {
	c := l.cfg.Sizing
	if c == nil || now.Before(l.nextSizing) {
		return nil, false
	}
	l.nextSizing = now.Add(c.Interval)
	r, err := c.Source.Scrape(ctx, c.Targets)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false
		}
		l.cfg.Logger.Warn("some miss-ratio curves are missing", "err", err)
	}
	return r, true
}

// withSizing returns m with the split of r (m itself when it is
// unchanged). The caller holds mu.
func (l *Loop) withSizing(m *partmap.Map, r layersizing.Reports) (*partmap.Map, error) {
	res, err := layersizing.Plan(l.cfg.Sizing.Plan, m, r)
	if err != nil {
		return m, err
	}
	next, changed, err := m.WithEntries(res.Entries)
	if err != nil {
		return m, fmt.Errorf("cannot size the cache layers: %w", err)
	}
	l.metrics.sized(res)
	if changed {
		attrs := []any{"map_version", next.Version, "missing", res.Missing}
		for _, lr := range res.Layers {
			attrs = append(attrs, lr.Name, fmt.Sprintf("%d entries, hit ratio %s estimated, %s measured", lr.Entries, percent(lr.Estimated), percent(lr.Measured)))
		}
		l.cfg.Logger.Info("cache layers sized", attrs...)
	}
	return next, nil
}

// percent is a ratio as the log shows it.
func percent(f float64) string {
	if math.IsNaN(f) {
		return "unknown"
	}
	return fmt.Sprintf("%.1f%%", 100*f)
}

func (c *SizingConfig) validate() error {
	if c != nil && c.Source == nil {
		return errors.New("cannot create control loop: sizing needs a curve source")
	}
	return nil
}
