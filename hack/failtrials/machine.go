package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// describeMachine is the CPUs this process may use (as nproc counts them),
// the CPU model and the memory.
func describeMachine() string {
	mem := procField("/proc/meminfo", "MemTotal")
	if kb, err := strconv.ParseFloat(strings.TrimSuffix(mem, " kB"), 64); err == nil {
		mem = fmt.Sprintf("%.0f GiB", kb/(1<<20))
	}
	return fmt.Sprintf("%d CPUs (nproc), %s, %s of memory", runtime.NumCPU(), procField("/proc/cpuinfo", "model name"), mem)
}

// procField is the value of the first line of file that starts with name
// and a colon, "unknown" if there is none.
func procField(file, name string) string {
	f, err := os.Open(file)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAverage is the host's 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// gitCommit is the working tree's commit, marked when it has changes.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		commit += " (with uncommitted changes)"
	}
	return commit
}

// commandLine is how this command was run, `go run` for a binary go run
// built.
func commandLine() string {
	name := os.Args[0]
	if strings.Contains(name, "go-build") {
		name = "go run ./hack/failtrials"
	}
	args := []string{name}
	for _, a := range os.Args[1:] {
		args = append(args, shellQuote(a))
	}
	return strings.Join(args, " ")
}

// shellQuote quotes a for a POSIX shell where it needs it.
func shellQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:@") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
