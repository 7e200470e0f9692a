// Command images builds the two images localkube needs besides distcache's
// own, without a container runtime or a registry (package containerimage),
// and writes each as an archive for `ctr -n k8s.io images import`:
//
//   - pause.tar: registry.k8s.io/pause:3.10, the pod sandbox's image, whose
//     only file is /pause, the static program of hack/localkube/pause that
//     this command builds with `go build` (run it from the repository);
//   - redis.tar: the operator's default Redis image (redis:7.4, that is
//     docker.io/library/redis:7.4), holding this machine's redis-server at
//     /usr/bin/redis-server and the shared libraries `ldd` lists for it at
//     their paths, with PATH, /data, /tmp and /etc/passwd as a container
//     needs. Its redis-server is Debian's (`make redis-server` installs
//     it): its version is the image's version label, not the tag's.
//
// With the same -created time, toolchain and host packages, the archives
// are byte for byte the same.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/distcache/distcache/containerimage"
)

// The images' references, as the kubelet and the operator ask for them.
const (
	// PauseRef is the sandbox image the kubelet and containerd expect.
	PauseRef = "registry.k8s.io/pause:3.10"
	// RedisRef is the operator's default Redis image (spec.images.redis,
	// "redis:7.4") in full.
	RedisRef = "docker.io/library/redis:7.4"
)

// The archives' names in -out.
const (
	PauseArchive = "pause.tar"
	RedisArchive = "redis.tar"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		out     = flag.String("out", "", "the directory to write "+PauseArchive+" and "+RedisArchive+" to")
		created = flag.Int64("created", 0, "the images' time in Unix seconds (reproducible builds; 0: SOURCE_DATE_EPOCH, else 0)")
		server  = flag.String("redis-server", "/usr/bin/redis-server", "the redis-server whose binary and libraries the Redis image holds")
	)
	flag.Parse()
	if *out == "" {
		return fmt.Errorf("cannot build the images: -out is required")
	}
	mtime, err := containerimage.CreatedAt(*created)
	if err != nil {
		return err
	}
	ctx := context.Background()
	pause, err := PauseImage(ctx, mtime)
	if err != nil {
		return err
	}
	redis, err := RedisImage(ctx, *server, mtime)
	if err != nil {
		return err
	}
	for _, a := range []struct {
		img  v1.Image
		ref  string
		file string
	}{{pause, PauseRef, PauseArchive}, {redis, RedisRef, RedisArchive}} {
		path := filepath.Join(*out, a.file)
		if err := containerimage.WriteArchiveFile(path, a.img, a.ref, mtime); err != nil {
			return err
		}
		digest, err := a.img.Digest()
		if err != nil {
			return fmt.Errorf("cannot write the images: %w", err)
		}
		fmt.Printf("%s %s (%s)\n", a.ref, digest, path)
	}
	return nil
}
