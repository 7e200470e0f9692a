package supervisor

import (
	"bytes"
	"io"
	"os"
)

// lastLineBytes bounds what lastLine reads and returns.
const lastLineBytes = 1024

// lastLine is the last non-empty line of the log file at path, at most
// lastLineBytes of its end ("" when the file cannot be read): a process
// that exits at once says why there (a flag it refuses, an address in
// use), and the supervisor's own log then tells it too.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-lastLineBytes, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return ""
	}
	buf = bytes.TrimRight(buf, "\r\n \t")
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[i+1:]
	}
	return string(buf)
}
