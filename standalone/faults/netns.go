package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns` keeps the bind mounts of named namespaces.
const netnsDir = "/run/netns"

// Namespace is a named network namespace (as `ip netns` names them) with
// its loopback up, or the network namespace this process runs in
// (CurrentNamespace).
type Namespace struct {
	name    string
	current bool // the process's own namespace; name is ""
}

// CurrentNamespace is the network namespace this process runs in: faults
// installed there act on the traffic of every process that shares it (on a
// host, the host's own loopback), and the iptables rules of a delay go into
// its firewall, so whoever installs one must remove it. Its commands run
// directly (no `ip netns exec`), Do runs its function directly, and Delete
// does nothing.
func CurrentNamespace() *Namespace { return &Namespace{current: true} }

// ErrUnsupported is wrapped when this process cannot create network
// namespaces (not root, no ip command).
var ErrUnsupported = errors.New("network namespaces are not available")

// Supported reports (nil) whether this process can create network
// namespaces: it is root and the ip command of iproute2 is on PATH.
func Supported() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("cannot create network namespaces: not running as root: %w", ErrUnsupported)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("cannot create network namespaces: no ip command (Debian package iproute2): %w: %w", ErrUnsupported, err)
	}
	return nil
}

// CreateNamespace creates the network namespace name and brings its
// loopback up. A namespace of that name must not exist.
func CreateNamespace(ctx context.Context, name string) (*Namespace, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	if NamespaceExists(name) {
		return nil, fmt.Errorf("cannot create network namespace %s: it exists", name)
	}
	if err := runIP(ctx, "netns", "add", name); err != nil {
		return nil, fmt.Errorf("cannot create network namespace %s: %w", name, err)
	}
	n := &Namespace{name: name}
	if err := runIP(ctx, "-n", name, "link", "set", "lo", "up"); err != nil {
		_ = n.Delete(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("cannot bring up the loopback of %s: %w", name, err)
	}
	return n, nil
}

// NamespaceExists reports whether the named namespace exists.
func NamespaceExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

// Name is the namespace's name ("" for the current namespace).
func (n *Namespace) Name() string { return n.name }

// Current reports whether n is the process's own namespace
// (CurrentNamespace).
func (n *Namespace) Current() bool { return n.current }

// String names the namespace in messages.
func (n *Namespace) String() string {
	if n.current {
		return "the current network namespace"
	}
	return n.name
}

// exists reports whether the namespace still exists (the current one
// always does).
func (n *Namespace) exists() bool { return n.current || NamespaceExists(n.name) }

// Command returns a command that runs prog with args inside the namespace
// (`ip netns exec`, which execs prog in place: the command's PID is
// prog's; in the current namespace, prog itself).
func (n *Namespace) Command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	if n.current {
		return exec.CommandContext(ctx, prog, args...)
	}
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.name, prog}, args...)...)
}

// open opens the namespace's file, for the netlink sockets that are
// opened in it. The current namespace is the calling thread's: a goroutine
// that has not entered another namespace (Do locks its thread while it
// has) runs on a thread of the process's own, whereas the process's main
// thread, /proc/self, may be one that Do has lent to another namespace.
func (n *Namespace) open() (*os.File, error) {
	path := filepath.Join(netnsDir, n.name)
	if n.current {
		path = "/proc/thread-self/ns/net"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open network namespace %s: %w", n, err)
	}
	return f, nil
}

// Do runs fn on an OS thread that has entered the namespace, so sockets fn
// opens belong to it (they stay there after fn returns). The thread goes
// back to its own namespace afterwards, or is discarded if it cannot. In
// the current namespace fn runs directly.
func (n *Namespace) Do(fn func() error) error {
	if n.current {
		return fn()
	}
	target, err := n.open()
	if err != nil {
		return err
	}
	defer target.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("cannot open this thread's network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("cannot enter network namespace %s: %w", n.name, err)
			return
		}
		ferr := fn()
		// A thread that cannot go back stays locked, and Go ends it with
		// this goroutine.
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
		done <- ferr
	}()
	return <-done
}

// Delete removes the namespace. Processes still running in it keep it
// alive (without its name) until they exit: stop them first. The current
// namespace is never deleted: Delete of it is a no-op.
func (n *Namespace) Delete(ctx context.Context) error {
	if n.current || !NamespaceExists(n.name) {
		return nil
	}
	if err := runIP(ctx, "netns", "delete", n.name); err != nil {
		return fmt.Errorf("cannot delete network namespace %s: %w", n.name, err)
	}
	return nil
}

// Run runs prog with args inside the namespace and returns its combined
// output.
func (n *Namespace) Run(ctx context.Context, prog string, args ...string) (string, error) {
	out, err := n.Command(ctx, prog, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("cannot run %s %s in %s: %w: %s", prog, strings.Join(args, " "), n, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func runIP(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// PIDsIn lists the processes whose network namespace is the named
// namespace (by comparing /proc/PID/ns/net with its bind mount).
func PIDsIn(name string) ([]int, error) {
	var want unix.Stat_t
	if err := unix.Stat(filepath.Join(netnsDir, name), &want); err != nil {
		return nil, fmt.Errorf("cannot stat network namespace %s: %w", name, err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("cannot list processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) != nil {
			continue // gone, or not ours to see
		}
		if st.Dev == want.Dev && st.Ino == want.Ino {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
