// Package localcluster starts a standalone cluster with the distcache
// binary (`distcache up`) for the benchmark commands under hack, and
// stops it (`distcache down`).
package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/distcache/distcache/standalone/control"
)

// Up stops a cluster left running in runDir, starts the cluster of
// clusterFile there with `distcache up` and the further args, its output
// on stderr, and returns the cluster's status and down, which stops it.
// down is safe to call whatever Up returned.
func Up(ctx context.Context, distcache, clusterFile, runDir string, args ...string) (control.Status, func(), error) {
	_ = exec.CommandContext(ctx, distcache, "down", "--run-dir", runDir).Run() // a run left over
	up := exec.CommandContext(ctx, distcache, append([]string{"up", "-f", clusterFile, "--run-dir", runDir}, args...)...)
	up.Stdout, up.Stderr = os.Stderr, os.Stderr
	if err := up.Run(); err != nil {
		return control.Status{}, func() {}, fmt.Errorf("cannot start the cluster: %w", err)
	}
	down := func() {
		cmd := exec.CommandContext(context.WithoutCancel(ctx), distcache, "down", "--run-dir", runDir)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		_ = cmd.Run()
	}
	st, err := control.Dial(runDir).Status(ctx)
	return st, down, err
}
