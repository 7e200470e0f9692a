package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/freeport"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/layout"
)

// runFromRoot proves that the image's redis-server runs from its own files:
// its loader resolves every library inside root, and, as root, it serves
// chrooted into root with the arguments the operator gives it.
func runFromRoot(t *testing.T, root string) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("the loader's path is amd64's; this is %s", runtime.GOARCH)
	}
	t.Run("loader", func(t *testing.T) {
		loader := filepath.Join(root, "lib64", "ld-linux-x86-64.so.2")
		server := filepath.Join(root, "usr", "bin", "redis-server")
		libPath := strings.Join(libDirs(t, root), ":")
		out, err := exec.CommandContext(t.Context(), loader, "--library-path", libPath, "--list", server).CombinedOutput()
		if err != nil {
			t.Fatalf("the image's loader cannot list redis-server's libraries: %v\n%s", err, out)
		}
		for line := range strings.Lines(string(out)) {
			if _, target, ok := strings.Cut(line, "=>"); ok && !strings.HasPrefix(strings.TrimSpace(target), root+"/") {
				t.Errorf("a library outside the image: %s", strings.TrimSpace(line))
			}
		}
		out, err = exec.CommandContext(t.Context(), loader, "--library-path", libPath, server, "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "Redis server v=") {
			t.Fatalf("the image's redis-server --version: %v\n%s", err, out)
		}
	})
	t.Run("chroot", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chroot needs root")
		}
		// As runc does: the command's name looked up on the image's PATH.
		bin := ""
		for dir := range strings.SplitSeq(RedisPATH, ":") {
			if st, err := os.Stat(filepath.Join(root, dir, "redis-server")); err == nil && st.Mode().IsRegular() {
				bin = dir + "/redis-server"
				break
			}
		}
		if bin == "" {
			t.Fatalf("no redis-server on the image's PATH %s", RedisPATH)
		}
		port := freePort(t)
		cmd := exec.CommandContext(t.Context(), bin, layout.RedisArgs(&v1alpha1.CacheClusterSpec{}, port, RedisDataDir)...)
		cmd.Path = bin
		cmd.Dir = RedisDataDir
		cmd.Env = []string{"PATH=" + RedisPATH}
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Skipf("cannot start redis-server chrooted (no CAP_SYS_CHROOT?): %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		poll.Eventually(t, "the chrooted redis-server to listen", func() (bool, error) {
			select {
			case err := <-exited:
				exited <- err
				t.Fatalf("redis-server exited: %v\n%s", err, out.String())
			default:
			}
			c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
			if err != nil {
				return false, err
			}
			return true, c.Close()
		})
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		if err := rdb.Ping(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(t.Context(), "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := rdb.Get(t.Context(), "k").Result(); err != nil || got != "v" {
			t.Fatalf("GET k = %q, %v; want v", got, err)
		}
		// The append-only file, which the operator's arguments turn on, is
		// written under the image's /data.
		entries, err := os.ReadDir(filepath.Join(root, "data"))
		if err != nil || len(entries) == 0 {
			t.Fatalf("nothing written to /data (%v)", err)
		}
	})
}

// libDirs are the directories under root holding shared libraries.
func libDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	for _, n := range entries(t, root) {
		if strings.Contains(filepath.Base(n), ".so") {
			if d := filepath.Join(root, filepath.Dir(n)); !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

func freePort(t *testing.T) int {
	t.Helper()
	ports, _, err := freeport.Ports("127.0.0.1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}
