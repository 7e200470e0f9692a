package onos

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// onosVersion is the ONOS release whose REST spec and codecs the driver
// is checked against (make onos-rest, make onos-codecs).
const onosVersion = "2.7.0"

// toolPath is the file a Makefile target puts under
// ~/.cache/distcache/<dir>/<onosVersion>, or the one env names; the test
// skips when it is not there (go test by hand, without the target run).
func toolPath(t *testing.T, env, dir, file, target string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		p = filepath.Join(home, ".cache", "distcache", dir, onosVersion, file)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no %s (%s; `make %s` downloads or builds it): %v", file, env, target, err)
	}
	return p
}

// swagger is the part of ONOS's REST spec (swagger 2.0) the check reads.
type swagger struct {
	BasePath string                                 `json:"basePath"`
	Paths    map[string]map[string]swaggerOperation `json:"paths"`
}

type swaggerOperation struct {
	Parameters []struct {
		Name     string `json:"name"`
		In       string `json:"in"`
		Required bool   `json:"required"`
	} `json:"parameters"`
}

func loadSwagger(t *testing.T) *swagger {
	t.Helper()
	p := toolPath(t, "DISTCACHE_ONOS_REST_SWAGGER", "onos-rest", "swagger.json", "onos-rest")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var s swagger
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("cannot parse %s: %v", p, err)
	}
	if s.BasePath != basePath || len(s.Paths) == 0 {
		t.Fatalf("%s has base path %q and %d paths, want %s and some", p, s.BasePath, len(s.Paths), basePath)
	}
	return &s
}

var templateParam = regexp.MustCompile(`^\{[^/}]+\}$`)

// templateRegexp matches the paths of a path template: a {parameter} is
// one path segment.
func templateRegexp(tmpl string) *regexp.Regexp {
	segs := strings.Split(tmpl, "/")
	for i, s := range segs {
		if templateParam.MatchString(s) {
			segs[i] = `[^/]+`
		} else {
			segs[i] = regexp.QuoteMeta(s)
		}
	}
	return regexp.MustCompile("^" + strings.Join(segs, "/") + "$")
}

// check says why r is not a request of the spec ("" when it is): its path
// must match a path template that has its method, with the template's
// required query parameters, and a body exactly when it takes one.
func (s *swagger) check(r recorded) string {
	for tmpl, ops := range s.Paths {
		if !templateRegexp(tmpl).MatchString(r.Path) {
			continue
		}
		op, ok := ops[strings.ToLower(r.Method)]
		if !ok {
			continue
		}
		body := false
		for _, p := range op.Parameters {
			switch {
			case p.In == "query" && p.Required && r.Query.Get(p.Name) == "":
				return "lacks required query parameter " + p.Name + " of " + tmpl
			case p.In == "body":
				body = true
			}
		}
		if body != (len(r.Body) > 0) {
			return "has a body where " + tmpl + " takes none, or none where it takes one"
		}
		return ""
	}
	return "matches no path and method of ONOS's REST API"
}

// allRequests are the requests of every case of TestRequests, run once
// for the checks against ONOS.
var allRequests = struct {
	once sync.Once
	reqs []recorded
}{}

func requestsOfAllCases(t *testing.T) []recorded {
	t.Helper()
	allRequests.once.Do(func() {
		runRequestCases(t, func(_ *testing.T, _ requestCase, got []recorded) {
			allRequests.reqs = append(allRequests.reqs, got...)
		})
	})
	if len(allRequests.reqs) == 0 {
		t.Fatal("the request cases sent nothing")
	}
	return allRequests.reqs
}

// TestRequestsAreInONOSSpec checks every request the driver sends against
// ONOS 2.7.0's REST spec, the swagger.json of org.onosproject:onos-rest.
func TestRequestsAreInONOSSpec(t *testing.T) {
	spec := loadSwagger(t)
	reqs := requestsOfAllCases(t)
	kinds := map[string]bool{}
	for _, r := range reqs {
		if why := spec.check(r); why != "" {
			t.Errorf("%s %s?%s %s", r.Method, r.Path, r.Query.Encode(), why)
		}
		kinds[r.Method+" "+r.Path] = true
	}
	t.Logf("%d requests (%d distinct) in ONOS %s's REST spec", len(reqs), len(kinds), onosVersion)
	// The check fails requests ONOS has no resource for.
	for _, c := range []struct {
		r  recorded
		ok bool
	}{
		{recorded{Method: "GET", Path: "/flows/device:a"}, true},
		{recorded{Method: "POST", Path: "/flows", Body: []byte(`{"flows":[]}`)}, false}, // no appId
		{recorded{Method: "PUT", Path: "/flows/device:a", Query: url.Values{"appId": {"x"}}, Body: []byte("{}")}, false},
		{recorded{Method: "DELETE", Path: "/flows"}, false}, // no body
		{recorded{Method: "POST", Path: "/registers/device:a/lease_until", Body: []byte("{}")}, false},
		{recorded{Method: "POST", Path: "/packet/out", Body: []byte("{}")}, false},
	} {
		if why := spec.check(c.r); (why == "") != c.ok {
			t.Errorf("%s %s: check says %q, want ok %v", c.r.Method, c.r.Path, why, c.ok)
		}
	}
}

// TestONOSRESTHasNoRegistersOrPacketOuts backs what the docs say an ONOS
// driven switch cannot do: ONOS 2.7.0's REST API has no resource for P4
// registers, counters of a P4 program, digests or packet-outs.
func TestONOSRESTHasNoRegistersOrPacketOuts(t *testing.T) {
	spec := loadSwagger(t)
	var packet []string
	for p, ops := range spec.Paths {
		for _, word := range []string{"register", "counter", "digest", "/pi", "p4"} {
			if strings.Contains(strings.ToLower(p), word) && p != "/applications/{name}/register" {
				t.Errorf("ONOS's REST API has %s", p)
			}
		}
		if strings.HasPrefix(p, "/packet") {
			for m := range ops {
				packet = append(packet, m+" "+p)
			}
		}
	}
	sort.Strings(packet)
	if strings.Join(packet, ",") != "get /packet/processors" {
		t.Errorf("ONOS's packet resources are %v, want only get /packet/processors", packet)
	}
}
