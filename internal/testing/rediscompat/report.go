package rediscompat

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Report is a run of units and how it was run.
type Report struct {
	// Date, Machine and Command say when, where and how it ran.
	Date, Machine, Command string
	Source                 Source
	Results                []Result
}

// firstFailures is how many failures of each unit the report lists.
const firstFailures = 5

// Markdown renders the report: a table per unit with a total, the pass
// rate over the tests that ran, the failures by cause, and the first
// failures of each unit.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Redis's own test suite against the DistCache gateway\n\n")
	fmt.Fprintf(&b, "Date: %s. Machine: %s. Suite: Debian's redis source package %s.\n\n", r.Date, r.Machine, r.Source.Version)
	fmt.Fprintf(&b, "    %s\n\n", r.Command)
	b.WriteString("Each unit ran against the gateway of a fresh standalone cluster, the\n" +
		"suite as it is.\n\n")
	b.WriteString(r.Table())
	b.WriteString("\n## Failures by cause\n\n")
	b.WriteString("| cause | failed tests | errors outside a test | aborted units |\n|---|--:|--:|--:|\n")
	for _, c := range r.Causes() {
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", escape(c.Cause), c.Tests, c.Outside, c.Aborted)
	}
	b.WriteString("\n## First failures of each unit\n\n")
	for _, res := range r.Results {
		if len(res.Failures) == 0 && !res.Aborted {
			continue
		}
		fmt.Fprintf(&b, "%s:\n", res.Unit)
		for i, f := range res.Failures {
			if i == firstFailures {
				fmt.Fprintf(&b, "- and %d more\n", len(res.Failures)-i)
				break
			}
			name := "(outside a test)"
			if f.Test != "" {
				name = "`" + f.Test + "`"
			}
			fmt.Fprintf(&b, "- %s: %s\n", name, clip(f.Message, 160))
		}
		if res.Aborted {
			fmt.Fprintf(&b, "- aborted: %s\n", clip(res.AbortReason, 160))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Table is the Markdown table of the units' counts, with a total and the
// pass rate over the tests that ran.
func (r Report) Table() string {
	var b strings.Builder
	b.WriteString("| unit | passed | failed | skipped | groups cut short | aborted |\n|---|--:|--:|--:|--:|---|\n")
	var total Result
	aborted := 0
	for _, res := range r.Results {
		abort := ""
		if res.Aborted {
			abort = "yes: " + escape(clip(res.AbortReason, 80))
			aborted++
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s |\n", res.Unit, res.Passed, res.Failed, res.Skipped, res.CutShort, abort)
		total.Passed += res.Passed
		total.Failed += res.Failed
		total.Skipped += res.Skipped
		total.CutShort += res.CutShort
	}
	fmt.Fprintf(&b, "| total | %d | %d | %d | %d | %d of %d units |\n", total.Passed, total.Failed, total.Skipped, total.CutShort, aborted, len(r.Results))
	rate := 0.0
	if total.Ran() > 0 {
		rate = 100 * float64(total.Passed) / float64(total.Ran())
	}
	fmt.Fprintf(&b, "\nPassed %d of the %d tests that ran (%.1f %%).\n", total.Passed, total.Ran(), rate)
	return b.String()
}

// CauseCount is how often a cause made a test fail, an error outside a
// test, or a unit abort.
type CauseCount struct {
	Cause                   string
	Tests, Outside, Aborted int
}

// Causes counts the failures by Cause, the most frequent first.
func (r Report) Causes() []CauseCount {
	counts := map[string]*CauseCount{}
	get := func(msg string) *CauseCount {
		c := Cause(msg)
		if counts[c] == nil {
			counts[c] = &CauseCount{Cause: c}
		}
		return counts[c]
	}
	for _, res := range r.Results {
		for _, f := range res.Failures {
			if f.Test != "" {
				get(f.Message).Tests++
			} else {
				get(f.Message).Outside++
			}
		}
		if res.Aborted {
			get(res.AbortReason).Aborted++
		}
	}
	out := make([]CauseCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b CauseCount) int {
		return cmp.Or(
			cmp.Compare(b.Tests+b.Outside+b.Aborted, a.Tests+a.Outside+a.Aborted),
			cmp.Compare(a.Cause, b.Cause))
	})
	return out
}

// clip cuts s to n runes.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}

// escape keeps a text from breaking a Markdown table's row.
func escape(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
