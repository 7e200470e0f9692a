//go:build linux

package redistest

import "syscall"

// sysProcAttr puts redis-server in a process group of its own, so that Stop
// also kills any child it forked (an AOF rewrite), and has the kernel kill it
// should the test binary die without running its cleanups (a panic, -timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
