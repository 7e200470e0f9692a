package pipelines

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Member is one member of a P4 struct: a bit<N>, bool, typedef, header,
// struct or header stack (Stack > 0) type.
type Member struct {
	Name  string
	Type  string
	Stack int
}

// Struct is a P4 struct type: its members in order.
type Struct struct {
	Name    string
	Members []Member
}

// ControllerHeader is a header annotated @controller_header: the metadata
// of packet-in or packet-out, under the annotation's name.
type ControllerHeader struct {
	ID     uint32
	Name   string // the annotation's argument: "packet_in" or "packet_out"
	Header string // the header type
}

var (
	structDecl     = regexp.MustCompile(`\bstruct\s+(\w+)\s*\{([^}]*)\}`)
	memberDecl     = regexp.MustCompile(`^(bit<\d+>|\w+)(?:\[(\d+)\])?\s+(\w+)$`)
	paramDecl      = regexp.MustCompile(`\b(?:in|out|inout)\s+(\w+)\s+(\w+)\s*[,)]`)
	controllerDecl = regexp.MustCompile(`((?:@\w+(?:\([^()]*\))?\s*)*)\bheader\s+(\w+)\s*\{`)
	annotationArg  = regexp.MustCompile(`@(\w+)\(([^()]*)\)`)
)

// parseStructs reads the struct types of src.
func (d *Decls) parseStructs(src string, declare func(string) error) error {
	for _, m := range structDecl.FindAllStringSubmatch(src, -1) {
		s := Struct{Name: m[1]}
		seen := map[string]bool{}
		for _, stmt := range strings.Split(m[2], ";") {
			stmt = strings.Join(strings.Fields(stmt), " ")
			if stmt == "" {
				continue
			}
			f := memberDecl.FindStringSubmatch(stmt)
			if f == nil {
				return fmt.Errorf("cannot parse struct %s: %q is not a member", s.Name, stmt)
			}
			if seen[f[3]] {
				return fmt.Errorf("cannot parse struct %s: member %s declared twice", s.Name, f[3])
			}
			seen[f[3]] = true
			mb := Member{Name: f[3], Type: f[1]}
			if f[2] != "" {
				n, err := strconv.Atoi(f[2])
				if err != nil || n < 1 || n > maxBits {
					return fmt.Errorf("cannot parse struct %s member %s: stack of %s", s.Name, f[3], f[2])
				}
				mb.Stack = n
			}
			s.Members = append(s.Members, mb)
		}
		if err := declare(s.Name); err != nil {
			return err
		}
		d.Structs[s.Name] = s
	}
	return nil
}

// parseParams reads the parameters of the programs' parsers and controls
// ("inout headers_t hdr"): the names that expressions start with.
func (d *Decls) parseParams(src string) error {
	for _, m := range paramDecl.FindAllStringSubmatch(src, -1) {
		if t, ok := d.Params[m[2]]; ok && t != m[1] {
			return fmt.Errorf("cannot parse parameters: %s is a %s and a %s", m[2], t, m[1])
		}
		d.Params[m[2]] = m[1]
	}
	return nil
}

// parseControllerHeaders reads the headers annotated @controller_header.
func (d *Decls) parseControllerHeaders(src string) error {
	for _, m := range controllerDecl.FindAllStringSubmatch(src, -1) {
		a := annotations(m[1])
		name, ok := a["controller_header"]
		if !ok {
			continue
		}
		id, err := a.id()
		if err != nil {
			return fmt.Errorf("cannot parse controller header %s: %w", m[2], err)
		}
		d.ControllerHeaders = append(d.ControllerHeaders, ControllerHeader{ID: id, Name: unquote(name), Header: m[2]})
	}
	return nil
}

// annotationSet maps an annotation's name to its argument text.
type annotationSet map[string]string

func annotations(text string) annotationSet {
	a := annotationSet{}
	for _, m := range annotationArg.FindAllStringSubmatch(text, -1) {
		a[m[1]] = strings.TrimSpace(m[2])
	}
	for _, w := range strings.Fields(text) {
		if strings.HasPrefix(w, "@") && !strings.Contains(w, "(") {
			a[w[1:]] = ""
		}
	}
	return a
}

// id is the @id annotation's value.
func (a annotationSet) id() (uint32, error) {
	text, ok := a["id"]
	if !ok {
		return 0, fmt.Errorf("no @id")
	}
	v, err := strconv.ParseUint(text, 0, 32)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("@id(%s) is not an id", text)
	}
	return uint32(v), nil
}

// name is the @name annotation's value without the leading dot of an
// absolute name, or def.
func (a annotationSet) name(def string) string {
	if text, ok := a["name"]; ok {
		return strings.TrimPrefix(unquote(text), ".")
	}
	return def
}

func unquote(s string) string { return strings.Trim(s, `"`) }

// Width is the width in bits of type name: bit<N>, bool, a typedef or a
// header.
func (d Decls) Width(name string) (int, error) {
	if strings.HasPrefix(name, "bit<") {
		return width(strings.TrimSuffix(strings.TrimPrefix(name, "bit<"), ">"))
	}
	if name == "bool" {
		return 1, nil
	}
	if n, ok := d.Typedefs[name]; ok {
		return n, nil
	}
	if h, ok := d.Headers[name]; ok {
		return h.Bits(), nil
	}
	return 0, fmt.Errorf("type %q has no width", name)
}

// ExprWidth is the width of a field expression such as hdr.ipv4.dst_addr
// or hdr.dc.key_digest[127:64], starting at a parameter's name.
func (d Decls) ExprWidth(expr string) (int, error) {
	expr = strings.ReplaceAll(expr, " ", "")
	slice := ""
	if i := strings.IndexByte(expr, '['); i >= 0 {
		expr, slice = expr[:i], expr[i:]
	}
	parts := strings.Split(expr, ".")
	typ, ok := d.Params[parts[0]]
	if !ok {
		return 0, fmt.Errorf("cannot resolve %s: %s is no parameter", expr, parts[0])
	}
	for _, p := range parts[1:] {
		next, err := d.memberType(typ, p)
		if err != nil {
			return 0, fmt.Errorf("cannot resolve %s: %w", expr, err)
		}
		typ = next
	}
	w, err := d.Width(typ)
	if err != nil {
		return 0, fmt.Errorf("cannot resolve %s: %w", expr, err)
	}
	if slice == "" {
		return w, nil
	}
	var hi, lo int
	if _, err := fmt.Sscanf(slice, "[%d:%d]", &hi, &lo); err != nil || hi < lo || lo < 0 || hi >= w {
		return 0, fmt.Errorf("cannot resolve %s%s: not a slice of %d bits", expr, slice, w)
	}
	return hi - lo + 1, nil
}

// memberType is the type of member name of struct or header typ.
func (d Decls) memberType(typ, name string) (string, error) {
	if s, ok := d.Structs[typ]; ok {
		for _, m := range s.Members {
			if m.Name == name && m.Stack == 0 {
				return m.Type, nil
			}
		}
	}
	if h, ok := d.Headers[typ]; ok {
		for _, f := range h.Fields {
			if f.Name == name {
				return fmt.Sprintf("bit<%d>", f.Bits), nil
			}
		}
	}
	return "", fmt.Errorf("%s has no member %s", typ, name)
}
