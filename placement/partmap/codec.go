package partmap

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxEncodedSize bounds the size of a map document Decode accepts.
const MaxEncodedSize = 64 << 20

// Encode returns the canonical JSON encoding of m: indented, fields in
// declaration order, seeds as decimal strings (they do not fit a JSON number
// exactly in every language), a trailing newline. Equal maps encode to equal
// bytes, so the encoding can be compared and hashed.
func Encode(m *Map) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("cannot encode partition map: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode partition map: %w", err)
	}
	return append(b, '\n'), nil
}

// Decode parses and validates a map document. Unknown fields are rejected so
// that a reader older than the writer fails loudly instead of misplacing keys.
func Decode(data []byte) (*Map, error) {
	if len(data) > MaxEncodedSize {
		return nil, fmt.Errorf("cannot decode partition map: %d bytes exceeds the limit of %d", len(data), MaxEncodedSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Map
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("cannot decode partition map: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("cannot decode partition map: trailing data after the document")
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("cannot decode partition map: %w", err)
	}
	return &m, nil
}
