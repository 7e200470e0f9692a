// Package cpuquota gives local processes a CPU limit of their own, as a
// Kubernetes CPU limit gives a pod's containers: a cgroup per group of
// processes with a CFS bandwidth quota (cgroup v1 cpu.cfs_quota_us and
// cpu.cfs_period_us, or cgroup v2 cpu.max). A standalone cluster started
// with `distcache up --server-cpu` puts each storage server (its
// redis-server and shim together) and each cache node in a group of its
// own, so that benchmarks measure what the servers do on real, equal CPU
// rather than on emulated capacities (docs/benchmarks.md).
//
// The groups live under one parent (Root) in the machine's cpu hierarchy;
// creating them needs root, or a delegated cgroup v2 subtree.
package cpuquota

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultPeriod is the CFS period the groups use, the kernel's default.
const DefaultPeriod = 100 * time.Millisecond

// minQuota is the smallest quota the kernel accepts.
const minQuota = time.Millisecond

// Hierarchy is where the cpu controller is mounted and which cgroup
// version it is.
type Hierarchy struct {
	// Dir is the directory groups are created in: the cpu controller's
	// mount (v1) or the unified hierarchy's root (v2).
	Dir string
	// V2 says the hierarchy is the unified one (cpu.max).
	V2 bool
}

// Detect finds the cpu controller under /sys/fs/cgroup: the unified
// hierarchy if it offers cpu, else the v1 cpu mount.
func Detect() (Hierarchy, error) { return detectUnder("/sys/fs/cgroup") }

func detectUnder(root string) (Hierarchy, error) {
	if b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err == nil {
		if !hasWord(b, "cpu") {
			return Hierarchy{}, fmt.Errorf("cannot limit CPU: the cgroup v2 hierarchy at %s offers no cpu controller", root)
		}
		return Hierarchy{Dir: root, V2: true}, nil
	}
	for _, d := range []string{"cpu", "cpu,cpuacct", "cpuacct,cpu"} {
		dir := filepath.Join(root, d)
		if _, err := os.Stat(filepath.Join(dir, "cpu.cfs_quota_us")); err == nil {
			return Hierarchy{Dir: dir}, nil
		}
	}
	return Hierarchy{}, fmt.Errorf("cannot limit CPU: no cgroup cpu controller under %s", root)
}

func hasWord(b []byte, w string) bool {
	for _, f := range strings.Fields(string(b)) {
		if f == w {
			return true
		}
	}
	return false
}

// Group is one cgroup with a CPU quota.
type Group struct {
	Name string // path under the hierarchy, e.g. "distcache/demo/rack0-shard0"
	Dir  string
	CPUs float64 // the quota in CPUs (0.05: 5 ms every 100 ms)
	v2   bool
}

// CheckLimit refuses a limit the kernel would: below 1 ms every period.
func CheckLimit(cpus float64) error {
	if !(cpus > 0) || time.Duration(cpus*float64(DefaultPeriod)) < minQuota {
		return fmt.Errorf("a CPU limit of %g CPUs is too small: the quota must be at least %v every %v (%g CPUs)",
			cpus, minQuota, DefaultPeriod, float64(minQuota)/float64(DefaultPeriod))
	}
	return nil
}

// Create makes (or reuses) the group name under h with a quota of cpus
// CPUs per DefaultPeriod. On v2 it enables the cpu controller on the way
// down from the hierarchy's root.
func (h Hierarchy) Create(name string, cpus float64) (*Group, error) {
	if err := CheckLimit(cpus); err != nil {
		return nil, fmt.Errorf("cannot limit %s: %w", name, err)
	}
	g := &Group{Name: name, Dir: filepath.Join(h.Dir, filepath.FromSlash(name)), v2: h.V2}
	if err := os.MkdirAll(g.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create cgroup %s: %w", g.Dir, err)
	}
	if h.V2 {
		if err := h.enableCPU(g.Dir); err != nil {
			return nil, err
		}
	} else if err := g.write("cpu.cfs_period_us", strconv.FormatInt(DefaultPeriod.Microseconds(), 10)); err != nil {
		return nil, err
	}
	return g, g.SetLimit(cpus)
}

// enableCPU writes +cpu to the subtree_control of every ancestor of dir
// below (and including) the hierarchy's root.
func (h Hierarchy) enableCPU(dir string) error {
	rel, err := filepath.Rel(h.Dir, filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("cannot enable the cpu controller for %s: %w", dir, err)
	}
	p := h.Dir
	parts := []string{""}
	if rel != "." {
		parts = append(parts, strings.Split(rel, string(filepath.Separator))...)
	}
	for _, part := range parts {
		p = filepath.Join(p, part)
		f := filepath.Join(p, "cgroup.subtree_control")
		if b, err := os.ReadFile(f); err == nil && hasWord(b, "cpu") {
			continue
		}
		if err := os.WriteFile(f, []byte("+cpu"), 0o644); err != nil {
			return fmt.Errorf("cannot enable the cpu controller in %s: %w", p, err)
		}
	}
	return nil
}

// SetLimit sets the group's quota to cpus CPUs per DefaultPeriod, or
// lifts it (cpus 0). It works on a group of either hierarchy, whoever
// created it: one Create did not make is v2 when it has a cpu.max.
func (g *Group) SetLimit(cpus float64) error {
	v1, v2 := "-1", "max"
	if cpus != 0 {
		if err := CheckLimit(cpus); err != nil {
			return fmt.Errorf("cannot limit %s: %w", g.Name, err)
		}
		quota := time.Duration(cpus * float64(DefaultPeriod)).Microseconds()
		v1, v2 = strconv.FormatInt(quota, 10), strconv.FormatInt(quota, 10)
	}
	g.CPUs = cpus
	if _, err := os.Stat(filepath.Join(g.Dir, "cpu.max")); g.v2 || err == nil {
		return g.write("cpu.max", fmt.Sprintf("%s %d", v2, DefaultPeriod.Microseconds()))
	}
	return g.write("cpu.cfs_quota_us", v1)
}

func (g *Group) write(file, v string) error {
	if err := os.WriteFile(filepath.Join(g.Dir, file), []byte(v), 0o644); err != nil {
		return fmt.Errorf("cannot set %s of cgroup %s to %q: %w", file, g.Name, v, err)
	}
	return nil
}

// Add moves process pid (all its threads) into the group.
func (g *Group) Add(pid int) error {
	if err := g.write("cgroup.procs", strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("cannot put process %d in a CPU group: %w", pid, err)
	}
	return nil
}

// Procs lists the processes in the group.
func (g *Group) Procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(g.Dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("cannot list the processes of cgroup %s: %w", g.Name, err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// Stat is a group's CFS bandwidth accounting since it was created.
type Stat struct {
	// Periods is the CFS periods in which the group ran; Throttled those
	// in which it used up its quota and was held.
	Periods, Throttled uint64
	// ThrottledTime is how long its threads were held in all.
	ThrottledTime time.Duration
}

// Stat reads the group's cpu.stat.
func (g *Group) Stat() (Stat, error) {
	b, err := os.ReadFile(filepath.Join(g.Dir, "cpu.stat"))
	if err != nil {
		return Stat{}, fmt.Errorf("cannot read the CPU accounting of cgroup %s: %w", g.Name, err)
	}
	var st Stat
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, _ := strconv.ParseUint(v, 10, 64)
		switch k {
		case "nr_periods":
			st.Periods = n
		case "nr_throttled":
			st.Throttled = n
		case "throttled_time": // v1, ns
			st.ThrottledTime = time.Duration(n)
		case "throttled_usec": // v2
			st.ThrottledTime = time.Duration(n) * time.Microsecond
		}
	}
	return st, nil
}

// Remove deletes the group, which must hold no process any more, and its
// parents up to (not including) the hierarchy's root while they are empty.
func (g *Group) Remove(h Hierarchy) error {
	if err := os.Remove(g.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot remove cgroup %s: %w", g.Name, err)
	}
	for d := filepath.Dir(g.Dir); d != h.Dir && strings.HasPrefix(d, h.Dir+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break // not empty: another group lives there
		}
	}
	return nil
}
