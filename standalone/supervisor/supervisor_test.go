package supervisor_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/errtest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/standalone/supervisor"
)

// sh is a process running script under /bin/sh, logging into logDir(t).
func sh(t *testing.T, name, script string) supervisor.Spec {
	return supervisor.Spec{Name: name, Path: "/bin/sh", Args: []string{"-c", script},
		LogFile: filepath.Join(logDir(t), "logs", name+".log")}
}

// logDirs holds each test's log directory, by *testing.T.
var logDirs sync.Map

// logDir is the test's log directory, created on first use. newSupervisor
// creates it before it registers the supervisor's Stop, so that Stop runs
// first at cleanup (cleanups run last-registered first): a process the
// supervisor keeps restarting would otherwise recreate its log file while
// the directory is being removed.
func logDir(t *testing.T) string {
	if d, ok := logDirs.Load(t); ok {
		return d.(string)
	}
	d := t.TempDir()
	logDirs.Store(t, d)
	t.Cleanup(func() { logDirs.Delete(t) })
	return d
}

func newSupervisor(t *testing.T) *supervisor.Supervisor {
	t.Helper()
	logDir(t)
	s := supervisor.New(supervisor.Config{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Stop(ctx)
	})
	return s
}

func status(t *testing.T, s *supervisor.Supervisor, name string) supervisor.Status {
	t.Helper()
	st, err := s.StatusOf(name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// gone reports that pid no longer exists (it was reaped).
func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

func TestKillHoldsUntilRestart(t *testing.T) {
	s := newSupervisor(t)
	if err := s.Start(sh(t, "p", "exec sleep 300")); err != nil {
		t.Fatal(err)
	}
	first := status(t, s, "p")
	if first.State != supervisor.Running || first.PID == 0 {
		t.Fatalf("after Start: %+v, want Running with a pid", first)
	}
	if err := s.Kill("p"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the killed process to be held", func() bool { return status(t, s, "p").State == supervisor.Held })
	if !gone(first.PID) {
		t.Fatalf("pid %d still exists after Kill", first.PID)
	}
	if st := status(t, s, "p"); st.PID != 0 || st.Restarts != 0 || !strings.Contains(st.LastExit, "killed") {
		t.Fatalf("held: %+v, want no pid, no restart, killed", st)
	}
	if err := s.Restart("p"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the restart", func() bool { return status(t, s, "p").State == supervisor.Running })
	if st := status(t, s, "p"); st.PID == 0 || st.PID == first.PID || st.Restarts != 1 {
		t.Fatalf("restarted: %+v, want a new pid and 1 restart", st)
	}
}

func TestExitedProcessIsRestarted(t *testing.T) {
	s := newSupervisor(t)
	if err := s.Start(sh(t, "crash", "exit 3")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "two restarts", func() bool { return status(t, s, "crash").Restarts >= 2 })
	if st := status(t, s, "crash"); !strings.Contains(st.LastExit, "exit status 3") {
		t.Fatalf("LastExit = %q, want exit status 3", st.LastExit)
	}
}

func TestOutputGoesToLogFile(t *testing.T) {
	s := newSupervisor(t)
	spec := sh(t, "p", "echo hello from p; exec sleep 300")
	if err := s.Start(spec); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the log line", func() bool {
		b, _ := os.ReadFile(spec.LogFile)
		return strings.Contains(string(b), "hello from p")
	})
}

func TestEnvIsSetOnTopOfTheSupervisors(t *testing.T) {
	t.Setenv("DISTCACHE_TEST_INHERITED", "inherited")
	t.Setenv("DISTCACHE_TEST_REPLACED", "old")
	s := newSupervisor(t)
	spec := sh(t, "p", "echo \"env: $DISTCACHE_TEST_INHERITED $DISTCACHE_TEST_REPLACED $DISTCACHE_TEST_ADDED\"; exec sleep 300")
	spec.Env = []string{"DISTCACHE_TEST_REPLACED=new", "DISTCACHE_TEST_ADDED=added"}
	if err := s.Start(spec); err != nil {
		t.Fatal(err)
	}
	var line string
	poll.Until(t, "the log line", func() bool {
		b, _ := os.ReadFile(spec.LogFile)
		line = string(b)
		return strings.Contains(line, "env:")
	})
	if want := "env: inherited new added\n"; line != want {
		t.Fatalf("the process logged %q, want %q", line, want)
	}
}

func TestStopEndsEverything(t *testing.T) {
	s := supervisor.New(supervisor.Config{})
	specs := []supervisor.Spec{
		sh(t, "a", "exec sleep 300"),
		// Ignores SIGTERM (and so does its sleep): Stop must escalate.
		sh(t, "stubborn", `trap "" TERM; sleep 300; sleep 300`),
	}
	var pids []int
	for _, spec := range specs {
		if err := s.Start(spec); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, status(t, s, spec.Name).PID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	s.Stop(ctx)
	for i, st := range s.Status() {
		if st.State != supervisor.Stopped || st.PID != 0 {
			t.Errorf("%s after Stop: %+v, want Stopped", st.Name, st)
		}
		if !gone(pids[i]) {
			t.Errorf("%s (pid %d) still exists after Stop", st.Name, pids[i])
		}
	}
	if err := s.Start(sh(t, "late", "exec sleep 300")); err == nil {
		t.Error("Start after Stop succeeded")
	}
}

// TestStopEndsTheNamedProcessesFirst checks that the processes Stop is
// asked to stop first have exited before any other is signalled: each
// process records its SIGTERM in a file shared by all, and the one stopped
// first takes its time to exit.
func TestStopEndsTheNamedProcessesFirst(t *testing.T) {
	s := supervisor.New(supervisor.Config{})
	dir := t.TempDir()
	record := filepath.Join(dir, "terminated")
	script := func(name, exit string) string {
		return `trap 'echo ` + name + ` >> ` + record + `; ` + exit + `; exit 0' TERM; touch ` +
			filepath.Join(dir, name+".trapping") + `; while :; do sleep 0.01; done`
	}
	for _, spec := range []supervisor.Spec{
		sh(t, "watched-1", script("watched-1", "true")),
		sh(t, "watched-2", script("watched-2", "true")),
		sh(t, "watcher", script("watcher", "sleep 0.2; echo watcher-exited >> "+record)),
	} {
		if err := s.Start(spec); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"watched-1", "watched-2", "watcher"} {
		poll.Until(t, name+" to handle SIGTERM", func() bool {
			_, err := os.Stat(filepath.Join(dir, name+".trapping"))
			return err == nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.Stop(ctx, "watcher", "no-such-process")
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	if len(lines) != 4 || lines[0] != "watcher" || lines[1] != "watcher-exited" {
		t.Fatalf("terminations recorded %q, want the watcher's exit before the others' SIGTERM", lines)
	}
}

// TestStopEndsAPausedProcessWithSIGTERM pauses a process with SIGSTOP (as
// a failure experiment does) and stops the supervisor: the process must
// end by the SIGTERM, which it can only handle once it is continued, and
// not by the SIGKILL that comes when ctx ends.
func TestStopEndsAPausedProcessWithSIGTERM(t *testing.T) {
	s := supervisor.New(supervisor.Config{})
	if err := s.Start(sh(t, "paused", "exec sleep 300")); err != nil {
		t.Fatal(err)
	}
	pid := status(t, s, "paused").PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the process stopped", func() bool { return processState(pid) == 'T' })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.Stop(ctx)
	if st := status(t, s, "paused"); st.LastExit != "signal: terminated" {
		t.Fatalf("the paused process ended with %q, want signal: terminated", st.LastExit)
	}
}

// processState is the state letter of process pid in /proc (0 if gone).
func processState(pid int) byte {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

func TestStartErrors(t *testing.T) {
	s := newSupervisor(t)
	missing := supervisor.Spec{Name: "x", Path: "/nonexistent/program", LogFile: filepath.Join(t.TempDir(), "x.log")}
	if err := s.Start(missing); err == nil {
		t.Error("Start of a missing program succeeded")
	}
	if err := s.Start(sh(t, "dup", "exec sleep 300")); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(sh(t, "dup", "exec sleep 300")); err == nil {
		t.Error("Start of a second process named dup succeeded")
	}
	if err := s.Kill("nobody"); !errors.Is(err, supervisor.ErrUnknown) {
		t.Errorf("Kill(nobody) = %v, want ErrUnknown", err)
	}
}

// TestPauseAndResume pauses a real child with Pause and checks its state
// in /proc: stopped ('T'), neither exited nor restarted, and running again
// after Resume; pausing and resuming twice are no-ops.
func TestPauseAndResume(t *testing.T) {
	s := newSupervisor(t)
	if err := s.Start(sh(t, "p", "exec sleep 300")); err != nil {
		t.Fatal(err)
	}
	pid := status(t, s, "p").PID
	if err := s.Resume("p"); err != nil {
		t.Fatalf("Resume of a running process: %v, want a no-op", err)
	}
	for range 2 {
		if err := s.Pause("p"); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, "the paused process stopped", func() bool { return processState(pid) == 'T' })
	// Restart leaves a paused process alone.
	if err := s.Restart("p"); err != nil {
		t.Fatal(err)
	}
	if st := status(t, s, "p"); st.State != supervisor.Paused || st.PID != pid || st.Restarts != 0 || st.LastExit != "" {
		t.Fatalf("paused: %+v, want Paused, pid %d, no exit and no restart", st, pid)
	}
	if processState(pid) != 'T' {
		t.Fatalf("pid %d in state %q after Restart, want still stopped", pid, processState(pid))
	}
	for range 2 {
		if err := s.Resume("p"); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, "the resumed process runs", func() bool {
		st := processState(pid)
		return st != 'T' && st != 0
	})
	if st := status(t, s, "p"); st.State != supervisor.Running || st.PID != pid || st.Restarts != 0 {
		t.Fatalf("resumed: %+v, want Running, pid %d, no restart", st, pid)
	}
}

// TestPauseErrorsAndKill covers Pause and Resume of processes that are not
// running, and a paused process killed (it is held, not paused any more).
func TestPauseErrorsAndKill(t *testing.T) {
	s := newSupervisor(t)
	if err := s.Start(sh(t, "p", "exec sleep 300")); err != nil {
		t.Fatal(err)
	}
	pid := status(t, s, "p").PID
	if err := s.Pause("p"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the paused process stopped", func() bool { return processState(pid) == 'T' })
	if err := s.Kill("p"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the killed process held", func() bool { return status(t, s, "p").State == supervisor.Held })
	tests := []struct {
		name    string
		call    func(string) error
		process string
		wantErr error // nil: no error; errtest.ErrAny: some error
	}{
		{"pause unknown", s.Pause, "nobody", supervisor.ErrUnknown},
		{"resume unknown", s.Resume, "nobody", supervisor.ErrUnknown},
		{"pause held", s.Pause, "p", errtest.ErrAny},
		{"resume held (no-op)", s.Resume, "p", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(tt.process)
			errtest.Check(t, err, tt.wantErr)
		})
	}
	if err := s.Restart("p"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the restart", func() bool { return status(t, s, "p").State == supervisor.Running })
	if st := status(t, s, "p"); st.PID == pid || processState(st.PID) == 'T' {
		t.Fatalf("restarted: %+v (state %q), want a new pid, not stopped", st, processState(st.PID))
	}
}

// TestStopEndsAProcessPausedByPause stops a supervisor with a process
// paused through Pause: it must end by the SIGTERM, continued, not by the
// SIGKILL that comes when ctx ends.
func TestStopEndsAProcessPausedByPause(t *testing.T) {
	s := supervisor.New(supervisor.Config{})
	if err := s.Start(sh(t, "paused", "exec sleep 300")); err != nil {
		t.Fatal(err)
	}
	pid := status(t, s, "paused").PID
	if err := s.Pause("paused"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the process stopped", func() bool { return processState(pid) == 'T' })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.Stop(ctx)
	if st := status(t, s, "paused"); st.State != supervisor.Stopped || st.LastExit != "signal: terminated" {
		t.Fatalf("after Stop: %+v, want Stopped by signal: terminated", st)
	}
	if !gone(pid) {
		t.Fatalf("pid %d still exists after Stop", pid)
	}
	if err := s.Pause("paused"); err == nil {
		t.Error("Pause after Stop succeeded")
	}
}

// Join sees every run's PID, the restarts' too; a Join that fails fails
// the start, and the process it was given does not run on.
func TestJoin(t *testing.T) {
	s := newSupervisor(t)
	var mu sync.Mutex
	var pids []int
	spec := sh(t, "joined", "sleep 600")
	spec.Join = func(pid int) error {
		mu.Lock()
		defer mu.Unlock()
		pids = append(pids, pid)
		return nil
	}
	if err := s.Start(spec); err != nil {
		t.Fatal(err)
	}
	first := status(t, s, "joined").PID
	if err := s.Kill("joined"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the killed process to be held", func() bool { return status(t, s, "joined").State == supervisor.Held })
	if err := s.Restart("joined"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the restart", func() bool { return status(t, s, "joined").State == supervisor.Running })
	second := status(t, s, "joined").PID
	mu.Lock()
	got := append([]int(nil), pids...)
	mu.Unlock()
	if len(got) != 2 || got[0] != first || got[1] != second {
		t.Errorf("Join saw %v, want [%d %d]", got, first, second)
	}

	var refused int
	bad := sh(t, "refused", "sleep 600")
	bad.Join = func(pid int) error { refused = pid; return errors.New("no such group") }
	err := s.Start(bad)
	if err == nil || !strings.Contains(err.Error(), "no such group") {
		t.Fatalf("Start with a failing Join: err = %v", err)
	}
	if refused == 0 {
		t.Fatal("Join was not called")
	}
	if err := syscall.Kill(refused, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d of the refused start: kill(0) = %v, want ESRCH", refused, err)
	}
}

// TestExitTellsTheLastLogLine checks that the supervisor's warning of an
// exit carries the last line the process wrote: why it ended.
func TestExitTellsTheLastLogLine(t *testing.T) {
	logDir(t)
	var mu sync.Mutex // guards logged
	var logged bytes.Buffer
	s := supervisor.New(supervisor.Config{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Stop(ctx)
	})
	if err := s.Start(sh(t, "crash", "echo starting; echo 'Error: cannot listen on 127.0.0.1:6379: address already in use'; exit 1")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "an exit logged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(logged.String(), "process exited")
	})
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), `last_log_line="Error: cannot listen on 127.0.0.1:6379: address already in use"`) {
		t.Fatalf("supervisor log lacks the process's last line:\n%s", logged.String())
	}
}

// lockedWriter writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
