package pipelines

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MatchKey is one key field of a table.
type MatchKey struct {
	ID   uint32
	Name string
	Expr string // the P4 expression matched, e.g. hdr.dc.key_digest
	Kind string // exact, lpm, ternary, range, optional
	Bits int
}

// ActionRef is an action a table may run.
type ActionRef struct {
	Name        string
	DefaultOnly bool // @defaultonly: only as the default action
}

// Table is a P4 table with its P4Runtime id and name.
type Table struct {
	ID      uint32
	Name    string
	Keys    []MatchKey
	Actions []ActionRef
	Size    uint64
}

// Param is one parameter of an action, set by the controller.
type Param struct {
	Name string
	Bits int
}

// Action is a P4 action the controller may name in a table entry.
type Action struct {
	ID     uint32
	Name   string
	Params []Param
}

// Register is a P4 register array.
type Register struct {
	ID   uint32
	Name string
	Bits int
	Size uint64
}

// Counter is an indexed P4 counter array.
type Counter struct {
	ID   uint32
	Name string
	Unit string // packets, bytes or packets_and_bytes
	Size uint64
}

const annotationsRE = `((?:@\w+(?:\([^()]*\))?\s*)*)`

var (
	tableDecl    = regexp.MustCompile(annotationsRE + `\btable\s+(\w+)\s*\{`)
	actionDecl   = regexp.MustCompile(annotationsRE + `\baction\s+(\w+)\s*\(([^)]*)\)`)
	registerDecl = regexp.MustCompile(annotationsRE + `\bregister<([^<>]+(?:<\d+>)?)>\s*\(\s*(\w+)\s*\)\s*(\w+)\s*;`)
	counterDecl  = regexp.MustCompile(annotationsRE + `\bcounter\s*\(\s*(\w+)\s*,\s*CounterType\.(\w+)\s*\)\s*(\w+)\s*;`)
	digestCall   = regexp.MustCompile(`\bdigest<(\w+)>\s*\(`)
	// The TNA forms (tna.p4): Register<T, I>(size[, initial]) name;
	// Counter<W, I>(size, CounterType_t.UNIT) name; Digest<T>() name.
	tnaRegisterDecl = regexp.MustCompile(annotationsRE + `\bRegister<\s*(bit<\d+>|\w+)\s*,\s*(?:bit<\d+>|\w+)\s*>\s*\(\s*(\w+)\s*(?:,[^()]*)?\)\s*(\w+)\s*;`)
	tnaCounterDecl  = regexp.MustCompile(annotationsRE + `\bCounter<\s*bit<\d+>\s*,\s*(?:bit<\d+>|\w+)\s*>\s*\(\s*(\w+)\s*,\s*CounterType_t\.(\w+)\s*\)\s*(\w+)\s*;`)
	tnaDigestDecl   = regexp.MustCompile(`\bDigest<(\w+)>\s*\(\s*\)\s*\w+\s*;`)
	keyBlock        = regexp.MustCompile(`\bkey\s*=\s*\{([^}]*)\}`)
	actionsBlock    = regexp.MustCompile(`\bactions\s*=\s*\{([^}]*)\}`)
	sizeProp        = regexp.MustCompile(`\bsize\s*=\s*(\w+)\s*;`)
	keyElement      = regexp.MustCompile(`^([\w.\[\]: ]+?)\s*:\s*(\w+)\s*` + annotationsRE + `$`)
	paramElement    = regexp.MustCompile(`^(bit<\d+>|\w+)\s+(\w+)$`)
)

// parseObjects reads the tables, the actions with an @id, the registers,
// counters and digests of src. Tables, registers and counters must carry
// @id; their P4Runtime name is @name's (without a leading dot).
func (d *Decls) parseObjects(src string) error {
	for _, m := range actionDecl.FindAllStringSubmatch(src, -1) {
		a := annotations(m[1])
		if _, ok := a["id"]; !ok {
			continue // an action the controller never names: not in the P4Info
		}
		act, err := d.parseAction(a, m[2], m[3])
		if err != nil {
			return err
		}
		d.Actions = append(d.Actions, act)
	}
	for _, loc := range tableDecl.FindAllStringSubmatchIndex(src, -1) {
		body, err := braced(src, loc[1]-1)
		if err != nil {
			return fmt.Errorf("cannot parse table %s: %w", src[loc[4]:loc[5]], err)
		}
		t, err := d.parseTable(annotations(src[loc[2]:loc[3]]), src[loc[4]:loc[5]], body)
		if err != nil {
			return err
		}
		d.Tables = append(d.Tables, t)
	}
	for _, re := range []*regexp.Regexp{registerDecl, tnaRegisterDecl} {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			if err := d.addRegister(annotations(m[1]), m[2], m[3], m[4]); err != nil {
				return err
			}
		}
	}
	for _, m := range counterDecl.FindAllStringSubmatch(src, -1) {
		if err := d.addCounter(annotations(m[1]), m[2], m[3], m[4]); err != nil {
			return err
		}
	}
	for _, m := range tnaCounterDecl.FindAllStringSubmatch(src, -1) {
		unit, ok := tnaCounterUnits[m[3]]
		if !ok {
			return fmt.Errorf("cannot parse counter %s: unknown CounterType_t.%s", m[4], m[3])
		}
		if err := d.addCounter(annotations(m[1]), m[2], unit, m[4]); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	digests := append(digestCall.FindAllStringSubmatch(src, -1), tnaDigestDecl.FindAllStringSubmatch(src, -1)...)
	for _, m := range digests {
		if _, ok := d.Structs[m[1]]; !ok {
			return fmt.Errorf("cannot parse digest: %s is no struct", m[1])
		}
		if !seen[m[1]] {
			seen[m[1]] = true
			d.Digests = append(d.Digests, m[1])
		}
	}
	return nil
}

// tnaCounterUnits are TNA's counter types by the unit names of v1model's.
var tnaCounterUnits = map[string]string{
	"PACKETS": "packets", "BYTES": "bytes", "PACKETS_AND_BYTES": "packets_and_bytes",
}

// addRegister adds register name of cells typed typ, size cells.
func (d *Decls) addRegister(a annotationSet, typ, sizeText, name string) error {
	id, err := a.id()
	if err != nil {
		return fmt.Errorf("cannot parse register %s: %w", name, err)
	}
	bits, err := d.Width(typ)
	if err != nil {
		return fmt.Errorf("cannot parse register %s: %w", name, err)
	}
	size, err := d.size(sizeText)
	if err != nil {
		return fmt.Errorf("cannot parse register %s: %w", name, err)
	}
	d.Registers = append(d.Registers, Register{ID: id, Name: a.name(name), Bits: bits, Size: size})
	return nil
}

// addCounter adds counter name of size cells counting unit (packets,
// bytes or packets_and_bytes).
func (d *Decls) addCounter(a annotationSet, sizeText, unit, name string) error {
	id, err := a.id()
	if err != nil {
		return fmt.Errorf("cannot parse counter %s: %w", name, err)
	}
	size, err := d.size(sizeText)
	if err != nil {
		return fmt.Errorf("cannot parse counter %s: %w", name, err)
	}
	switch unit {
	case "packets", "bytes", "packets_and_bytes":
	default:
		return fmt.Errorf("cannot parse counter %s: unknown CounterType.%s", name, unit)
	}
	d.Counters = append(d.Counters, Counter{ID: id, Name: a.name(name), Unit: unit, Size: size})
	return nil
}

func (d *Decls) parseAction(a annotationSet, name, params string) (Action, error) {
	id, err := a.id()
	if err != nil {
		return Action{}, fmt.Errorf("cannot parse action %s: %w", name, err)
	}
	act := Action{ID: id, Name: a.name(name)}
	for _, p := range strings.Split(params, ",") {
		p = strings.Join(strings.Fields(p), " ")
		if p == "" {
			continue
		}
		m := paramElement.FindStringSubmatch(p)
		if m == nil {
			return act, fmt.Errorf("cannot parse action %s: parameter %q", name, p)
		}
		bits, err := d.Width(m[1])
		if err != nil {
			return act, fmt.Errorf("cannot parse action %s parameter %s: %w", name, m[2], err)
		}
		act.Params = append(act.Params, Param{Name: m[2], Bits: bits})
	}
	return act, nil
}

func (d *Decls) parseTable(a annotationSet, name, body string) (Table, error) {
	id, err := a.id()
	if err != nil {
		return Table{}, fmt.Errorf("cannot parse table %s: %w", name, err)
	}
	t := Table{ID: id, Name: a.name(name)}
	if m := keyBlock.FindStringSubmatch(body); m != nil {
		for _, el := range strings.Split(m[1], ";") {
			el = strings.Join(strings.Fields(el), " ")
			if el == "" {
				continue
			}
			k, err := d.parseKey(el)
			if err != nil {
				return t, fmt.Errorf("cannot parse table %s: %w", name, err)
			}
			t.Keys = append(t.Keys, k)
		}
	}
	m := actionsBlock.FindStringSubmatch(body)
	if m == nil {
		return t, fmt.Errorf("cannot parse table %s: no actions", name)
	}
	for _, el := range strings.Split(m[1], ";") {
		f := strings.Fields(el)
		switch {
		case len(f) == 0:
		case len(f) == 1:
			t.Actions = append(t.Actions, ActionRef{Name: f[0]})
		case len(f) == 2 && f[0] == "@defaultonly":
			t.Actions = append(t.Actions, ActionRef{Name: f[1], DefaultOnly: true})
		default:
			return t, fmt.Errorf("cannot parse table %s: action %q", name, strings.TrimSpace(el))
		}
	}
	if m := sizeProp.FindStringSubmatch(body); m != nil {
		if t.Size, err = d.size(m[1]); err != nil {
			return t, fmt.Errorf("cannot parse table %s: %w", name, err)
		}
	}
	return t, nil
}

func (d *Decls) parseKey(el string) (MatchKey, error) {
	m := keyElement.FindStringSubmatch(el)
	if m == nil {
		return MatchKey{}, fmt.Errorf("key %q is not expr: kind @id(n) @name(...)", el)
	}
	a := annotations(m[3])
	id, err := a.id()
	if err != nil {
		return MatchKey{}, fmt.Errorf("key %s: %w", m[1], err)
	}
	switch m[2] {
	case "exact", "lpm", "ternary", "range", "optional":
	default:
		return MatchKey{}, fmt.Errorf("key %s: unknown match kind %s", m[1], m[2])
	}
	bits, err := d.ExprWidth(m[1])
	if err != nil {
		return MatchKey{}, fmt.Errorf("key %s: %w", m[1], err)
	}
	return MatchKey{ID: id, Name: a.name(m[1]), Expr: m[1], Kind: m[2], Bits: bits}, nil
}

// size is a size given as an integer or a constant's name.
func (d Decls) size(text string) (uint64, error) {
	if c, ok := d.Consts[text]; ok {
		return c.Value, nil
	}
	v, err := strconv.ParseUint(text, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("size %s is neither a number nor a constant", text)
	}
	return v, nil
}

// braced is the text between the brace at src[open] and its match.
func braced(src string, open int) (string, error) {
	depth := 0
	for i := open; i < len(src); i++ {
		switch src[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return src[open+1 : i], nil
			}
		}
	}
	return "", fmt.Errorf("no closing brace")
}
