//go:build unix && !linux

package redistest

import "syscall"

// sysProcAttr puts redis-server in a process group of its own, so that Stop
// also kills any child it forked (an AOF rewrite).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
