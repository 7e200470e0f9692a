//go:build !linux

package snapshot

import "syscall"

// sysProcAttr is empty where no parent-death signal exists.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
