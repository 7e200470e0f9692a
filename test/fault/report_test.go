package fault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/distcache/distcache/standalone/faults"
	"github.com/distcache/distcache/test/fault/schedule"
	"github.com/distcache/distcache/workload/checker"
)

// result is what one schedule's run found.
type result struct {
	Number   int               `json:"number"`
	Seed     uint64            `json:"seed"`
	Schedule schedule.Schedule `json:"schedule"`
	Dir      string            `json:"dir"`
	// FaultStart is when the timed workload started: the faults' times
	// are from here.
	FaultStart  time.Time       `json:"workloadStart"`
	Faults      []faults.Record `json:"faultsInjected"`
	ExitCode    int             `json:"checkerExitCode"`
	Verdict     string          `json:"verdict"`
	Operations  int64           `json:"operations"`
	MapVersions [2]int64        `json:"mapVersions"`
	Violations  []violation     `json:"violations,omitempty"`
	LostWrites  []lostWrite     `json:"lostWrites,omitempty"`
	Unchecked   []string        `json:"unchecked,omitempty"`
	// Errors are failures of the run itself: a fault that could not be
	// injected or healed, a checker that could not run, a teardown that
	// left something behind.
	Errors []string `json:"errors,omitempty"`
}

// violation is a key whose history is not linearizable.
type violation struct {
	Key        string `json:"key"`
	Operations int    `json:"operations"`
	// Tail is the end of the shortest failing prefix of the key's history
	// (the checker's minimal failing history).
	Tail json.RawMessage `json:"minimalHistoryTail"`
	// History is the file with the key's whole history; Visualization
	// porcupine's HTML of the failing prefix.
	History       string `json:"history,omitempty"`
	Visualization string `json:"visualization,omitempty"`
}

// lostWrite is an acknowledged write the final read-back did not find.
type lostWrite struct {
	// ReadBack is routed (through the cache) or direct (from Redis).
	ReadBack string          `json:"readBack"`
	Key      string          `json:"key"`
	Detail   json.RawMessage `json:"detail"`
	History  string          `json:"history,omitempty"`
}

// fromVerdict fills r from the checker's verdict.
func (r *result) fromVerdict(v *checker.Verdict) {
	r.Verdict, r.Operations = string(v.Result), v.Counts.Operations
	r.Unchecked = v.Linearizability.Unchecked
	for _, vi := range v.Linearizability.Violations {
		tail, _ := json.Marshal(vi.Tail)
		r.Violations = append(r.Violations, violation{
			Key: vi.Key, Operations: vi.Operations, Tail: tail,
			History: v.Histories[vi.Key], Visualization: vi.Visualization,
		})
	}
	for _, rb := range []struct {
		name string
		rb   *checker.ReadBack
	}{{"routed", &v.Routed}, {"direct", v.Direct}} {
		if rb.rb == nil {
			continue
		}
		for _, l := range rb.rb.Lost {
			detail, _ := json.Marshal(l)
			r.LostWrites = append(r.LostWrites, lostWrite{ReadBack: rb.name, Key: l.Key, Detail: detail, History: v.Histories[l.Key]})
		}
	}
}

// passed reports whether the schedule ran and the checker found nothing
// wrong.
func (r *result) passed() bool {
	return len(r.Errors) == 0 && r.ExitCode == 0 && r.Verdict == "PASS" && len(r.Violations) == 0 && len(r.LostWrites) == 0
}

// outcome is a one-word summary of the result.
func (r *result) outcome() string {
	switch {
	case len(r.Violations) > 0 || len(r.LostWrites) > 0:
		return "FAIL"
	case len(r.Errors) > 0:
		return "ERROR"
	case r.Verdict == "":
		return "NO-VERDICT"
	default:
		return r.Verdict
	}
}

// progressLine is the line printed after each schedule.
func (r *result) progressLine(total int) string {
	return fmt.Sprintf("schedule %d/%d seed %d: %d faults, %d ops, %s (%d violations, %d lost writes, %d errors)",
		r.Number, total, r.Seed, len(r.Faults), r.Operations, r.outcome(), len(r.Violations), len(r.LostWrites), len(r.Errors))
}

// report is the result of a run of many schedules.
type report struct {
	Seed       uint64    `json:"seed"`
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	Schedules  int       `json:"schedules"`
	Passed     int       `json:"passed"`
	Operations int64     `json:"operations"`
	Faults     int       `json:"faultsInjected"`
	// FaultsByKind counts the injected faults per class.
	FaultsByKind map[string]int `json:"faultsByKind"`
	Violations   int            `json:"violations"`
	LostWrites   int            `json:"lostWrites"`
	Errors       int            `json:"errors"`
	Results      []result       `json:"results"`
}

// add counts r into the report.
func (rep *report) add(r result) {
	rep.Results = append(rep.Results, r)
	rep.Schedules++
	if r.passed() {
		rep.Passed++
	}
	rep.Operations += r.Operations
	rep.Faults += len(r.Faults)
	if rep.FaultsByKind == nil {
		rep.FaultsByKind = map[string]int{}
	}
	for _, f := range r.Faults {
		rep.FaultsByKind[f.Kind]++
	}
	rep.Violations += len(r.Violations)
	rep.LostWrites += len(r.LostWrites)
	rep.Errors += len(r.Errors)
}

// write writes report.txt and report.json into dir.
func (rep *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	var b strings.Builder
	rep.text(&b)
	if err := os.WriteFile(filepath.Join(dir, "report.txt"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	return nil
}

// text renders the report for people.
func (rep *report) text(w io.Writer) {
	fmt.Fprintf(w, "DistCache fault-injection run: %d schedules from seed %d\n", rep.Schedules, rep.Seed)
	fmt.Fprintf(w, "started %s, finished %s\n\n", rep.Started.UTC().Format(time.RFC3339), rep.Finished.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "schedules passed:        %d of %d\n", rep.Passed, rep.Schedules)
	fmt.Fprintf(w, "operations checked:      %d\n", rep.Operations)
	fmt.Fprintf(w, "faults injected:         %d\n", rep.Faults)
	for _, k := range slices.Sorted(maps.Keys(rep.FaultsByKind)) {
		fmt.Fprintf(w, "  %-21s  %d\n", k, rep.FaultsByKind[k])
	}
	fmt.Fprintf(w, "linearizability violations: %d\n", rep.Violations)
	fmt.Fprintf(w, "lost acknowledged writes:   %d\n", rep.LostWrites)
	fmt.Fprintf(w, "run errors:                 %d\n", rep.Errors)
	for _, r := range rep.Results {
		fmt.Fprintf(w, "\n== %s\n", r.progressLine(rep.Schedules))
		fmt.Fprintf(w, "cluster %s, map versions %d -> %d, files in %s\n", r.Schedule.Cluster.File, r.MapVersions[0], r.MapVersions[1], r.Dir)
		fmt.Fprintln(w, "faults (seconds from the start of the workload):")
		for _, f := range r.Faults {
			line := fmt.Sprintf("  %7.3fs  %-17s %-7s %s  %s", f.Start.Sub(r.FaultStart).Seconds(), f.Kind,
				f.Duration().Round(time.Millisecond), strings.Join(f.Targets, " "), f.Detail)
			if f.Err != "" {
				line += "  ERROR: " + f.Err
			}
			fmt.Fprintln(w, line)
		}
		for _, v := range r.Violations {
			fmt.Fprintf(w, "violation: key %s (%d operations)\n", v.Key, v.Operations)
			fmt.Fprintf(w, "  minimal failing history (tail): %s\n", compactJSON(v.Tail))
			if v.Visualization != "" {
				fmt.Fprintf(w, "  visualization: %s\n", v.Visualization)
			}
			if v.History != "" {
				fmt.Fprintf(w, "  history: %s\n", v.History)
			}
		}
		for _, l := range r.LostWrites {
			fmt.Fprintf(w, "lost write (%s read-back): %s\n", l.ReadBack, compactJSON(l.Detail))
			if l.History != "" {
				fmt.Fprintf(w, "  history: %s\n", l.History)
			}
		}
		for _, e := range r.Errors {
			fmt.Fprintf(w, "error: %s\n", e)
		}
	}
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
