package main

import (
	"fmt"
	"strconv"
	"strings"
)

// marker is one "+name=value" line of a doc comment. Markers with
// arguments (rules, printer columns, resource settings) keep them in args.
type marker struct {
	name  string
	value string
	args  map[string]string
}

// argMarkers are the markers whose value is a list of key=value
// arguments rather than one value.
var argMarkers = []string{
	"kubebuilder:validation:XValidation",
	"kubebuilder:printcolumn",
	"kubebuilder:resource",
}

// splitComment separates a doc comment's text from its marker lines. The
// text keeps its line breaks; blank lines separate paragraphs.
func splitComment(text string) (doc string, markers markerSet, err error) {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "+") {
			lines = append(lines, line)
			continue
		}
		m, err := parseMarker(trimmed[1:])
		if err != nil {
			return "", nil, err
		}
		markers = append(markers, m)
	}
	return strings.TrimSpace(strings.Join(lines, "\n")), markers, nil
}

// parseMarker reads a marker line without its leading "+".
func parseMarker(s string) (marker, error) {
	for _, name := range argMarkers {
		if rest, ok := strings.CutPrefix(s, name+":"); ok {
			args, err := parseArgs(rest)
			if err != nil {
				return marker{}, fmt.Errorf("cannot read marker +%s: %w", s, err)
			}
			return marker{name: name, args: args}, nil
		}
	}
	name, value, _ := strings.Cut(s, "=")
	return marker{name: name, value: value}, nil
}

// parseArgs reads key=value,key=value. A value is a Go string literal
// ("..." or `...`), a {...} literal, or bare text up to the next comma.
func parseArgs(s string) (map[string]string, error) {
	args := map[string]string{}
	for s != "" {
		key, rest, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("cannot find the value of %q", s)
		}
		value, rest, err := cutValue(rest)
		if err != nil {
			return nil, fmt.Errorf("cannot read the value of %s: %w", key, err)
		}
		args[key] = value
		if rest != "" && rest[0] != ',' {
			return nil, fmt.Errorf("cannot read %q: a comma must follow the value of %s", rest, key)
		}
		s = strings.TrimPrefix(rest, ",")
	}
	return args, nil
}

// cutValue reads one argument value from the start of s.
func cutValue(s string) (value, rest string, err error) {
	switch {
	case strings.HasPrefix(s, `"`) || strings.HasPrefix(s, "`"):
		quoted, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", "", fmt.Errorf("cannot read the string %q: %w", s, err)
		}
		value, err := strconv.Unquote(quoted)
		if err != nil {
			return "", "", fmt.Errorf("cannot unquote %s: %w", quoted, err)
		}
		return value, s[len(quoted):], nil
	case strings.HasPrefix(s, "{"):
		depth := 0
		for i, c := range s {
			switch c {
			case '{':
				depth++
			case '}':
				depth--
				if depth == 0 {
					return s[:i+1], s[i+1:], nil
				}
			}
		}
		return "", "", fmt.Errorf("cannot find the end of %q", s)
	default:
		i := strings.IndexByte(s, ',')
		if i < 0 {
			return s, "", nil
		}
		return s[:i], s[i:], nil
	}
}

// literal is a single-value marker's value as written in the YAML: Go
// string literals are unquoted, other values are kept.
func literal(v string) string {
	if strings.HasPrefix(v, `"`) || strings.HasPrefix(v, "`") {
		if s, err := strconv.Unquote(v); err == nil {
			return s
		}
	}
	return v
}

// markerSet is the markers of one declaration.
type markerSet []marker

// get returns the value of the last marker called name.
func (ms markerSet) get(name string) (string, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].name == name {
			return ms[i].value, true
		}
	}
	return "", false
}

// has says whether a marker called name is present.
func (ms markerSet) has(name string) bool {
	_, ok := ms.get(name)
	return ok
}

// all returns every marker called name, in order.
func (ms markerSet) all(name string) []marker {
	var out []marker
	for _, m := range ms {
		if m.name == name {
			out = append(out, m)
		}
	}
	return out
}
