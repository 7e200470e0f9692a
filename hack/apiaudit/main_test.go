package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata")

// testdata/audit.log is a small audit log in the shape localkube's policy
// writes: a cache node (audit-spine-0) that GETs its map ConfigMap and
// restarts its watch, a shim and a gateway of the same ServiceAccount, the
// operator, the kubelet, a RequestReceived event of a policy that keeps
// that stage, and the end of a watch that started before the log.
func TestReport(t *testing.T) {
	log := filepath.Join("testdata", "audit.log")
	for _, tc := range []struct {
		name   string
		args   []string
		golden string
	}{
		{"whole log", nil, "whole.md"},
		{"one minute", []string{"-since", "2026-12-06T03:40:00Z", "-until", "2026-12-06T03:41:00Z"}, "minute.md"},
		{"last minute of the data plane", []string{"-last", "1m", "-user", "data-plane$"}, "last-data-plane.md"},
		{"by object name", []string{"-names", "-user", "data-plane$", "-since", "2026-12-06T03:40:00Z", "-until", "2026-12-06T03:40:30Z"}, "names.md"},
		{"last minute before until", []string{"-last", "1m", "-until", "2026-12-06T03:40:10Z", "-user", "^localkube-admin$"}, "last-until.md"},
		{"empty window", []string{"-since", "2027-01-01T00:00:00Z", "-until", "2027-01-01T00:01:00Z"}, "empty.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(append(tc.args, log), nil, &out); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), out.String()); d != "" {
				t.Errorf("report differs from %s (-want +got; go test -update rewrites it):\n%s", golden, d)
			}
		})
	}
}

// TestCounts checks the counting rules on the golden log without the
// report: each request once, a watch once when it started.
func TestCounts(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reqs, err := read(f, "audit.log")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range reqs {
		got[r.client.pod+" "+r.verb+" "+r.resource]++
	}
	want := map[string]int{
		"audit-spine-0 get configmaps":                                5,
		"audit-spine-0 watch configmaps":                              2,
		"audit-rack-0-0 get configmaps":                               2,
		"audit-rack-0-0 watch configmaps":                             1,
		"audit-gateway-7d4497dc86-s26nd get configmaps":               1,
		"distcache-c855b7b4f-sjslg get leases.coordination.k8s.io":    1,
		"distcache-c855b7b4f-sjslg update leases.coordination.k8s.io": 1,
		" patch nodes/status":                                         1,
		" get /readyz":                                                1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("requests by pod, verb and resource (-want +got):\n%s", d)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.log")
	if err := os.WriteFile(bad, []byte("{\"kind\":\"Event\"}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.log")
	if err := os.WriteFile(policy, []byte("{\"kind\":\"Policy\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.log")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join("testdata", "audit.log")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no log", nil, "no audit log given"},
		{"missing log", []string{filepath.Join(dir, "missing.log")}, "cannot read audit log"},
		{"not JSON", []string{bad}, "cannot parse audit event at " + bad + ":2"},
		{"not an event", []string{policy}, `kind "Policy", want Event`},
		{"no request", []string{empty}, "the audit logs hold no request"},
		{"last and since", []string{"-last", "1m", "-since", "2026-12-06T03:40:00Z", log}, "-last and -since exclude each other"},
		{"negative last", []string{"-last", "-1m", log}, "is negative"},
		{"until before since", []string{"-since", "2026-12-06T03:41:00Z", "-until", "2026-12-06T03:40:00Z", log}, "is not after -since"},
		{"since after the log", []string{"-since", "2027-01-01T00:00:00Z", log}, "is empty"},
		{"bad time", []string{"-since", "03:40", log}, "want RFC 3339"},
		{"bad user", []string{"-user", "(", log}, "cannot parse -user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args, nil, new(bytes.Buffer))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestStdin reads the log from standard input ("-").
func TestStdin(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"-user", "data-plane$", "-"}, bytes.NewReader(data), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| **all 3 clients** | | | | **11** |") {
		t.Errorf("want 11 requests of 3 data-plane clients:\n%s", out.String())
	}
}
