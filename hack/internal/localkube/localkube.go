// Package localkube helps the commands under hack that drive localkube
// (hack/localkube): it finds its processes, by the PID that localkube.sh
// recorded checked against the process's command line, and reads pods'
// readiness.
package localkube

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// APIServer is the PID and command line of the kube-apiserver whose PID
// localkube recorded under dir (its state directory). It fails unless
// that process runs and its program is kube-apiserver.
func APIServer(dir string) (pid int, argv []string, err error) {
	f := filepath.Join(dir, "pid", "kube-apiserver")
	raw, err := os.ReadFile(f)
	if err != nil {
		return 0, nil, fmt.Errorf("cannot read localkube's API server PID: %w", err)
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 1 {
		return 0, nil, fmt.Errorf("cannot use %s: bad PID %q", f, raw)
	}
	if argv, err = Cmdline(pid); err != nil {
		return 0, nil, err
	}
	if filepath.Base(argv[0]) != "kube-apiserver" {
		return 0, nil, fmt.Errorf("cannot use %s: PID %d runs %q, not kube-apiserver", f, pid, argv[0])
	}
	return pid, argv, nil
}

// Cmdline is the command line of process pid.
func Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, fmt.Errorf("cannot read the command line of PID %d: %w", pid, err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}

// PodReady reports whether p's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
