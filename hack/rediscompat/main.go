// Command rediscompat runs Redis's own Tcl test suite against the gateway
// of a standalone cluster (`make redis-compat`): it fetches the suite from
// Debian's source package of the installed redis-server into -cache
// (once), runs each unit against a fresh cluster of -f, prints a table of
// what passed, failed and was skipped, and writes it with the failures by
// cause and each unit's first failures to -out. Each unit's output goes
// to -logs.
//
//	go run ./hack/rediscompat [-distcache bin/distcache] [-units unit/type/string,...] [-out out/redis-compat.md]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/distcache/distcache/internal/testing/rediscompat"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rediscompat:", err)
		os.Exit(1)
	}
}

func run() error {
	cacheDir := os.Getenv("DISTCACHE_CACHE")
	if cacheDir == "" {
		home, _ := os.UserHomeDir()
		cacheDir = filepath.Join(home, ".cache", "distcache")
	}
	var (
		distcache = flag.String("distcache", "bin/distcache", "the distcache binary (make build)")
		cluster   = flag.String("f", "hack/rediscompat/cluster.yaml", "the cluster file of the cluster each unit runs against")
		units     = flag.String("units", strings.Join(rediscompat.Units, ","), "the suite's units to run, comma-separated")
		out       = flag.String("out", "out/redis-compat.md", "the report's file")
		logs      = flag.String("logs", "out/redis-compat", "directory for each unit's output")
		cache     = flag.String("cache", cacheDir, "directory that keeps the unpacked source package ($DISTCACHE_CACHE, else ~/.cache/distcache)")
		timeout   = flag.Duration("timeout", 300*time.Second, "bound of each unit's run")
		stall     = flag.Duration("stall", 120*time.Second, "the suite's --timeout: it ends a unit whose tests make no progress for this long")
		tags      = flag.String("deny-tags", strings.Join(rediscompat.DenyTags, ","), "the suite's tags whose tests are left out, comma-separated")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	src, err := rediscompat.Fetch(ctx, *cache)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "suite: %s (Debian's redis %s)\n", src.Dir, src.Version)
	work, err := os.MkdirTemp("", "rediscompat-")
	if err != nil {
		return fmt.Errorf("cannot create a work directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(work) }()
	if err := os.MkdirAll(*logs, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", *logs, err)
	}
	opts := rediscompat.Options{
		Distcache: *distcache, ClusterFile: *cluster, WorkDir: work,
		Units: split(*units),
		Run:   rediscompat.RunOptions{Timeout: *timeout, Stall: *stall, DenyTags: split(*tags)},
		Output: func(unit string, output []byte) {
			file := filepath.Join(*logs, strings.ReplaceAll(unit, "/", "_")+".log")
			if err := os.WriteFile(file, output, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "rediscompat: cannot keep the output:", err)
			}
			res := rediscompat.Parse(unit, output)
			fmt.Fprintf(os.Stderr, "%s: %d passed, %d failed, %d skipped (%s)\n", unit, res.Passed, res.Failed, res.Skipped, file)
		},
	}
	start := time.Now()
	results, err := rediscompat.RunUnits(ctx, src, opts)
	if err != nil {
		return err
	}
	report := rediscompat.Report{
		Date:    start.UTC().Format("2006-01-02"),
		Machine: rediscompat.Machine(),
		Command: rediscompat.Command(opts.Run),
		Source:  src,
		Results: results,
	}
	fmt.Print(report.Table())
	fmt.Printf("Ran in %s. Report: %s\n", time.Since(start).Round(time.Second), *out)
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return fmt.Errorf("cannot create the report's directory: %w", err)
	}
	if err := os.WriteFile(*out, []byte(report.Markdown()), 0o644); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
