package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/distcache/distcache/workload/driver"
)

// shiftedReport is fixedReport without its failure, with the hot set
// shifted at 1.5 s into DistCache's window and hit ratios on the timeline.
func shiftedReport() *driver.Report {
	r := fixedReport()
	r.Failure = nil
	r.Config.ShiftAtSeconds = 1.5
	hits := []float64{0.74, 0.73, 0.2, 0.35, 0.6, 0.7}
	for _, m := range r.Modes {
		if m.Mode != driver.DistCache {
			continue
		}
		for i := range m.Timeline {
			m.Timeline[i].HitRatio = &hits[i]
		}
	}
	r.Shift = &driver.ShiftResult{ConfiguredAt: 1.5, Shifted: true, At: 1.502, Seed: 42, Interval: 0.5,
		Before: 492.5, After: 395,
		HitRatioBefore: map[string]float64{"spine": 0.42, "leaf": 0.32, "all": 0.74},
		HitRatioAfter:  map[string]float64{"spine": 0.25, "leaf": 0.2, "all": 0.45}}
	return r
}

func TestShiftText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, shiftedReport()); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hot set shifted at 1.50s", "of each key permutation preloaded",
		"hit ratio 74.0% before, 45.0% after (spine 42.0% → 25.0%, leaf 32.0% → 20.0%)",
		"1.00s:495/73% 1.50s:300/20% 2.00s:310/35% 2.50s:480/60%*"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("text lacks %q", s)
		}
	}
	golden(t, "shifted.txt.golden", b.Bytes())

	var nb strings.Builder
	writeShift(&nb, &driver.Report{Shift: &driver.ShiftResult{ConfiguredAt: 4}})
	if want := "hot set (distcache window): not shifted: the measured window ended before 4.00s\n"; nb.String() != want {
		t.Errorf("not shifted: %q, want %q", nb.String(), want)
	}
}

// TestShiftJSON checks that the shift and the timeline's hit ratios are
// added to the JSON report, and that a report without them has none of
// their fields.
func TestShiftJSON(t *testing.T) {
	b, err := json.Marshal(shiftedReport())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"shift_at_seconds":1.5`, `"shift":{"configured_at":1.5,"shifted":true,"at":1.502`,
		`"hit_ratio":0.2`, `"hit_ratio_after":{"all":0.45`, `"ops_per_second":300`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	if b, err = json.Marshal(fixedReport()); err != nil {
		t.Fatal(err)
	}
	// A mode's hit ratios are an object, a timeline point's a number.
	for _, absent := range []*regexp.Regexp{regexp.MustCompile(`shift`), regexp.MustCompile(`"hit_ratio":[0-9]`)} {
		if absent.Match(b) {
			t.Errorf("JSON of a report without a shift matches %s", absent)
		}
	}
}

func TestShiftPNG(t *testing.T) {
	if err := WritePNG(filepath.Join(t.TempDir(), "report.png"), shiftedReport()); err != nil {
		t.Fatal(err)
	}
}
