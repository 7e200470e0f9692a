package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/distcache/distcache/containerimage"
	"github.com/distcache/distcache/internal/testing/poll"
)

// TestContainerdImport imports both archives into a containerd of its own
// (its own config, root, state and socket; no CRI plugin) with `ctr -n
// k8s.io images import`, which unpacks them, and checks the names the
// kubelet will ask for. It needs root, containerd and ctr, and skips
// without them.
func TestContainerdImport(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("containerd needs root")
	}
	for _, bin := range []string{"containerd", "ctr"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("no %s: %v", bin, err)
		}
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		t.Skip("no redis-server")
	}
	dir := t.TempDir()
	archives := map[string]string{}
	for ref, build := range map[string]func() (v1.Image, error){
		PauseRef: func() (v1.Image, error) { return PauseImage(t.Context(), created) },
		RedisRef: func() (v1.Image, error) { return RedisImage(t.Context(), "/usr/bin/redis-server", created) },
	} {
		img, err := build()
		if err != nil {
			t.Fatal(err)
		}
		archives[ref] = filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
		if err := containerimage.WriteArchiveFile(archives[ref], img, ref, created); err != nil {
			t.Fatal(err)
		}
	}
	sock := startContainerd(t, dir)
	for _, path := range archives {
		if out, err := exec.CommandContext(t.Context(), "ctr", "-a", sock, "-n", "k8s.io", "images", "import", path).CombinedOutput(); err != nil {
			t.Fatalf("ctr images import %s: %v\n%s", path, err, out)
		}
	}
	out, err := exec.CommandContext(t.Context(), "ctr", "-a", sock, "-n", "k8s.io", "images", "ls", "-q").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(out))
	for _, want := range []string{"registry.k8s.io/pause:3.10", "docker.io/library/redis:7.4"} {
		if !slices.Contains(got, want) {
			t.Errorf("containerd has %q, not %s", got, want)
		}
	}
}

// startContainerd runs containerd with everything under dir (its opt
// plugin's directory too, /opt/containerd by default) and returns its
// socket once it answers; the test's end stops it.
func startContainerd(t *testing.T, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "containerd.sock")
	config := filepath.Join(dir, "config.toml")
	err := os.WriteFile(config, fmt.Appendf(nil, `version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, sock+".ttrpc", filepath.Join(dir, "opt")), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd := exec.CommandContext(t.Context(), "containerd", "--config", config)
	// Stopped at the test's end (when its context ends) with SIGTERM.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	poll.Eventually(t, "containerd to answer", func() (bool, error) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("containerd exited: %v\n%s", err, logs.String())
		default:
		}
		err := exec.CommandContext(t.Context(), "ctr", "-a", sock, "version").Run()
		return err == nil, err
	})
	return sock
}
