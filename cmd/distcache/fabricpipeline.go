package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/pflag"

	"github.com/distcache/distcache/fabric/fleet"
	"github.com/distcache/distcache/fabric/pipeline"
)

// pipelineFlags are `distcache fabric`'s flags of the build it pushes.
type pipelineFlags struct {
	name                 string // --pipeline
	p4info, deviceConfig string // files of a compiled build
	image                string // an OCI artefact of one
	imageP4Info          string // the artefact's file names
	imageDeviceConfig    string
}

func (pf *pipelineFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&pf.name, "pipeline", "distcache-v1model", "the pipeline pushed to the switches: distcache-v1model (stratum-bmv2 and the software switch) or distcache-tna (Tofino)")
	fl.StringVar(&pf.p4info, "p4info", "", "P4Info file of a compiled build of --pipeline (p4c's or bf-p4c's, text or binary), checked before anything is pushed; with --device-config")
	fl.StringVar(&pf.deviceConfig, "device-config", "", "the target's compiled program of that build (bmv2 JSON, stratum-bf's packed Tofino binary), pushed as the device config; with --p4info")
	fl.StringVar(&pf.image, "pipeline-image", "", "OCI artefact of a compiled build (REGISTRY/REPOSITORY:TAG or @sha256:DIGEST), pulled with the credentials of the Docker config (oras login)")
	fl.StringVar(&pf.imageP4Info, "pipeline-image-p4info", pipeline.DefaultP4InfoKey, "file name of the P4Info in --pipeline-image")
	fl.StringVar(&pf.imageDeviceConfig, "pipeline-image-device-config", pipeline.DefaultDeviceConfigKey, "file name of the device config in --pipeline-image")
}

// load reads the build the flags name: the files, the artefact, or the
// project's own P4Info without a device config (the software switch's).
func (pf *pipelineFlags) load(ctx context.Context) (*pipeline.Pipeline, string, error) {
	switch {
	case (pf.p4info == "") != (pf.deviceConfig == ""):
		return nil, "", errors.New("cannot load the pipeline: --p4info and --device-config go together")
	case pf.p4info != "" && pf.image != "":
		return nil, "", errors.New("cannot load the pipeline: --p4info and --pipeline-image both name a build; choose one")
	case pf.p4info != "":
		p, err := pipeline.FromFiles(pf.name, pf.p4info, pf.deviceConfig)
		return p, pf.p4info + ", " + pf.deviceConfig, err
	case pf.image != "":
		a, err := pipeline.Pull(ctx, pf.image, pf.imageP4Info, pf.imageDeviceConfig, authn.DefaultKeychain)
		if err != nil {
			return nil, "", err
		}
		p, err := pipeline.Compiled(pf.name, a.P4Info, a.DeviceConfig)
		if err != nil {
			return nil, "", fmt.Errorf("cannot use %s (%s): %w", pf.image, a.Digest, err)
		}
		return p, pf.image + "@" + a.Digest, nil
	}
	p, err := pipeline.Builtin(pf.name)
	if err != nil {
		return nil, "", fmt.Errorf("cannot program the switches: --pipeline: %w", err)
	}
	return p, "builtin", nil
}

// reloadOnHangup loads the build again at every SIGHUP until ctx ends,
// from cur: a new build of the same P4Info reaches the switches in their
// sessions (fleet.Upgrade, RECONCILE_AND_COMMIT); another P4Info, or a
// build that does not load, is refused and the switches keep theirs. The
// signal is caught from when it returns.
func (pf *pipelineFlags) reloadOnHangup(ctx context.Context, f *fleet.Fleet, cur *pipeline.Pipeline, log *slog.Logger) (wait func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			p, source, err := pf.load(ctx)
			switch {
			case err != nil:
				log.Error("cannot reload the pipeline; the switches keep theirs", "err", err, "cookie", cur.CookieHex())
			case p.Cookie == cur.Cookie:
				log.Info("pipeline unchanged", "source", source, "cookie", cur.CookieHex())
			case !p.SameP4Info(cur):
				log.Error("cannot reload the pipeline: its P4Info is not the one the switches run, and a new P4Info is not pushed into running sessions; restart distcache fabric to push it (the switches start empty)",
					"source", source, "cookie", p.CookieHex(), "running", cur.CookieHex())
			default:
				if err := f.Upgrade(ctx, p); err != nil {
					log.Error("switches did not take the new build; they keep theirs and take it at their next session", "err", err, "cookie", p.CookieHex())
				} else {
					log.Info("pipeline upgraded in the switches' sessions", "source", source, "cookie", p.CookieHex(), "device_config_bytes", len(p.DeviceConfig))
				}
				cur = p
			}
		}
	}()
	return func() { <-done }
}
