package main

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

const (
	apiDir   = "../../api/v1alpha1"
	docsFile = "../../docs/api.md"
)

// TestReferenceUpToDate regenerates the reference and checks that
// docs/api.md holds exactly it.
func TestReferenceUpToDate(t *testing.T) {
	want, err := generate(apiDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatalf("cannot read docs/api.md (run `%s`): %v", command, err)
	}
	if string(got) == want {
		return
	}
	gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(want, "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		g, w := lineAt(gotLines, i), lineAt(wantLines, i)
		if g != w {
			t.Fatalf("docs/api.md is not what the API types generate: run `%s`.\nFirst difference, line %d:\n have: %s\n want: %s", command, i+1, g, w)
		}
	}
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}

// TestLinksResolve checks that every link to a section of the reference
// names a heading, and that no two headings share an anchor.
func TestLinksResolve(t *testing.T) {
	doc, err := generate(apiDir)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			a := anchor(h)
			if anchors[a] {
				t.Errorf("two headings have the anchor #%s", a)
			}
			anchors[a] = true
		}
	}
	links := regexp.MustCompile(`\]\(#([^)]*)\)`).FindAllStringSubmatch(doc, -1)
	if len(links) == 0 {
		t.Fatal("the reference links to none of its sections")
	}
	for _, l := range links {
		if !anchors[l[1]] {
			t.Errorf("the link to #%s names no heading", l[1])
		}
	}
}

// TestEveryTypeDocumented checks that each struct and enum the kinds use
// has a section, and that every kind is there.
func TestEveryTypeDocumented(t *testing.T) {
	a, err := load(apiDir)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := render(a)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, k := range a.kinds {
		kinds = append(kinds, k.name)
	}
	if want := []string{"CacheCluster", "CacheLayer", "SwitchFabric"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	for _, name := range []string{"StorageSpec", "CacheLayerSpec", "StorageMode", "Switch", "HotKeyStatus", "LocalSecretReference"} {
		if !strings.Contains(doc, "\n### "+name+"\n") {
			t.Errorf("no section for %s", name)
		}
	}
	if len(a.conditions) != 4 || len(a.reasons) == 0 {
		t.Errorf("%d condition types and %d reasons, want 4 and some", len(a.conditions), len(a.reasons))
	}
}

func TestParseMarker(t *testing.T) {
	for _, c := range []struct {
		in   string
		want marker
	}{
		{"optional", marker{name: "optional"}},
		{"kubebuilder:default=managed", marker{name: "kubebuilder:default", value: "managed"}},
		{`kubebuilder:default="1s"`, marker{name: "kubebuilder:default", value: `"1s"`}},
		{"kubebuilder:validation:Pattern=`^a=b$`", marker{name: "kubebuilder:validation:Pattern", value: "`^a=b$`"}},
		{
			`kubebuilder:validation:XValidation:rule="a == 'x, y'",message="no \"x\", or y"`,
			marker{name: "kubebuilder:validation:XValidation", args: map[string]string{"rule": "a == 'x, y'", "message": `no "x", or y`}},
		},
		{
			"kubebuilder:printcolumn:name=\"Ready\",type=string,JSONPath=`.status.conditions[?(@.type==\"Ready\")].status`,priority=1",
			marker{name: "kubebuilder:printcolumn", args: map[string]string{
				"name": "Ready", "type": "string", "JSONPath": `.status.conditions[?(@.type=="Ready")].status`, "priority": "1",
			}},
		},
		{
			"kubebuilder:resource:shortName=cc,categories=distcache",
			marker{name: "kubebuilder:resource", args: map[string]string{"shortName": "cc", "categories": "distcache"}},
		},
	} {
		got, err := parseMarker(c.in)
		if err != nil {
			t.Errorf("parseMarker(%s): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseMarker(%s) = %+v, want %+v", c.in, got, c.want)
		}
	}
	for _, bad := range []string{
		`kubebuilder:validation:XValidation:rule="unterminated`,
		`kubebuilder:validation:XValidation:rule="a"message="b"`,
		`kubebuilder:printcolumn:name`,
	} {
		if _, err := parseMarker(bad); err == nil {
			t.Errorf("parseMarker(%s) succeeded, want an error", bad)
		}
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{cell("a <b> `<c>`\nd | e\n\nf"), "a &lt;b&gt; `<c>` d \\| e f"},
		{code("a`b"), "`` a`b ``"},
		{anchor("CacheClusterSpec"), "cacheclusterspec"},
		{anchor("Status conditions"), "status-conditions"},
		{plural("cachecluster"), "cacheclusters"},
		{plural("policy"), "policies"},
		{literal(`"1s"`), "1s"},
		{literal("{}"), "{}"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
