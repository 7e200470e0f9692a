//go:build linux

package supervisor

import "syscall"

// sysProcAttr gives a child its own process group, and has the kernel kill
// it should the supervisor die without stopping it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
