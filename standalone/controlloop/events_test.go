package controlloop_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/standalone/controlloop"
)

// sampleEvents are a member fenced, failed and restored.
func sampleEvents() []controlloop.Event {
	at := time.Date(2025, 3, 1, 12, 0, 0, 250_000_000, time.UTC)
	change := func(from, to partmap.MemberState, after time.Duration) failover.Change {
		return failover.Change{Layer: "spine", Member: "demo-spine-1", From: from, To: to, After: after}
	}
	return []controlloop.Event{
		{Time: at, Change: change(partmap.Active, partmap.Fenced, 500*time.Millisecond), MapVersion: 2},
		{Time: at.Add(500 * time.Millisecond), Change: change(partmap.Fenced, partmap.Failed, time.Second), MapVersion: 3},
		{Time: at.Add(10 * time.Second), Change: change(partmap.Failed, partmap.Active, 3*time.Second), MapVersion: 4},
	}
}

func TestEventsEncoding(t *testing.T) {
	b, err := controlloop.EncodeEvents(sampleEvents())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "events.golden.jsonl", b)
	got, err := controlloop.DecodeEvents(b)
	if err != nil {
		t.Fatal(err)
	}
	want := sampleEvents()
	if len(got) != len(want) {
		t.Fatalf("decoded %d events, want %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].Time.Equal(want[i].Time) || got[i].Change != want[i].Change || got[i].MapVersion != want[i].MapVersion {
			t.Errorf("event %d decoded as %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestDecodeEvents(t *testing.T) {
	lines, err := controlloop.EncodeEvents(sampleEvents())
	if err != nil {
		t.Fatal(err)
	}
	whole := strings.SplitAfter(string(lines), "\n")
	tests := []struct {
		name    string
		data    string
		events  int
		wantErr string
	}{
		{"empty", "", 0, ""},
		{"whole lines", string(lines), 3, ""},
		{"a last line cut short", whole[0] + whole[1] + whole[2][:20], 2, ""},
		{"blank lines", "\n" + whole[0] + "\n\n", 1, ""},
		{"a bad line among good ones", whole[0] + "{\"time\": 3}\n" + whole[1], 2, "line 2"},
		{"a bad duration", `{"after": "long"}` + "\n", 0, "cannot parse duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := controlloop.DecodeEvents([]byte(tc.data))
			if len(got) != tc.events {
				t.Errorf("decoded %d events, want %d", len(got), tc.events)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzDecodeEvents(f *testing.F) {
	if b, err := controlloop.EncodeEvents(sampleEvents()); err == nil {
		f.Add(b)
	}
	f.Add([]byte("{}\n{\"after\": \"1s\"}\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		events, _ := controlloop.DecodeEvents(data)
		if n := bytes.Count(data, []byte("\n")); len(events) > n {
			t.Fatalf("%d events from %d lines", len(events), n)
		}
		// Every decoded event encodes to a line that decodes the same.
		b, err := controlloop.EncodeEvents(events)
		if err != nil {
			t.Fatal(err)
		}
		again, err := controlloop.DecodeEvents(b)
		if err != nil || len(again) != len(events) {
			t.Fatalf("re-decoding %q: %d events, %v; want %d", b, len(again), err, len(events))
		}
	})
}

func TestAppendAndReadEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if got, err := controlloop.ReadEvents(path); got != nil || err != nil {
		t.Fatalf("a missing file: %v, %v; want no events", got, err)
	}
	all := sampleEvents()
	for _, batch := range [][]controlloop.Event{all[:2], nil, all[2:]} {
		if err := controlloop.AppendEvents(path, batch); err != nil {
			t.Fatal(err)
		}
	}
	got, err := controlloop.ReadEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].MapVersion != 4 || got[0].To != partmap.Fenced {
		t.Fatalf("read %+v, want the three events in order", got)
	}
}
