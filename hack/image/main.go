// Command image builds the distcache container image from a statically
// linked binary, without a container runtime (package containerimage), and
// writes it as an archive for docker load, kind load image-archive or ctr
// images import. `make image` runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/distcache/distcache/containerimage"
	"github.com/distcache/distcache/internal/buildinfo"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		binary   = flag.String("binary", "", "the statically linked distcache binary")
		arch     = flag.String("arch", "amd64", "the binary's GOARCH")
		version  = flag.String("version", "", "the image version: its tag and version label")
		revision = flag.String("revision", "", "the git commit (revision label)")
		created  = flag.Int64("created", 0, "the commit's time in Unix seconds (reproducible builds; 0: SOURCE_DATE_EPOCH, else 0)")
		repo     = flag.String("repository", buildinfo.Repository, "the image repository")
		out      = flag.String("out", "", "the archive to write")
	)
	flag.Parse()
	if *binary == "" || *version == "" || *out == "" {
		return fmt.Errorf("cannot build the image: -binary, -version and -out are required")
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		return fmt.Errorf("cannot build the image: %w", err)
	}
	at, err := containerimage.CreatedAt(*created)
	if err != nil {
		return err
	}
	spec := containerimage.Spec{Binary: bin, Arch: *arch, Version: *version, Revision: *revision, Created: at}
	img, err := containerimage.Build(spec)
	if err != nil {
		return err
	}
	ref := *repo + ":" + *version
	if err := containerimage.WriteArchiveFile(*out, img, ref, spec.Created); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("cannot write the image: %w", err)
	}
	fmt.Printf("%s %s (%s)\n", ref, digest, *out)
	return nil
}
