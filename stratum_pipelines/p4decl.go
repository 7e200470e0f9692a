package pipelines

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Field is one field of a P4 header.
type Field struct {
	Name string
	Bits int
}

// Header is a P4 header type: its fields in order.
type Header struct {
	Name   string
	Fields []Field
}

// Bits is the header's length in bits.
func (h Header) Bits() int {
	n := 0
	for _, f := range h.Fields {
		n += f.Bits
	}
	return n
}

// Offset is the bit offset of field name from the header's start.
func (h Header) Offset(name string) (int, bool) {
	off := 0
	for _, f := range h.Fields {
		if f.Name == name {
			return off, true
		}
		off += f.Bits
	}
	return 0, false
}

// Const is a P4 constant of type bit<Bits>.
type Const struct {
	Name  string
	Bits  int
	Value uint64
}

// Decls are the declarations Parse understands: typedefs of bit<N>, the
// headers, structs and constants built from them, the parameters of the
// parsers and controls, and what the controller sees of a program (the
// P4Info): tables, actions, registers, counters, digests and controller
// headers.
type Decls struct {
	Typedefs map[string]int // name to width
	Headers  map[string]Header
	Consts   map[string]Const
	Structs  map[string]Struct
	Params   map[string]string // parameter name to type, e.g. hdr: headers_t

	ControllerHeaders []ControllerHeader
	Tables            []Table
	Actions           []Action
	Registers         []Register
	Counters          []Counter
	Digests           []string // the struct types sent in digests
}

var (
	commentBlock = regexp.MustCompile(`(?s)/\*.*?\*/`)
	commentLine  = regexp.MustCompile(`//[^\n]*`)
	preprocessor = regexp.MustCompile(`(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*`) // with continuation lines
	typedefDecl  = regexp.MustCompile(`typedef\s+bit<(\d+)>\s+(\w+)\s*;`)
	constDecl    = regexp.MustCompile(`const\s+bit<(\d+)>\s+(\w+)\s*=\s*(0[xX][0-9a-fA-F_]+|\d[\d_]*)\s*;`)
	headerDecl   = regexp.MustCompile(`header\s+(\w+)\s*\{([^}]*)\}`)
	fieldDecl    = regexp.MustCompile(`^(?:bit<(\d+)>|(\w+))\s+(\w+)$`)
)

// maxBits bounds a width Parse accepts: wider than any header field a
// target parses.
const maxBits = 1024

// Parse reads the declarations of P4_16 source src (Decls), skipping
// comments and preprocessor lines (a macro's continuation lines too). It fails on a field of a type it does
// not know, a width outside 1…1024 bits, a constant that does not fit its
// width, a name declared twice, or a table, register, counter or
// controller header without an @id.
func Parse(src string) (Decls, error) {
	src = commentBlock.ReplaceAllString(src, " ")
	src = commentLine.ReplaceAllString(src, "")
	src = preprocessor.ReplaceAllString(src, "")
	d := Decls{
		Typedefs: map[string]int{}, Headers: map[string]Header{}, Consts: map[string]Const{},
		Structs: map[string]Struct{}, Params: map[string]string{},
	}
	seen := map[string]bool{}
	declare := func(name string) error {
		if seen[name] {
			return fmt.Errorf("cannot parse P4 declarations: %q declared twice", name)
		}
		seen[name] = true
		return nil
	}
	for _, m := range typedefDecl.FindAllStringSubmatch(src, -1) {
		bits, err := width(m[1])
		if err != nil {
			return d, fmt.Errorf("cannot parse typedef %s: %w", m[2], err)
		}
		if err := declare(m[2]); err != nil {
			return d, err
		}
		d.Typedefs[m[2]] = bits
	}
	for _, m := range constDecl.FindAllStringSubmatch(src, -1) {
		c, err := parseConst(m[1], m[2], m[3])
		if err != nil {
			return d, err
		}
		if err := declare(c.Name); err != nil {
			return d, err
		}
		d.Consts[c.Name] = c
	}
	for _, m := range headerDecl.FindAllStringSubmatch(src, -1) {
		h, err := d.parseHeader(m[1], m[2])
		if err != nil {
			return d, err
		}
		if err := declare(h.Name); err != nil {
			return d, err
		}
		d.Headers[h.Name] = h
	}
	if err := d.parseStructs(src, declare); err != nil {
		return d, err
	}
	if err := d.parseParams(src); err != nil {
		return d, err
	}
	if err := d.parseControllerHeaders(src); err != nil {
		return d, err
	}
	return d, d.parseObjects(src)
}

// parseHeader reads the body of header name: fields "type name;".
func (d Decls) parseHeader(name, body string) (Header, error) {
	h := Header{Name: name}
	fields := map[string]bool{}
	for _, stmt := range strings.Split(body, ";") {
		stmt = strings.Join(strings.Fields(stmt), " ")
		if stmt == "" {
			continue
		}
		m := fieldDecl.FindStringSubmatch(stmt)
		if m == nil {
			return h, fmt.Errorf("cannot parse header %s: %q is not a field of type bit<N> or a typedef", name, stmt)
		}
		bits, ok := d.Typedefs[m[2]]
		if m[1] != "" {
			var err error
			if bits, err = width(m[1]); err != nil {
				return h, fmt.Errorf("cannot parse header %s field %s: %w", name, m[3], err)
			}
		} else if !ok {
			return h, fmt.Errorf("cannot parse header %s field %s: unknown type %q", name, m[3], m[2])
		}
		if fields[m[3]] {
			return h, fmt.Errorf("cannot parse header %s: field %s declared twice", name, m[3])
		}
		fields[m[3]] = true
		h.Fields = append(h.Fields, Field{Name: m[3], Bits: bits})
	}
	if len(h.Fields) == 0 {
		return h, fmt.Errorf("cannot parse header %s: no fields", name)
	}
	return h, nil
}

func parseConst(bitsText, name, valueText string) (Const, error) {
	bits, err := width(bitsText)
	if err != nil {
		return Const{}, fmt.Errorf("cannot parse const %s: %w", name, err)
	}
	if bits > 64 {
		return Const{}, fmt.Errorf("cannot parse const %s: %d bits, at most 64 supported", name, bits)
	}
	v, err := strconv.ParseUint(strings.ReplaceAll(valueText, "_", ""), 0, 64)
	if err != nil {
		return Const{}, fmt.Errorf("cannot parse const %s: %w", name, err)
	}
	if bits < 64 && v>>bits != 0 {
		return Const{}, fmt.Errorf("cannot parse const %s: %s does not fit bit<%d>", name, valueText, bits)
	}
	return Const{Name: name, Bits: bits, Value: v}, nil
}

func width(text string) (int, error) {
	n, err := strconv.Atoi(text)
	if err != nil || n < 1 || n > maxBits {
		return 0, fmt.Errorf("width %s outside 1…%d bits", text, maxBits)
	}
	return n, nil
}
