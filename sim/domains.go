package sim

import (
	"fmt"

	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
)

// Domains places a simulated cluster's cache members on hosts and zones,
// as a scheduler spreading each layer evenly would: member i of every
// layer on host i mod Hosts, host h in zone h mod Zones.
type Domains struct {
	Hosts, Zones int
}

// domainAddresser names the members' domains for partmap.Build.
type domainAddresser struct{ d Domains }

func (domainAddresser) ShardAddress(int, int) string     { return "" }
func (domainAddresser) MemberAddress(string, int) string { return "" }
func (a domainAddresser) MemberDomain(_ string, i int) (zone, host string) {
	h := i % a.d.Hosts
	if a.d.Zones > 0 {
		zone = fmt.Sprintf("zone-%d", h%a.d.Zones)
	}
	return zone, fmt.Sprintf("host-%d", h)
}

// DomainMap is cfg's partition map with its members on d's hosts and
// zones.
func DomainMap(cfg Config, d Domains) (*partmap.Map, error) {
	if d.Hosts < 1 || d.Zones < 0 {
		return nil, fmt.Errorf("cannot place members on %d hosts in %d zones", d.Hosts, d.Zones)
	}
	spec := cfg.spec()
	spec.Addresses = domainAddresser{d}
	m, err := partmap.Build(spec, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot build the map on %d hosts: %w", d.Hosts, err)
	}
	return m, nil
}

// HostLoss is what losing one host costs a placement, over a sample of
// keys.
type HostLoss struct {
	// Shared is the fraction of keys whose candidates are all on one host.
	Shared float64
	// MeanLost and MaxLost are the fractions of keys left without a
	// cached copy when one host is lost (before any remap): the mean over
	// hosts and the worst host.
	MeanLost, MaxLost float64
}

// HostLosses compares the placement of keys (a sample of that many) by
// cfg's map on d's hosts without failure domains (blind) and with them
// (aware).
func HostLosses(cfg Config, d Domains, keys int) (blind, aware HostLoss, err error) {
	m, err := DomainMap(cfg, d)
	if err != nil {
		return blind, aware, err
	}
	for _, c := range []struct {
		m   *partmap.Map
		out *HostLoss
	}{{m.WithoutDomains(), &blind}, {m, &aware}} {
		p, err := partmap.Compile(c.m)
		if err != nil {
			return blind, aware, fmt.Errorf("cannot compile the map on %d hosts: %w", d.Hosts, err)
		}
		*c.out = hostLoss(m, p, d.Hosts, keys, cfg.Seed)
	}
	return blind, aware, nil
}

// hostLoss places keys with p and counts, per host of m's members, the
// keys whose every candidate is on it.
func hostLoss(m *partmap.Map, p *partmap.Placement, hosts, keys int, seed uint64) HostLoss {
	lost := map[string]int{}
	var buf []partmap.Candidate
	shared := 0
	for k := range keys {
		buf = p.Owners(fmt.Sprintf("key:%d:%d", seed, k), buf[:0])
		if h := partmap.SoleHost(m, buf); h != "" {
			shared++
			lost[h]++
		}
	}
	out := HostLoss{Shared: float64(shared) / float64(keys)}
	for _, n := range lost {
		f := float64(n) / float64(keys)
		out.MeanLost += f / float64(hosts)
		out.MaxLost = max(out.MaxLost, f)
	}
	return out
}

// ZoneRouting is the routing of one zone policy over a skewed stream.
type ZoneRouting struct {
	// Margin is the clients' routing.WithRemoteMargin; negative: zones
	// not told apart.
	Margin float64
	// CrossZone is the fraction of cached reads served in another zone
	// than their client's.
	CrossZone float64
	// MaxMean is the busiest cache node's reads over the mean of all.
	MaxMean float64
}

// ZoneRoutings streams cfg's query stream through DistCache's placement
// on d's hosts and zones (failure-domain aware), its clients spread over
// the zones, once for each margin.
func ZoneRoutings(cfg Config, d Domains, margins []float64) ([]ZoneRouting, error) {
	m, err := DomainMap(cfg, d)
	if err != nil {
		return nil, err
	}
	cfg.Map = m
	model, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	p := model.placement(DistCache)
	var out []ZoneRouting
	for _, margin := range margins {
		model.cfg.Routing.Zones, model.cfg.Routing.ZoneMargin = d.Zones, margin
		s, err := newStreamer(model, hashing.Derive(cfg.Seed, "routing"))
		if err != nil {
			return nil, err
		}
		t := s.run(p, cfg.Routing.Queries, cfg.Routing.Warmup, nil)
		zr := ZoneRouting{Margin: margin}
		if t.reads > 0 {
			zr.CrossZone = float64(t.crossZone) / float64(t.reads)
			most, sum := 0.0, 0.0
			for _, n := range t.perNode {
				most, sum = max(most, n), sum+n
			}
			zr.MaxMean = most / (sum / float64(len(t.perNode)))
		}
		out = append(out, zr)
	}
	return out, nil
}
