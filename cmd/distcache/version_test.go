package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/distcache/distcache/internal/buildinfo"
)

func TestVersionCommand(t *testing.T) {
	want := buildinfo.Get()
	tests := []struct {
		name     string
		args     []string
		contains string
	}{
		{"text", []string{"version"}, "distcache " + want.Version + "\n"},
		{"short", []string{"version", "-o", "short"}, want.Version + "\n"},
		{"json", []string{"version", "--output", "json"}, `"version": "` + want.Version + `"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCommand(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tc.contains) {
				t.Fatalf("printed %q, want it to contain %q", out, tc.contains)
			}
		})
	}
	out, _ := runCommand(t, "version", "-o", "json")
	var got buildinfo.Info
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-o json printed %q: %v", out, err)
	}
	if got != want {
		t.Fatalf("-o json printed %+v, want %+v", got, want)
	}
	if _, err := runCommand(t, "version", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), `unknown --output "yaml"`) {
		t.Fatalf("-o yaml: error %v, want one naming the output", err)
	}
}
