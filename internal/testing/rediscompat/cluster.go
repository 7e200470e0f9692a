package rediscompat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/distcache/distcache/standalone/control"
)

// Cluster is a standalone cluster that `distcache up` started.
type Cluster struct {
	distcache, runDir string
	// Gateway is the address of its Redis-compatible gateway.
	Gateway string
	// Shards are the addresses of its redis-servers.
	Shards []string
}

// StartCluster starts the cluster of clusterFile with the distcache binary
// in runDir (`distcache up`, which returns once every process is ready),
// after stopping a cluster left running there. Stop the cluster with Stop.
func StartCluster(ctx context.Context, distcache, clusterFile, runDir string) (*Cluster, error) {
	c := &Cluster{distcache: distcache, runDir: runDir}
	_ = exec.CommandContext(ctx, distcache, "down", "--run-dir", runDir).Run() // a run left over
	if out, err := exec.CommandContext(ctx, distcache, "up", "-f", clusterFile, "--run-dir", runDir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("cannot start the cluster of %s: %w\n%s", clusterFile, err, out)
	}
	st, err := control.Dial(runDir).Status(ctx)
	if err != nil {
		return c, errors.Join(fmt.Errorf("cannot read the cluster's status: %w", err), c.Stop(ctx))
	}
	for _, p := range st.Processes {
		switch p.Kind {
		case "gateway":
			c.Gateway = p.Addr
		case "redis":
			c.Shards = append(c.Shards, p.Addr)
		}
	}
	if c.Gateway == "" || len(c.Shards) == 0 {
		return c, errors.Join(fmt.Errorf("cannot find the gateway and the redis-servers among the cluster's %d processes", len(st.Processes)), c.Stop(ctx))
	}
	return c, nil
}

// Stop stops the cluster with `distcache down`, which stops its daemon and
// every process it ran by their PIDs and waits until they are gone.
func (c *Cluster) Stop(ctx context.Context) error {
	var out bytes.Buffer
	cmd := exec.CommandContext(context.WithoutCancel(ctx), c.distcache, "down", "--run-dir", c.runDir)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cannot stop the cluster in %s: %w\n%s", c.runDir, err, out.Bytes())
	}
	return nil
}
