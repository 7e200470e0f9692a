package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/distcache/distcache/internal/testing/poll"
)

// asPause makes the test binary run main when the tests start it.
const asPause = "PAUSE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asPause) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestReapsAndStops starts pause the way a sandbox's runtime would leave it
// with children: a shell starts a child, then execs pause, so the child's
// parent is pause. When the child exits, pause must reap it (no zombie);
// then pause must exit 0 on the signal.
func TestReapsAndStops(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			hold, release, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer release.Close()
			// The child reads fd 3 until the test closes its end.
			cmd := exec.CommandContext(t.Context(), "/bin/sh", "-c", `cat <&3 >/dev/null & echo $!; exec "$0"`, self)
			cmd.Env = append(os.Environ(), asPause+"=1")
			cmd.ExtraFiles = []*os.File{hold}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			hold.Close()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("the shell printed no child: %v", err)
			}
			child, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatal(err)
			}
			pause := cmd.Process.Pid
			poll.Until(t, "the shell to exec pause", func() bool {
				exe, err := os.Readlink("/proc/" + strconv.Itoa(pause) + "/exe")
				return err == nil && exe == self
			})
			if ppid := procField(t, child, "PPid"); ppid != strconv.Itoa(pause) {
				t.Fatalf("the child's parent is %s, not pause (%d)", ppid, pause)
			}
			release.Close()
			poll.Until(t, "pause to reap its exited child", func() bool {
				_, err := os.Stat("/proc/" + strconv.Itoa(child))
				return errors.Is(err, os.ErrNotExist)
			})

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("pause exited with %v on %v, want status 0", err, sig)
			}
		})
	}
}

// procField is a field of /proc/pid/status.
func procField(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return ""
}
