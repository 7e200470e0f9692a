// Package conformance runs P4Runtime and gNMI clients that are not ours —
// finsy and p4runtime-shell, each from its own pinned virtualenv (their
// protobuf pins conflict) — against the software switch, and checks what
// they wrote on the switch itself.
package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/softswitch"
)

// The clients the Makefile installs (FINSY_VERSION, P4RUNTIME_SH_VERSION),
// for a test run without make.
const (
	finsyVersion       = "0.30.0"
	p4runtimeShVersion = "0.0.6"
)

var p4info = filepath.Join("..", "..", "stratum_pipelines", "p4src", "v1model", "cache_switch.p4info.txt")

// python is a client's virtualenv python: env, or where the Makefile
// creates it.
func python(t *testing.T, env, dir, version string) string {
	t.Helper()
	py := os.Getenv(env)
	if py == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		py = filepath.Join(home, ".cache", "distcache", dir, version, "bin", "python")
	}
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("no %s virtualenv (`make %s` installs it from PyPI): %v", dir, dir, err)
	}
	return py
}

// startSwitch runs a software switch with P4Runtime and gNMI on one
// loopback port, as Stratum serves them.
func startSwitch(t *testing.T) (*softswitch.Switch, string) {
	t.Helper()
	sw := switchtest.NewSwitch(t, 1)
	return sw, switchtest.Serve(t, sw)
}

func run(t *testing.T, py string, args ...string) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), py, args...).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("%s: %v\n%s", args[0], err, out)
	}
}

// entries counts the switch's entries of the table named.
func entries(t *testing.T, sw *softswitch.Switch, table uint32) int {
	t.Helper()
	es, err := sw.Read([]*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: table}}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// Table ids of the cache switch's P4Info.
const (
	switchAddress = 0x02000001
	storageRoute  = 0x02000003
	cacheLookup   = 0x02000004
)

func TestFinsy(t *testing.T) {
	py := python(t, "DISTCACHE_FINSY_PY", "finsy", finsyVersion)
	sw, addr := startSwitch(t)
	run(t, py, filepath.Join("testdata", "finsy_conformance.py"), addr, p4info, strconv.Itoa(int(sw.Addr().Port())))
	if _, cookie, ok := sw.Pipeline(); !ok || cookie == 0 {
		t.Errorf("pipeline installed %v, cookie %d", ok, cookie)
	}
	if n := entries(t, sw, switchAddress); n != 2 {
		t.Errorf("switch_address holds %d entries, want finsy's 2", n)
	}
	if n := entries(t, sw, cacheLookup); n != 1 {
		t.Errorf("cache_lookup holds %d entries, want finsy's 1", n)
	}
}

func TestP4RuntimeShell(t *testing.T) {
	py := python(t, "DISTCACHE_P4RUNTIME_SH_PY", "p4runtime-shell", p4runtimeShVersion)
	sw, addr := startSwitch(t)
	device := filepath.Join(t.TempDir(), "device-config.bin")
	if err := os.WriteFile(device, []byte("software switch"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, py, filepath.Join("testdata", "p4runtime_shell_conformance.py"), addr, p4info, device, strconv.Itoa(int(sw.Addr().Port())))
	if n := entries(t, sw, switchAddress); n != 2 {
		t.Errorf("switch_address holds %d entries, want p4runtime-shell's 2", n)
	}
	if n := entries(t, sw, storageRoute); n != 1 {
		t.Errorf("storage_route holds %d entries, want p4runtime-shell's 1", n)
	}
}
