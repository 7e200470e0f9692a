package checker

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/distcache/distcache/workload/history"
)

// File names in Config.OutDir.
const (
	VerdictJSON = "verdict.json"
	VerdictText = "verdict.txt"
	// KeysDir holds, per failing key, <key>.history.jsonl (every operation
	// on it, one JSON object a line, in call order) and, for a violation,
	// <key>.html (porcupine's visualization of the shortest failing
	// prefix).
	KeysDir = "keys"
	// HistoryFile is every operation of the run, one JSON object a line in
	// call order, gzip-compressed; it is written before the check, so an
	// undecided or interrupted check keeps it too.
	HistoryFile = "history.jsonl.gz"
)

// writeHistory writes ops to dir/HistoryFile.
func writeHistory(dir string, ops []history.Operation) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot write the history: %w", err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if err := encodeJSONLines(zw, ops); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("cannot compress the history: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, HistoryFile), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("cannot write the history: %w", err)
	}
	return nil
}

// writeFiles writes the verdict and the failing keys' files into dir.
func (v *Verdict) writeFiles(dir string, ops []history.Operation) error {
	failing := map[string]bool{}
	for _, vi := range v.Linearizability.Violations {
		failing[vi.Key] = true
	}
	for _, r := range []*ReadBack{&v.Routed, v.Direct} {
		if r != nil {
			for _, l := range r.Lost {
				failing[l.Key] = true
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, KeysDir), 0o755); err != nil {
		return fmt.Errorf("cannot write the verdict: %w", err)
	}
	if len(failing) > 0 {
		v.Histories = map[string]string{}
		for key, kops := range history.ByKey(ops) {
			if !failing[key] {
				continue
			}
			path := filepath.Join(dir, KeysDir, fileName(key)+".history.jsonl")
			if err := writeJSONLines(path, kops); err != nil {
				return err
			}
			v.Histories[key] = path
		}
	}
	for i := range v.Linearizability.Violations {
		vi := &v.Linearizability.Violations[i]
		if err := vi.WriteVisualization(filepath.Join(dir, KeysDir, fileName(vi.Key)+".html")); err != nil {
			return err
		}
	}
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the verdict: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, VerdictJSON), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write the verdict: %w", err)
	}
	var text bytes.Buffer
	if err := v.WriteText(&text); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, VerdictText), text.Bytes(), 0o644); err != nil {
		return fmt.Errorf("cannot write the verdict: %w", err)
	}
	return nil
}

func writeJSONLines(path string, ops []history.Operation) error {
	var b bytes.Buffer
	if err := encodeJSONLines(&b, ops); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("cannot write a key's history: %w", err)
	}
	return nil
}

// encodeJSONLines writes ops to w, one JSON object a line.
func encodeJSONLines(w io.Writer, ops []history.Operation) error {
	enc := json.NewEncoder(w)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			return fmt.Errorf("cannot encode the history of %s: %w", op.Key, err)
		}
	}
	return nil
}

// fileName makes key safe as a file name: anything but letters, digits,
// '.', '-' and '_' becomes '_'.
func fileName(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		default:
			return '_'
		}
	}, key)
}
