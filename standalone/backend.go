package standalone

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/controlloop"
	"github.com/distcache/distcache/standalone/plan"
	"github.com/distcache/distcache/standalone/supervisor"
)

// pending is the state shown for a process the cluster has not started yet.
const pending supervisor.State = "Pending"

// Status implements control.Backend.
func (c *cluster) Status(_ context.Context) control.Status {
	p := c.cfg.Plan
	m := c.currentMap()
	st := control.Status{
		Cluster: p.Cluster.Name, RunDir: c.cfg.RunDir, MapFile: p.MapFile, MapVersion: m.Version,
		PID: os.Getpid(), Started: c.started, ShardRate: p.ShardRate, NodeRate: p.NodeRate, AdaptiveCopies: adaptiveCopies(p),
		MetricsAddr: p.MetricsAddr, TargetsFile: p.TargetsFile,
		Persistence: p.Persistence, Processes: c.processes(m),
		Bundles: p.Cluster.Spec.DataPlane != nil && p.Cluster.Spec.DataPlane.Bundles,
	}
	for _, l := range p.Cluster.SoftwareLayers() {
		st.Layers = append(st.Layers, control.Layer{
			Name: l.Name, Nodes: p.Cluster.Nodes(l), BoundToRacks: l.Spec.BoundToRacks, Entries: layerEntries(m, l.Name, int(l.Spec.Capacity.Entries)),
		})
	}
	for _, e := range c.events() {
		st.Events = append(st.Events, control.Event{
			Time: e.Time, Layer: e.Layer, Member: e.Member, From: string(e.From), To: string(e.To), MapVersion: e.MapVersion,
		})
	}
	c.mu.Lock()
	st.Phase = c.phase
	if c.stopping {
		st.Phase = control.Stopping
	}
	c.mu.Unlock()
	if st.Phase == control.Ready {
		for _, pr := range st.Processes {
			if !pr.Ready || pr.MemberState != "" && pr.MemberState != string(partmap.Active) {
				st.Phase = control.Degraded
				break
			}
		}
	}
	return st
}

// mapWatcher follows the published map, nil while the cluster starts.
func (c *cluster) mapWatcher() *mapwatch.Watcher {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maps
}

// currentMap is the map last published, as read from the map file now (the
// control loop runs in a process of its own): map version 1 while
// starting. A file that cannot be read leaves the last one read.
func (c *cluster) currentMap() *partmap.Map {
	if w := c.mapWatcher(); w != nil {
		if _, err := w.Refresh(); err != nil {
			c.cfg.Logger.Debug("cannot read the published map", "path", c.cfg.Plan.MapFile, "err", err)
		}
	}
	return c.lastMap()
}

// lastMap is the map last read, without reading the file: map version 1
// while starting.
func (c *cluster) lastMap() *partmap.Map {
	if w := c.mapWatcher(); w != nil {
		return w.Current().Map()
	}
	return c.cfg.Plan.Map
}

// events are the control loop's state changes, read from its events file,
// so that they outlive a restart of the loop; none while starting.
func (c *cluster) events() []controlloop.Event {
	if c.mapWatcher() == nil {
		return nil
	}
	events, err := controlloop.ReadEvents(c.cfg.Plan.EventsFile)
	if err != nil {
		c.cfg.Logger.Warn("cannot read every failover event", "err", err)
	}
	return events
}

// processes describes every process with what was last probed and scraped.
func (c *cluster) processes(m *partmap.Map) []control.Process {
	sups := map[string]supervisor.Status{}
	for _, s := range c.sup.Status() {
		sups[s.Name] = s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]control.Process, 0, len(c.cfg.Plan.Processes))
	for _, pr := range c.cfg.Plan.Processes {
		s, ok := sups[pr.Name]
		if !ok {
			s.State = pending // not started yet
		}
		cp := control.Process{
			Name: pr.Name, Kind: string(pr.Kind), Layer: pr.Layer, Shard: pr.Shard,
			State: string(s.State), Ready: c.ready[pr.Name] && s.State == supervisor.Running,
			PID: s.PID, Restarts: s.Restarts, Addr: pr.Addr, MetricsAddr: pr.MetricsAddr, LogFile: pr.LogFile,
			Capacity: pr.EmulatedRate, Auth: pr.Auth, TLS: pr.TLS,
		}
		if d := c.cpu.dir(pr); d != "" {
			cp.CPUGroup, cp.CPUQuota = d, c.cfg.Plan.ServerCPU
		}
		if d, ok := c.slowed[pr.Name]; ok {
			cp.Slowed = d.String()
		}
		if sm, ok := c.samples[pr.Name]; ok {
			cp.WorkUnits, cp.Coherence, cp.Load = sm.work, sm.coherence, c.loads[pr.Name]
		}
		if pr.Kind == plan.Node || pr.Kind == plan.Switch {
			if l, i, ok := m.Member(pr.Name); ok {
				cp.MemberState = string(m.Layers[l].Members[i].State)
			}
		}
		out = append(out, cp)
	}
	return out
}

// Work implements control.Backend: it scrapes every shim and node now, one
// at a time. A scrape reads the process's /work (metrics.Work), about
// 0.05 ms of its CPU (through /metrics it cost about 2 ms, every metric
// gathered, then filtered); scraping several at once stalled a small
// machine's data plane for tens of milliseconds (see spread), and Work
// runs just before a benchmark injects a failure. A process that cannot
// be scraped (killed, restarting) keeps its last sample; only a canceled
// ctx is an error.
func (c *cluster) Work(ctx context.Context) ([]control.Process, error) {
	var errs []error
	for _, pr := range c.scrapedProcesses() {
		if err := c.scrapeOne(ctx, pr); err != nil {
			errs = append(errs, err)
		}
	}
	var out []control.Process
	for _, pr := range c.processes(c.currentMap()) {
		if scraped(plan.Kind(pr.Kind)) {
			out = append(out, pr)
		}
	}
	if len(errs) > 0 {
		c.cfg.Logger.Debug("some processes could not be scraped", "err", errors.Join(errs...))
	}
	return out, ctx.Err()
}

// scrapeOne scrapes pr's work counters and records them with the load
// since its previous sample.
func (c *cluster) scrapeOne(ctx context.Context, pr plan.Process) error {
	s, err := c.prober.scrape(ctx, pr.MetricsAddr)
	if err != nil {
		return fmt.Errorf("%s: %w", pr.Name, err)
	}
	s.at = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, ok := c.samples[pr.Name]
	if elapsed := s.at.Sub(prev.at).Seconds(); ok && elapsed > 0 && s.work >= prev.work {
		c.loads[pr.Name] = float64(s.work-prev.work) / elapsed
	}
	c.samples[pr.Name] = s
	return nil
}

// scrapedProcesses are the processes whose work the scrape reads.
func (c *cluster) scrapedProcesses() []plan.Process {
	var out []plan.Process
	for _, pr := range c.cfg.Plan.Processes {
		if scraped(pr.Kind) {
			out = append(out, pr)
		}
	}
	return out
}

// scraped reports whether processes of kind do work the scrape reads:
// shims and cache nodes.
func scraped(kind plan.Kind) bool { return kind == plan.Shim || kind == plan.Node }

// Kill implements control.Backend.
func (c *cluster) Kill(name string) error { return c.supervise(name, c.sup.Kill) }

// Restart implements control.Backend.
func (c *cluster) Restart(name string) error { return c.supervise(name, c.sup.Restart) }

// Pause implements control.Backend: SIGSTOP to the process (supervisor
// Pause), which the supervisor neither restarts nor counts as exited.
func (c *cluster) Pause(name string) error { return c.supervise(name, c.sup.Pause) }

// Resume implements control.Backend: SIGCONT to a paused process.
func (c *cluster) Resume(name string) error { return c.supervise(name, c.sup.Resume) }

func (c *cluster) supervise(name string, f func(string) error) error {
	if err := f(name); err != nil {
		if errors.Is(err, supervisor.ErrUnknown) {
			return fmt.Errorf("%w: %w", err, control.ErrNotFound)
		}
		return err
	}
	return nil
}

// Shutdown implements control.Backend.
func (c *cluster) Shutdown() { c.shutdownOnce.Do(func() { close(c.shutdown) }) }

// adaptiveCopies says whether the control loop decides the copies of hot
// keys (spec.hotKeys.replication).
func adaptiveCopies(p *plan.Plan) bool {
	_, ok := p.Cluster.Copies(0, 0)
	return ok
}

// layerEntries is what a member of layer caches: the map's entries when
// the cache budget sized it, else the spec's.
func layerEntries(m *partmap.Map, layer string, spec int) int {
	if e := m.LayerEntries()[layer]; e > 0 {
		return e
	}
	return spec
}
