package cpuquota

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Against directory trees laid out as the kernel's: which version is
// found, and what a group's files get.
func TestCreateOnEachVersion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  map[string]string // file under the group → content
		v2    bool
	}{
		{
			name:  "v1",
			files: map[string]string{"cpu/cpu.cfs_quota_us": "-1", "memory/memory.limit_in_bytes": "0"},
			want:  map[string]string{"cpu/distcache/gw/s0/cpu.cfs_quota_us": "5000", "cpu/distcache/gw/s0/cpu.cfs_period_us": "100000"},
		},
		{
			name:  "v2",
			files: map[string]string{"cgroup.controllers": "cpuset cpu io memory", "cgroup.subtree_control": ""},
			want: map[string]string{"distcache/gw/s0/cpu.max": "5000 100000", "cgroup.subtree_control": "+cpu",
				"distcache/cgroup.subtree_control": "+cpu", "distcache/gw/cgroup.subtree_control": "+cpu"},
			v2: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for f, s := range tc.files {
				writeFile(t, filepath.Join(root, f), s)
			}
			h, err := detectUnder(root)
			if err != nil {
				t.Fatal(err)
			}
			if h.V2 != tc.v2 {
				t.Fatalf("V2 = %v, want %v", h.V2, tc.v2)
			}
			g, err := h.Create("distcache/gw/s0", 0.05)
			if err != nil {
				t.Fatal(err)
			}
			for f, want := range tc.want {
				if got := readFile(t, filepath.Join(root, f)); got != want {
					t.Errorf("%s = %q, want %q", f, got, want)
				}
			}
			if g.CPUs != 0.05 {
				t.Errorf("CPUs = %g", g.CPUs)
			}
		})
	}
}

// SetLimit lifts and sets again a group's quota, on either version, for
// a Group known only by its directory.
func TestSetLimit(t *testing.T) {
	for _, tc := range []struct {
		name, file, lifted, limited string
	}{
		{"v1", "cpu.cfs_quota_us", "-1", "2500"},
		{"v2", "cpu.max", "max 100000", "2500 100000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, tc.file), "5000")
			g := &Group{Name: "s0", Dir: dir}
			if err := g.SetLimit(0); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(dir, tc.file)); got != tc.lifted {
				t.Errorf("lifted: %s = %q, want %q", tc.file, got, tc.lifted)
			}
			if err := g.SetLimit(0.025); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(dir, tc.file)); got != tc.limited {
				t.Errorf("limited: %s = %q, want %q", tc.file, got, tc.limited)
			}
			if err := g.SetLimit(0.001); err == nil {
				t.Error("a limit below the kernel's minimum was accepted")
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	root := t.TempDir()
	if _, err := detectUnder(root); err == nil || !strings.Contains(err.Error(), "no cgroup cpu controller") {
		t.Errorf("empty tree: err = %v", err)
	}
	writeFile(t, filepath.Join(root, "cgroup.controllers"), "memory io")
	if _, err := detectUnder(root); err == nil || !strings.Contains(err.Error(), "offers no cpu controller") {
		t.Errorf("v2 without cpu: err = %v", err)
	}
	h := Hierarchy{Dir: t.TempDir()}
	for _, cpus := range []float64{0, -1, 0.001} {
		if _, err := h.Create("g", cpus); err == nil || !strings.Contains(err.Error(), "is too small") {
			t.Errorf("Create(%g): err = %v", cpus, err)
		}
	}
}

func TestStatParsesBothVersions(t *testing.T) {
	for _, tc := range []struct{ name, stat string }{
		{"v1", "nr_periods 40\nnr_throttled 7\nthrottled_time 3000000\n"},
		{"v2", "usage_usec 9\nnr_periods 40\nnr_throttled 7\nthrottled_usec 3000\n"},
	} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "cpu.stat"), tc.stat)
		st, err := (&Group{Name: "g", Dir: dir}).Stat()
		if err != nil {
			t.Fatal(err)
		}
		if st.Periods != 40 || st.Throttled != 7 || st.ThrottledTime.Milliseconds() != 3 {
			t.Errorf("%s: %+v", tc.name, st)
		}
	}
}

// On this machine's own hierarchy, when it may be written (root): a child
// process joins a group and leaves it when it ends, and the group goes.
func TestRealGroup(t *testing.T) {
	h, err := Detect()
	if err != nil {
		t.Skipf("no cpu controller: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	name := fmt.Sprintf("distcache-test/%d", os.Getpid())
	g, err := h.Create(name, 0.1)
	if err != nil {
		t.Skipf("cannot create a cgroup here: %v", err)
	}
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := g.Add(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	procs, err := g.Procs()
	if err != nil || !slices.Contains(procs, cmd.Process.Pid) {
		t.Errorf("Procs = %v, %v; want %d in it", procs, err, cmd.Process.Pid)
	}
	if _, err := g.Stat(); err != nil {
		t.Error(err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := g.Remove(h); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Errorf("group still there: %v", err)
	}
}
