package localkube

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sysctls are the settings the kubelet and kube-proxy change.
var sysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops", "net/ipv4/ip_forward",
	"net/ipv4/conf/all/route_localnet", "net/bridge/bridge-nf-call-iptables"}

// hostPaths are paths a node creates outside its own directories.
var hostPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/opt/containerd", "/run/containerd", "/var/lib/cni", "/etc/cni"}

// chain matches an iptables-save chain declaration.
var chain = regexp.MustCompile(`(?m)^:(\S+)`)

// What localkube may create among what other tests running beside this
// one create on the host (network namespaces, links, addresses, mounts,
// chains, routes of their own): only these are compared. The links,
// namespaces and cgroups of several nodes (lknodes0, lkn-I, lk-node-I)
// among them.
var (
	ourLink   = regexp.MustCompile(`^(lkcni0|veth[0-9a-f]{8}|lknodes0|lkn-[0-9]+)(@|$)`)
	ourAddr   = regexp.MustCompile(`^\d+: (lo|lkcni0|veth[0-9a-f]{8}|lknodes0|lkn-[0-9]+)\s`)
	ourMount  = `^(/run/netns/cni-|/run/netns/lk-node-|/var/lib/kubelet|/run/containerd|/var/lib/cni|%s)`
	ourChain  = regexp.MustCompile(`^(KUBE|CNI)`)
	ourNetns  = regexp.MustCompile(`^(cni-|lk-node-)`)
	ourRoute  = regexp.MustCompile(`^198\.1[89]\.|dev (lkcni0|lknodes0|lkn-[0-9]+)( |$)`)
	ourCgroup = regexp.MustCompile(`^/sys/fs/cgroup/[^/]+/(kubepods|lk-node-)`)
)

// matching keeps the lines of text that re matches, sorted.
func matching(re *regexp.Regexp, lines []string) string {
	var out []string
	for _, l := range lines {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// hostState is what localkube, with its state in dir, may change on the
// host, as text per aspect.
func hostState(t *testing.T, dir string) map[string]string {
	t.Helper()
	s := map[string]string{}
	var vals []string
	for _, k := range sysctls {
		b, err := os.ReadFile(filepath.Join("/proc/sys", k))
		vals = append(vals, k+"="+strings.TrimSpace(string(b))+errText(err))
	}
	s["sysctls"] = strings.Join(vals, "\n")
	s["addresses"] = matching(ourAddr, strings.Split(run(t, "ip", "-o", "addr", "show"), "\n"))
	s["links"] = matching(ourLink, strings.Split(fields(run(t, "ip", "-o", "link", "show"), 1), "\n"))
	mounts, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	s["mounts"] = matching(regexp.MustCompile(fmt.Sprintf(ourMount, regexp.QuoteMeta(dir))), strings.Split(fields(string(mounts), 1), "\n"))
	var chains []string
	for _, save := range []string{"iptables-save", "iptables-legacy-save"} {
		if _, err := exec.LookPath(save); err != nil {
			continue
		}
		for _, m := range chain.FindAllStringSubmatch(run(t, save), -1) {
			if ourChain.MatchString(m[1]) {
				chains = append(chains, save+" "+m[1])
			}
		}
	}
	slices.Sort(chains)
	s["iptables chains"] = strings.Join(slices.Compact(chains), "\n")
	netns, _ := os.ReadDir("/run/netns")
	var names []string
	for _, e := range netns {
		if ourNetns.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	s["network namespaces"] = strings.Join(names, "\n")
	var present []string
	for _, p := range hostPaths {
		if _, err := os.Stat(p); err == nil {
			present = append(present, p)
		}
	}
	s["host paths"] = strings.Join(present, "\n")
	s["routes"] = matching(ourRoute, strings.Split(run(t, "ip", "route", "show", "table", "all"), "\n"))
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/*")
	s["cgroups"] = matching(ourCgroup, cgroups)
	return s
}

func errText(err error) string {
	if err != nil {
		return " (" + err.Error() + ")"
	}
	return ""
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), name, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out)
}

// fields keeps field i (whitespace-separated; 1 is the second) of every
// line, sorted: names without counters or states that change by themselves.
func fields(text string, i int) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) > i {
			out = append(out, strings.TrimSuffix(f[i], ":"))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}
