package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/placement/partmap"
)

// serveOptions are the flags every long-running data-plane role shares.
type serveOptions struct {
	maps        mapSourceFlags
	listen      string
	metricsAddr string
	mapPoll     time.Duration
	drain       time.Duration // the most a draining role waits on SIGTERM (drainer)
	logLevel    string
	readers     int
	batch       int
	bundle      bool
	key         dataKey
}

func (o *serveOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	o.maps.addFlags(cmd, "partition map file (standalone mode's); reloaded when it changes", true)
	f.StringVar(&o.listen, "listen", "", "UDP address to serve on (default: this role's address in the map)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "127.0.0.1:0", "address of the /metrics and /healthz endpoint")
	f.DurationVar(&o.mapPoll, "map-poll", mapwatch.DefaultInterval, "how often the map is read (a cache node's lease renewals); a --map-configmap watch also triggers a read on every change")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.IntVar(&o.readers, "readers", 1, "goroutines reading the UDP socket")
	f.IntVar(&o.batch, "batch", transport.DefaultBatch, "datagrams received, and replies sent, per system call (1: one per call)")
	f.BoolVar(&o.bundle, "bundle", false, "send the messages that leave together for one peer in one bundle datagram instead of a datagram each; bundles are received either way (turn it on once every process of the cluster parses them)")
	o.key.addFlag(cmd)
}

func (o *serveOptions) logger() (*slog.Logger, error) { return newLogger(o.logLevel) }

// newLogger is a role's logger: text on stderr (its log file under `up`)
// at level ("debug", "info", "warn" or "error").
func newLogger(level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("cannot parse --log-level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// load returns the logger and the watcher of the map source.
func (o *serveOptions) load(ctx context.Context) (*slog.Logger, *mapwatch.Watcher, error) {
	log, err := o.logger()
	if err != nil {
		return nil, nil, err
	}
	w, err := o.maps.open(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	if err := o.key.load(); err != nil {
		return nil, nil, err
	}
	return log, w, nil
}

// transport configures the role's UDP endpoint on --listen, or on addr
// from the map when --listen is not given.
func (o *serveOptions) transport(addr string, log *slog.Logger) transport.Config {
	if o.listen != "" {
		addr = o.listen
	}
	c := transport.Config{Addr: addr, Readers: o.readers, Batch: o.batch, Bundle: o.bundle, Logger: log}
	o.key.apply(&c)
	return c
}

// role is a data-plane component as `serve` runs it.
type role interface {
	SetMap(*partmap.Placement) error
	Start() error
	Close() error
}

// utilizationReporter is a role with an emulated capacity whose
// utilization /healthz reports (metrics.WithUtilization): a cache node.
type utilizationReporter interface {
	Utilization() (float64, bool)
}

// workReporter is a role with an emulated capacity whose work /work
// reports (metrics.WithWork): a shim or cache node.
type workReporter interface {
	Work() metrics.Work
}

// hotKeysReporter is a role that reports the keys it served most (GET
// /hotkeys, metrics.WithHotKeys): a shim or cache node.
type hotKeysReporter interface {
	HotKeys() metrics.HotKeys
}

// missRatioCurveReporter is a role that reports the miss-ratio curve of
// its reads (GET /mrc, metrics.WithMissRatioCurve): a cache node.
type missRatioCurveReporter interface {
	MissRatioCurve() metrics.MissRatioCurve
}

// drainer is a role that stops gracefully (a cache node): on SIGTERM it
// drains for at most --drain-timeout, its /healthz failing, while the map
// goes on being read.
type drainer interface {
	Drain(ctx context.Context) error
	Healthy() error
}

// serve runs r until SIGINT or SIGTERM: it feeds r every new map version
// from the map source and exposes reg on the metrics address. A drainer
// drains before it stops, for at most o.drain; a second signal ends the
// process.
func serve(cmd *cobra.Command, o *serveOptions, w *mapwatch.Watcher, r role, reg *prometheus.Registry, healthy func() error, log *slog.Logger, attrs ...any) error {
	d, drains := r.(drainer)
	if drains && o.drain > 0 {
		healthy = joinHealth(healthy, d.Healthy)
	}
	if err := r.SetMap(w.Current()); err != nil {
		return err
	}
	var applied atomic.Int64 // the version r uses, for GET /status
	applied.Store(w.Current().Version())
	w.Subscribe(func(p *partmap.Placement) error {
		if err := r.SetMap(p); err != nil {
			return err
		}
		applied.Store(p.Version())
		return nil
	})
	// The first read: a cache node's serving lease starts from it.
	if _, err := w.Reload(); err != nil {
		log.Warn("keeping the current partition map", "source", w.Source(), "err", err)
	}
	if err := r.Start(); err != nil {
		return err
	}
	defer func() {
		if err := r.Close(); err != nil {
			log.Error("cannot stop cleanly", "err", err)
		}
	}()
	opts := []metrics.ServerOption{metrics.WithStatus(func() metrics.Status {
		return metrics.Status{MapVersion: applied.Load()}
	})}
	if u, ok := r.(utilizationReporter); ok {
		opts = append(opts, metrics.WithUtilization(u.Utilization))
	}
	if wr, ok := r.(workReporter); ok {
		opts = append(opts, metrics.WithWork(wr.Work))
	}
	if hr, ok := r.(hotKeysReporter); ok {
		opts = append(opts, metrics.WithHotKeys(hr.HotKeys))
	}
	if cr, ok := r.(missRatioCurveReporter); ok {
		opts = append(opts, metrics.WithMissRatioCurve(cr.MissRatioCurve))
	}
	ms, err := metrics.Listen(o.metricsAddr, reg, healthy, opts...)
	if err != nil {
		return err
	}
	defer func() { _ = ms.Close(context.Background()) }()
	signalled, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(cmd.Context()) // the map and key watches, past the signal while draining
	defer cancel()
	go w.Run(ctx, o.mapPoll)
	o.key.watch(ctx, log)
	log.Info("serving", append(attrs, "metrics", ms.Addr(), "map_version", w.Current().Version(), "authenticated", o.key.ring != nil)...)
	<-signalled.Done()
	stop() // a second signal ends the process
	if drains && o.drain > 0 && cmd.Context().Err() == nil {
		log.Info("draining", "timeout", o.drain)
		dctx, dcancel := context.WithTimeout(ctx, o.drain)
		err := d.Drain(dctx)
		dcancel()
		log.Info("drained", "released", err == nil)
	}
	log.Info("stopping")
	return nil
}

// joinHealth is healthy when both a (nil: always) and b are.
func joinHealth(a, b func() error) func() error {
	if a == nil {
		return b
	}
	return func() error { return errors.Join(a(), b()) }
}
