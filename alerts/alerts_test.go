package alerts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/alerts"
	"github.com/distcache/distcache/internal/testing/kubetest"
)

// promtool is Debian's promtool (`make test` installs the prometheus
// package).
func promtool(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not on PATH: `make prometheus` installs it")
	}
	return bin
}

// TestPromtool checks the rules file (`promtool check rules`) and runs its
// unit tests (`promtool test rules`): each alert fires when it should and
// stays quiet when it should not.
func TestPromtool(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", alerts.FileName}, {"test", "rules", "distcache.rules.test.yaml"}} {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Alert       string            `json:"alert"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

type testFile struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestEveryAlertIsDocumentedAndTested checks what an on-call engineer
// relies on: every alert has a severity, a summary, a description and a
// runbook_url whose section exists in docs/runbooks.md, and the unit tests
// show it both firing and quiet.
func TestEveryAlertIsDocumentedAndTested(t *testing.T) {
	var rules ruleFile
	if err := yaml.Unmarshal(alerts.Rules, &rules); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("distcache.rules.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tests testFile
	if err := yaml.Unmarshal(raw, &tests); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	runbooks, err := os.ReadFile(filepath.Join(kubetest.RepoRoot(), "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(runbooks), -1) {
		headings[strings.ToLower(m[1])] = true
	}
	const runbookBase = "https://github.com/distcache/distcache/blob/main/docs/runbooks.md#"
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			a := r.Annotations
			if r.Labels["severity"] == "" || a["summary"] == "" || a["description"] == "" {
				t.Errorf("%s: severity %q, summary %q, description %q: want all three", r.Alert, r.Labels["severity"], a["summary"], a["description"])
			}
			anchor, ok := strings.CutPrefix(a["runbook_url"], runbookBase)
			if !ok || anchor != strings.ToLower(r.Alert) || !headings[anchor] {
				t.Errorf("%s: runbook_url %q, want %s%s with a section `## %s` in docs/runbooks.md", r.Alert, a["runbook_url"], runbookBase, strings.ToLower(r.Alert), r.Alert)
			}
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("%s: unit tests where it fires %v, where it stays quiet %v; want both", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
		}
	}
	if n == 0 {
		t.Fatal("no alerts in the rules file")
	}
}
