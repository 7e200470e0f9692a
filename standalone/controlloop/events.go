package controlloop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/placement/partmap"
)

// eventLine is an Event as one line of the events file (see
// testdata/events.golden.jsonl).
type eventLine struct {
	Time       time.Time           `json:"time"`
	Layer      string              `json:"layer"`
	Member     string              `json:"member"`
	From       partmap.MemberState `json:"from"`
	To         partmap.MemberState `json:"to"`
	After      Duration            `json:"after"`
	MapVersion int64               `json:"mapVersion"`
}

// MarshalJSON implements json.Marshaler: the events file's line format.
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(eventLine{
		Time: e.Time, Layer: e.Layer, Member: e.Member, From: e.From, To: e.To,
		After: Duration(e.After), MapVersion: e.MapVersion,
	})
}

// UnmarshalJSON implements json.Unmarshaler.
func (e *Event) UnmarshalJSON(b []byte) error {
	var l eventLine
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	*e = Event{
		Time:       l.Time,
		Change:     failover.Change{Layer: l.Layer, Member: l.Member, From: l.From, To: l.To, After: time.Duration(l.After)},
		MapVersion: l.MapVersion,
	}
	return nil
}

// EncodeEvents encodes events as lines of the events file, each ending in
// a newline.
func EncodeEvents(events []Event) ([]byte, error) {
	var buf bytes.Buffer
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("cannot encode event: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// AppendEvents appends events to the events file at path (created if
// missing) in one write, so that a reader sees whole lines only, except
// possibly a last line cut short by a crash, which DecodeEvents skips.
func AppendEvents(path string, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	b, err := EncodeEvents(events)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cannot append events: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return fmt.Errorf("cannot append events: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot append events: %w", err)
	}
	return nil
}

// DecodeEvents decodes the content of an events file. A last line without
// its newline (a write cut short) is ignored; lines that do not decode are
// skipped and reported in the error, with the events of every other line
// returned.
func DecodeEvents(data []byte) ([]Event, error) {
	var (
		events []Event
		errs   []error
	)
	for n := 1; ; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSpace(data[:i])
		data = data[i+1:]
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		events = append(events, e)
	}
	if len(errs) > 0 {
		return events, fmt.Errorf("cannot decode every event: %w", errors.Join(errs...))
	}
	return events, nil
}

// ReadEvents reads the events file at path; a missing file holds none.
func ReadEvents(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read events: %w", err)
	}
	events, err := DecodeEvents(b)
	if err != nil {
		return events, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}
