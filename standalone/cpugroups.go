package standalone

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/distcache/distcache/standalone/cpuquota"
	"github.com/distcache/distcache/standalone/plan"
)

// cpuGroups are the cluster's CPU groups (plan.Plan.ServerCPU): one per
// storage server and cache node, under distcache/<cluster>-<pid> so that
// two clusters on one host never share one.
type cpuGroups struct {
	h      cpuquota.Hierarchy
	byName map[string]*cpuquota.Group // by plan.Process.CPUGroup
}

// newCPUGroups creates the groups p names, or returns nil when it names
// none.
func newCPUGroups(p *plan.Plan) (*cpuGroups, error) {
	if p.ServerCPU <= 0 {
		return nil, nil
	}
	h, err := cpuquota.Detect()
	if err != nil {
		return nil, err
	}
	g := &cpuGroups{h: h, byName: map[string]*cpuquota.Group{}}
	parent := "distcache/" + p.Cluster.Name + "-" + strconv.Itoa(os.Getpid())
	for _, pr := range p.Processes {
		if pr.CPUGroup == "" || g.byName[pr.CPUGroup] != nil {
			continue
		}
		grp, err := h.Create(parent+"/"+pr.CPUGroup, p.ServerCPU)
		if err != nil {
			return nil, errors.Join(err, g.remove())
		}
		g.byName[pr.CPUGroup] = grp
	}
	return g, nil
}

// join returns the supervisor's Join of pr: nil without a group.
func (g *cpuGroups) join(pr plan.Process) func(int) error {
	if g == nil || pr.CPUGroup == "" {
		return nil
	}
	grp := g.byName[pr.CPUGroup]
	return grp.Add
}

// dir is the cgroup directory of pr, "" for none.
func (g *cpuGroups) dir(pr plan.Process) string {
	if g == nil || g.byName[pr.CPUGroup] == nil {
		return ""
	}
	return g.byName[pr.CPUGroup].Dir
}

// remove deletes the groups; their processes must have ended.
func (g *cpuGroups) remove() error {
	if g == nil {
		return nil
	}
	var errs []error
	for _, grp := range g.byName {
		if err := grp.Remove(g.h); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cannot remove the CPU groups: %w", err)
	}
	return nil
}
