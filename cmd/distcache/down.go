package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/standalone"
	"github.com/distcache/distcache/standalone/control"
)

func newDownCommand() *cobra.Command {
	var (
		ref     clusterRef
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop a standalone cluster and every process it runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runDir, err := ref.resolveRunDir(cmd.Context())
			if err != nil {
				return err
			}
			return down(cmd, runDir, timeout)
		},
	}
	ref.addFlags(cmd, "the cluster's YAML files (to find it by its name)")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for the processes to exit before killing them")
	return cmd
}

// down asks the cluster in runDir to stop and waits until its daemon and
// every process it ran are gone, killing what is left after timeout.
func down(cmd *cobra.Command, runDir string, timeout time.Duration) error {
	ctx := cmd.Context()
	c := control.Dial(runDir)
	var pids []int
	st, statusErr := c.Status(ctx)
	if statusErr == nil {
		for _, p := range st.Processes {
			if p.PID > 0 {
				pids = append(pids, p.PID)
			}
		}
	}
	daemon := readPID(filepath.Join(runDir, standalone.PIDFile))
	if statusErr != nil && daemon == 0 {
		return fmt.Errorf("cannot stop the cluster in %s: %w", runDir, statusErr)
	}
	if statusErr == nil {
		if err := c.Shutdown(ctx); err != nil {
			return fmt.Errorf("cannot stop the cluster in %s: %w", runDir, err)
		}
	} else if daemon > 0 {
		_ = syscall.Kill(daemon, syscall.SIGTERM)
	}
	if daemon > 0 {
		pids = append(pids, daemon)
	}
	left := waitGone(ctx, pids, timeout)
	for _, pid := range left {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // its process group
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if left = waitGone(ctx, left, 5*time.Second); len(left) > 0 {
		return fmt.Errorf("cannot stop the cluster in %s: processes %v still running", runDir, left)
	}
	name := st.Cluster
	if name == "" {
		name = filepath.Base(runDir)
	}
	cmd.Printf("cluster %s stopped: %d processes, nothing left running\n", name, len(pids))
	return nil
}

// readPID reads a pid file (0 if missing or malformed).
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// waitGone waits until none of pids exists or timeout passes, and returns
// those still running.
func waitGone(ctx context.Context, pids []int, timeout time.Duration) []int {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return left
		case <-t.C:
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err) // no /proc entry: gone
	}
	// The state follows the parenthesised command name: "Z" is a zombie.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
