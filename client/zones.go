package client

import "github.com/distcache/distcache/placement/partmap"

// DefaultZoneMargin is Config.ZoneMargin's default: a read stays in the
// client's zone until its candidate there is loaded more than 1.5 times
// the one in another zone.
const DefaultZoneMargin = 0.5

// zone is the client's zone under m: Config.Zone, else the zone of m's
// members on Config.Host, else "".
func (c *Client) zone(m *partmap.Map) string {
	if c.cfg.Zone != "" || c.cfg.Host == "" {
		return c.cfg.Zone
	}
	zone, _ := m.HostZone(c.cfg.Host)
	return zone
}

// remoteMembers marks, by layer and member, m's members in a known zone
// other than the client's; nil when the client's zone is unknown or zones
// are not told apart.
func (c *Client) remoteMembers(m *partmap.Map) [][]bool {
	zone := c.zone(m)
	if zone == "" || c.cfg.ZoneMargin < 0 {
		return nil
	}
	out := make([][]bool, len(m.Layers))
	for l, layer := range m.Layers {
		out[l] = make([]bool, len(layer.Members))
		for i, mb := range layer.Members {
			out[l][i] = mb.Zone != "" && mb.Zone != zone
		}
	}
	return out
}

// isRemote reports whether candidate cd is in another zone than the
// client's.
func (v *view) isRemote(cd partmap.Candidate) bool {
	return v.remote != nil && v.remote[cd.Layer][cd.Member]
}
