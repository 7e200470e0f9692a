package faults

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Kill sends SIGKILL to pid: a crash, which the standalone supervisor
// answers by starting the process again.
func Kill(pid int) error { return signal(pid, syscall.SIGKILL) }

// Pause stops pid with SIGSTOP: it keeps its sockets and its state but
// answers nothing until Resume.
func Pause(pid int) error { return signal(pid, syscall.SIGSTOP) }

// Resume continues pid with SIGCONT.
func Resume(pid int) error { return signal(pid, syscall.SIGCONT) }

// Signal sends sig to pid.
func Signal(pid int, sig syscall.Signal) error { return signal(pid, sig) }

func signal(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return fmt.Errorf("cannot send %v: no pid", sig)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("cannot send %v to pid %d: %w", sig, pid, err)
	}
	return nil
}

// ErrNoProcess is wrapped when a pid does not exist.
var ErrNoProcess = errors.New("no such process")

// State is a process's state letter in /proc/PID/stat: R running, S
// sleeping, D disk sleep, T stopped, Z zombie, and so on.
func State(pid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if os.IsNotExist(err) {
			return 0, fmt.Errorf("cannot read the state of pid %d: %w", pid, ErrNoProcess)
		}
		return 0, fmt.Errorf("cannot read the state of pid %d: %w", pid, err)
	}
	// The state follows the parenthesised command name, which may contain
	// spaces and parentheses itself.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, fmt.Errorf("cannot parse /proc/%d/stat", pid)
	}
	return s[i+2], nil
}

// Stopped reports whether pid is stopped by a signal (state T).
func Stopped(pid int) bool {
	st, err := State(pid)
	return err == nil && st == 'T'
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	st, err := State(pid)
	return err == nil && st != 'Z' && st != 'X'
}
