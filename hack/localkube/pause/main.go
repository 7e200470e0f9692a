// Command pause is the process of localkube's pod sandboxes, built into the
// image registry.k8s.io/pause:3.10 by hack/localkube/images in place of
// Kubernetes' own: it holds the pod's namespaces open and does nothing
// else. It reaps the zombie children it inherits (as a pod's PID 1 with a
// shared process namespace, every orphan becomes its child) and exits 0 on
// SIGTERM or SIGINT.
package main

import (
	"errors"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

func main() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGCHLD)
	// Children that exited before Notify sent no signal we saw.
	reap()
	for s := range sigs {
		if s == unix.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap waits for every child that has exited, without blocking: one SIGCHLD
// may stand for several.
func reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}
