package plan

import (
	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/placement/partmap"
)

// Replay protection in standalone mode: every process of a cluster starts
// at this version, so none waits for the others, as the operator's
// release-image gate makes a cluster's pods wait (docs/dataplane.md,
// Replay protection). The map says require unless
// spec.dataPlane.replayProtection is Off, so that clients that follow it
// (check, bench and loadgen given --map, the client library) stamp too,
// and the cluster's processes also take require as their floor.

// replayOff reports whether c's spec turns replay protection off.
func replayOff(c *layout.Cluster) bool {
	dp := c.Spec.DataPlane
	return dp != nil && dp.ReplayProtection == v1alpha1.ReplayProtectionOff
}

// firstMap is c's first partition map, with its replay protection.
func firstMap(c *layout.Cluster, a partmap.Addresser) (*partmap.Map, error) {
	s := c.Shape()
	if !replayOff(c) {
		s.ReplayProtection = partmap.ReplayRequire
	}
	return s.Map(nil, a)
}

// replayArgs are a data-plane process's replay flag: require as a floor,
// or none with replay protection off.
func replayArgs(c *layout.Cluster) []string {
	if replayOff(c) {
		return nil
	}
	return []string{"--replay-protection=require"}
}
