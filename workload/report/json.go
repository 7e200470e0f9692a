package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/distcache/distcache/workload/driver"
)

// WriteJSON writes r to the file path as indented JSON.
func WriteJSON(path string, r *driver.Report) error {
	if err := writeFile(path, func(w io.Writer) error { return encodeJSON(w, r) }); err != nil {
		return fmt.Errorf("cannot write JSON report: %w", err)
	}
	return nil
}

// encodeJSON writes r as indented JSON, with a final newline.
func encodeJSON(w io.Writer, r *driver.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeFile creates path and fills it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("cannot close %s: %w", path, cerr)
	}
	return err
}
