package snapshot

import "syscall"

// sysProcAttr kills a temporary redis-server with the process that started
// it.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
