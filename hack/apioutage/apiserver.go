package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/distcache/distcache/hack/internal/localkube"
)

// apiServer is localkube's kube-apiserver process.
type apiServer struct {
	pid  int
	argv []string
	env  []string
	dir  string
}

// findAPIServer reads the PID localkube recorded and checks that it is a
// running kube-apiserver, not stopped.
func findAPIServer(state string) (*apiServer, error) {
	pid, argv, err := localkube.APIServer(state)
	if err != nil {
		return nil, err
	}
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	if st, err := procState(pid); err != nil || st != "R" && st != "S" && st != "D" {
		return nil, fmt.Errorf("API server pid %d is in state %q (%v): not running", pid, st, err)
	}
	environ, err := os.ReadFile(filepath.Join(proc, "environ"))
	if err != nil {
		return nil, err
	}
	dir, err := os.Readlink(filepath.Join(proc, "cwd"))
	if err != nil {
		return nil, err
	}
	var env []string
	if s := strings.TrimRight(string(environ), "\x00"); s != "" {
		env = strings.Split(s, "\x00")
	}
	return &apiServer{pid: pid, argv: argv, env: env, dir: dir}, nil
}

// procState is the state letter of /proc/PID/stat.
func procState(pid int) (string, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", err
	}
	i := strings.LastIndexByte(string(raw), ')')
	f := strings.Fields(string(raw[i+1:]))
	if len(f) == 0 {
		return "", errors.New("short stat")
	}
	return f[0], nil
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := procState(pid)
	return err == nil && st != "Z"
}

// halt stops the API server: SIGSTOP, or SIGTERM and SIGKILL after a
// minute.
func (a *apiServer) halt(mode string) error {
	if mode == "stop" {
		return syscall.Kill(a.pid, syscall.SIGSTOP)
	}
	if err := syscall.Kill(a.pid, syscall.SIGTERM); err != nil {
		return err
	}
	for i := 0; i < 120 && alive(a.pid); i++ {
		time.Sleep(500 * time.Millisecond)
	}
	if alive(a.pid) {
		_ = syscall.Kill(a.pid, syscall.SIGKILL)
		for i := 0; i < 20 && alive(a.pid); i++ {
			time.Sleep(500 * time.Millisecond)
		}
	}
	a.pid = -a.pid // ended: resume starts a new one
	return nil
}

// resume brings the API server back: SIGCONT to a stopped one, or a new
// process with the old one's command line.
func (a *apiServer) resume(state string) error {
	if a.pid > 0 {
		return syscall.Kill(a.pid, syscall.SIGCONT)
	}
	logf, err := os.OpenFile(filepath.Join(state, "log", "kube-apiserver.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(a.argv[0], a.argv[1:]...)
	cmd.Env, cmd.Dir = a.env, a.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	a.pid = cmd.Process.Pid
	if err := os.WriteFile(filepath.Join(state, "pid", "kube-apiserver"), []byte(strconv.Itoa(a.pid)+"\n"), 0o644); err != nil {
		return err
	}
	return cmd.Process.Release()
}
