package switchtest

import (
	"io/fs"
	"testing"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// CacheSwitchP4Info is the v1model cache switch's P4Info file, as text:
// the software switch runs no other program of the cache switch, so the
// builds that tests push to it carry this P4Info.
func CacheSwitchP4Info(t testing.TB) []byte {
	t.Helper()
	b, err := fs.ReadFile(pipelines.Sources, "p4src/v1model/cache_switch.p4info.txt")
	if err != nil {
		t.Fatal(err)
	}
	return b
}
