package main

// The processes the Kubernetes target signals, found on this host: a
// cache-node pod's node process, and localkube's API server. Only a PID
// vouched for this way is signalled.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/distcache/distcache/hack/internal/localkube"
	"github.com/distcache/distcache/placement/partmap"
)

// memberArg is the argument that names a cache node's member.
func memberArg(member string) string { return "--member=" + member }

// hasArg reports whether cmdline (a /proc/PID/cmdline, NUL-separated)
// holds arg as one whole argument.
func hasArg(cmdline []byte, arg string) bool {
	for _, a := range bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
		if string(a) == arg {
			return true
		}
	}
	return false
}

// inContainer reports whether a /proc/PID/cgroup file puts the process in
// the cgroup of container id: a path whose last element is the id
// (cgroupfs) or ends in it (cri-containerd-ID.scope under systemd).
func inContainer(cgroup []byte, id string) bool {
	if id == "" {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(cgroup))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		last := f[2][strings.LastIndexByte(f[2], '/')+1:]
		if last == id || strings.HasSuffix(strings.TrimSuffix(last, ".scope"), id) {
			return true
		}
	}
	return false
}

// taskPIDs parses `ctr tasks ls`: each task's (container's) PID.
func taskPIDs(out []byte) (map[string]int, error) {
	pids := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		if first && len(f) > 0 && f[0] == "TASK" {
			continue
		}
		if len(f) < 2 {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("cannot parse the PID of task %s: %w", f[0], err)
		}
		pids[f[0]] = pid
	}
	return pids, sc.Err()
}

// ownNodeProcess checks that pid runs the cache node member (its command
// line has --member=MEMBER) in the cgroup of container id.
func ownNodeProcess(pid int, member, id string) error {
	if pid <= 0 {
		return fmt.Errorf("cannot signal %s: no PID", member)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return fmt.Errorf("cannot read the command line of %s (PID %d): %w", member, pid, err)
	}
	if !hasArg(cmdline, memberArg(member)) {
		return fmt.Errorf("cannot signal %s: PID %d runs %q", member, pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	cgroup, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return fmt.Errorf("cannot read the cgroups of %s (PID %d): %w", member, pid, err)
	}
	if !inContainer(cgroup, id) {
		return fmt.Errorf("cannot signal %s: PID %d is not in container %s", member, pid, id)
	}
	return nil
}

// findNodeProcess is the PID of member's node on this host: the one
// process whose command line has --member=MEMBER and that is in container
// id's cgroup, and which the containerd of its localkube node (at sock;
// ctr tasks ls) reports as the container's task.
func findNodeProcess(ctx context.Context, sock, namespace, member, id string) (int, error) {
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, fmt.Errorf("cannot list processes: %w", err)
	}
	var found []int
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil || !hasArg(b, memberArg(member)) {
			continue // gone, or another process
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if ownNodeProcess(pid, member, id) == nil {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("cannot find the node process of %s/%s in container %s: %d candidates %v", namespace, member, id, len(found), found)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", "--address", sock, "-n", "k8s.io", "tasks", "ls").Output()
	if err != nil {
		return 0, fmt.Errorf("cannot list localkube's containerd tasks (ctr --address %s): %w", sock, err)
	}
	tasks, err := taskPIDs(out)
	if err != nil {
		return 0, err
	}
	if tasks[id] != found[0] {
		return 0, fmt.Errorf("cannot vouch for PID %d of %s: containerd's task of container %s has PID %d", found[0], member, id, tasks[id])
	}
	return found[0], nil
}

// apiServerPID is the PID of localkube's API server, from its PID file,
// once localkubeFlags vouched for it.
func apiServerPID(localkubeDir string) (int, error) {
	pid, argv, err := localkube.APIServer(localkubeDir)
	if err != nil {
		return 0, err
	}
	return pid, localkubeFlags(pid, argv, localkubeDir)
}

// apiServerIs checks that pid still runs kube-apiserver with localkube's
// certificates (a flag under localkubeDir).
func apiServerIs(pid int, localkubeDir string) error {
	argv, err := localkube.Cmdline(pid)
	if err != nil {
		return err
	}
	if filepath.Base(argv[0]) != "kube-apiserver" {
		return fmt.Errorf("cannot signal the API server: PID %d runs %q", pid, strings.Join(argv, " "))
	}
	return localkubeFlags(pid, argv, localkubeDir)
}

// localkubeFlags checks that argv, pid's command line, names a file under
// localkubeDir: the API server is localkube's.
func localkubeFlags(pid int, argv []string, localkubeDir string) error {
	if !strings.Contains(strings.Join(argv, "\x00"), localkubeDir+"/") {
		return fmt.Errorf("cannot signal the API server: PID %d runs %q", pid, strings.Join(argv, " "))
	}
	return nil
}

// checkRoutes checks that this host reaches every member of mp at its
// address directly, on a link whose network holds it (localkube's pods on
// its bridge), not through a gateway.
func checkRoutes(mp *partmap.Map) error {
	ifaces, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("cannot list this host's addresses: %w", err)
	}
	for _, l := range mp.Layers {
		for _, m := range l.Members {
			if err := checkRoute(ifaces, m.Name, m.Address); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkRoute(ifaces []net.Addr, member, addr string) error {
	if addr == "" {
		return fmt.Errorf("cannot reach %s: no address in the map", member)
	}
	c, err := net.Dial("udp", addr) // no packet: only a route
	if err != nil {
		return fmt.Errorf("cannot route to %s at %s from this host: %w", member, addr, err)
	}
	local := c.LocalAddr().(*net.UDPAddr).IP
	remote := c.RemoteAddr().(*net.UDPAddr).IP
	c.Close()
	for _, a := range ifaces {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(local) && n.Contains(remote) {
			return nil
		}
	}
	if onNodeBridge(local) {
		return nil // a pod of a multi-node localkube, through its node
	}
	return fmt.Errorf("cannot reach %s at %s directly from this host: the route leaves from %s, on no link of its network", member, addr, local)
}

// nodeBridge is the link of a multi-node localkube's nodes
// (docs/localkube.md): the host routes each node's pods through it.
const nodeBridge = "lknodes0"

// onNodeBridge reports whether ip is this host's address on nodeBridge.
func onNodeBridge(ip net.IP) bool {
	link, err := net.InterfaceByName(nodeBridge)
	if err != nil {
		return false
	}
	addrs, err := link.Addrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
