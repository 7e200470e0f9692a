package rediscompat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Options say what RunUnits runs, and where.
type Options struct {
	// Distcache is the distcache binary, ClusterFile the cluster it
	// starts for each unit.
	Distcache, ClusterFile string
	// WorkDir holds the suite's working copy and the clusters' run
	// directory.
	WorkDir string
	Units   []string
	Run     RunOptions
	// Output, if set, gets each unit's output as the suite printed it.
	Output func(unit string, output []byte)
}

// RunUnits runs each unit of o.Units against the gateway of a cluster of
// its own, started before the unit and stopped after it, and returns the
// units' results.
func RunUnits(ctx context.Context, src Source, o Options) ([]Result, error) {
	suite, err := NewSuite(src, filepath.Join(o.WorkDir, "suite"))
	if err != nil {
		return nil, err
	}
	runDir := filepath.Join(o.WorkDir, "run")
	var results []Result
	for _, unit := range o.Units {
		if _, err := os.Stat(filepath.Join(src.Dir, "tests", unit+".tcl")); err != nil {
			return results, fmt.Errorf("cannot run unit %s: %w", unit, err)
		}
		cluster, err := StartCluster(ctx, o.Distcache, o.ClusterFile, runDir)
		if err != nil {
			return results, err
		}
		out, res, runErr := suite.Run(ctx, cluster, unit, o.Run)
		stopErr := cluster.Stop(ctx)
		if o.Output != nil && out != nil {
			o.Output(unit, out)
		}
		if err := errors.Join(runErr, stopErr); err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
}

// Command is the suite's command line for every unit, with the gateway's
// port and the unit as PORT and UNIT.
func Command(o RunOptions) string {
	args, _ := o.Args("127.0.0.1:PORT", "UNIT")
	for i, a := range args {
		if strings.Contains(a, " ") {
			args[i] = `"` + a + `"`
		}
	}
	return "tclsh " + strings.Join(args, " ")
}

// Machine describes this machine: its CPUs and operating system.
func Machine() string {
	osName := runtime.GOOS
	if data, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				osName = strings.Trim(v, `"`)
			}
		}
	}
	return fmt.Sprintf("%d CPUs, %s", runtime.NumCPU(), osName)
}
