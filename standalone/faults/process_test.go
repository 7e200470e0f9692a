package faults

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/distcache/distcache/internal/testing/poll"
)

// TestPauseResumeKill pauses, resumes and kills a real child process and
// checks its state in /proc after each.
func TestPauseResumeKill(t *testing.T) {
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), "sleep", "120")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	if err := Pause(pid); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the paused process is stopped", func() bool { return Stopped(pid) })
	if err := Resume(pid); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the resumed process runs", func() bool { return !Stopped(pid) && Alive(pid) })
	if err := Kill(pid); err != nil {
		t.Fatal(err)
	}
	var exitErr *exec.ExitError
	if err := <-exited; !errors.As(err, &exitErr) || exitErr.String() != "signal: killed" {
		t.Fatalf("after Kill the process ended with %v, want signal: killed", err)
	}
	exited <- nil // for the cleanup
	if Alive(pid) {
		t.Fatalf("pid %d alive after Kill and Wait", pid)
	}
	if _, err := State(pid); !errors.Is(err, ErrNoProcess) {
		t.Fatalf("State of a reaped pid: %v, want ErrNoProcess", err)
	}
	if err := Pause(0); err == nil {
		t.Fatal("Pause(0) succeeded")
	}
}

// TestNamespace checks that a socket opened through Do is in the
// namespace: the namespace's own loopback, with its own ports, and the
// namespace lists no processes until one runs in it.
func TestNamespace(t *testing.T) {
	ns := newNamespace(t)
	if !NamespaceExists(ns.Name()) {
		t.Fatalf("%s does not exist after CreateNamespace", ns.Name())
	}
	pids, err := PIDsIn(ns.Name())
	if err != nil || len(pids) != 0 {
		t.Fatalf("processes in a new namespace: %v %v", pids, err)
	}
	cmd := ns.Command(context.WithoutCancel(t.Context()), "sleep", "120")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	poll.Eventually(t, "the command runs in the namespace", func() (bool, error) {
		pids, err := PIDsIn(ns.Name())
		return len(pids) == 1 && pids[0] == cmd.Process.Pid, err
	})
	out, err := ns.Run(t.Context(), "ip", "-o", "link", "show")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != 1 {
		t.Fatalf("links in the namespace:\n%s\nwant only lo", out)
	}
}
