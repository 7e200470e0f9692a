package main

import (
	"fmt"
	"strings"
)

// command is how to regenerate the reference, as its header says.
const command = "make api-docs"

// writer accumulates the Markdown of the reference.
type writer struct {
	a    *api
	b    strings.Builder
	seen map[string]bool
}

func (w *writer) line(format string, args ...any) {
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

// render writes the reference of an API: each kind, then each type it
// uses in the order a spec reads, then the conditions.
func render(a *api) (string, error) {
	w := &writer{a: a, seen: map[string]bool{}}
	gv := a.group + "/" + a.version
	w.line("# API reference: %s", gv)
	w.line("")
	w.line("<!-- Generated from the Go types in api/%s by hack/apidocs. Do not edit; run `%s`. -->", a.version, command)
	w.line("")
	w.line("This is the reference of the %s API, generated from its Go types.", code(gv))
	w.line("The API server fills in each default and checks each rule.")
	w.line("Standalone mode (`distcache up`) does the same, with the same CRDs.")
	w.line("Each rule shows the message it returns when it fails.")
	w.line("A rule checked on update compares the new object with the old one.")
	w.line("")
	for _, k := range a.kinds {
		w.line("- %s: %s", link(k.name), escape(firstParagraph(k.doc)))
	}
	if len(a.conditions) > 0 {
		w.line("- %s: the status conditions of every kind and their reasons.", link("Conditions"))
	}
	for _, k := range a.kinds {
		if err := w.kind(k); err != nil {
			return "", err
		}
	}
	w.conditions()
	return w.b.String(), nil
}

// kind writes a kind's section, then the sections of the types it uses.
func (w *writer) kind(k *apiType) error {
	w.seen[k.name] = true
	w.line("")
	w.line("## %s", k.name)
	w.line("")
	w.line("%s", prose(k.doc))
	w.line("")
	res, err := resourceOf(k)
	if err != nil {
		return err
	}
	w.line("| Property | Value |")
	w.line("| --- | --- |")
	w.line("| API version | %s |", code(w.a.group+"/"+w.a.version))
	w.line("| Kind | %s |", code(k.name))
	w.line("| Resource | %s |", code(res.plural+"."+w.a.group))
	w.line("| Scope | %s |", res.scope)
	if len(res.shortNames) > 0 {
		w.line("| Short names | %s |", codeList(res.shortNames))
	}
	if len(res.categories) > 0 {
		w.line("| Categories | %s |", codeList(res.categories))
	}
	if len(res.subresources) > 0 {
		w.line("| Subresources | %s |", codeList(res.subresources))
	}
	if len(res.columns) > 0 {
		w.line("")
		w.line("`kubectl get` prints these columns; those marked wide only with `-o wide`:")
		w.line("")
		w.line("| Column | Type | JSONPath | Shown | Description |")
		w.line("| --- | --- | --- | --- | --- |")
		for _, c := range res.columns {
			shown := "always"
			if c.priority > 0 {
				shown = "wide"
			}
			w.line("| %s | %s | %s | %s | %s |", c.name, c.typ, escapePipes(code(c.jsonPath)), shown, cell(c.description))
		}
	}
	if err := w.members(k); err != nil {
		return err
	}
	return w.uses(k)
}

// uses writes the sections of the types a type's fields use, depth first
// in field order, each once.
func (w *writer) uses(t *apiType) error {
	var refs []*typeRef
	for _, f := range t.fields {
		refs = append(refs, f.typ)
	}
	refs = append(refs, t.inline...)
	for _, r := range refs {
		for r.kind == refSlice || r.kind == refMap {
			r = r.elem
		}
		u := w.a.types[r.name]
		if r.kind != refLocal || w.seen[r.name] || !w.documented(u) {
			continue
		}
		w.seen[u.name] = true
		w.line("")
		w.line("### %s", u.name)
		w.line("")
		w.line("%s", prose(u.doc))
		if !u.isStruct {
			w.enum(u)
			continue
		}
		if err := w.members(u); err != nil {
			return err
		}
		if err := w.uses(u); err != nil {
			return err
		}
	}
	return nil
}

// documented says a local type has a section of its own: structs and
// types with an enum.
func (w *writer) documented(t *apiType) bool {
	if t == nil {
		return false
	}
	_, enum := t.markers.get("kubebuilder:validation:Enum")
	return t.isStruct || enum
}

// members writes a struct's rules and its table of fields.
func (w *writer) members(t *apiType) error {
	for _, r := range t.inline {
		if r.kind == refLocal {
			w.line("")
			w.line("It also has every field of %s, inline.", link(r.name))
		}
	}
	if rules := t.markers.all("kubebuilder:validation:XValidation"); len(rules) > 0 {
		w.line("")
		w.line("Rules:")
		w.line("")
		for _, r := range rules {
			w.line("- %s", ruleText(r))
		}
	}
	w.line("")
	w.line("| Field | Type | Required | Default | Validation | Description |")
	w.line("| --- | --- | --- | --- | --- | --- |")
	if t.isRoot() {
		gv := w.a.group + "/" + w.a.version
		w.line("| `apiVersion` | string | required |  |  | %s |", code(gv))
		w.line("| `kind` | string | required |  |  | %s |", code(t.name))
	}
	for _, f := range t.fields {
		row, err := w.fieldRow(f)
		if err != nil {
			return fmt.Errorf("cannot document %s.%s: %w", t.name, f.goName, err)
		}
		w.line("%s", row)
	}
	return nil
}

// fieldRow is a field's row of its struct's table.
func (w *writer) fieldRow(f *field) (string, error) {
	required := "optional"
	if !f.optional {
		required = "required"
	}
	def := ""
	if v, ok := f.markers.get("kubebuilder:default"); ok {
		def = escapePipes(code(literal(v)))
	}
	val, err := w.validation(f)
	if err != nil {
		return "", err
	}
	doc := f.doc
	if doc == "" {
		doc = w.fallbackDoc(f.typ)
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s |",
		code(f.json), w.typeText(f.typ), required, def, val, cell(doc)), nil
}

// fallbackDoc describes a field without a doc comment by its type's.
func (w *writer) fallbackDoc(r *typeRef) string {
	switch r.kind {
	case refLocal:
		if t := w.a.types[r.name]; t != nil {
			return firstParagraph(t.doc)
		}
	case refExternal:
		return externalDocs[r.pkg+"."+r.name]
	}
	return ""
}

// ruleText is a CEL rule as the reference lists it: its message, and
// when it compares with the old object, that it applies to updates.
func ruleText(m marker) string {
	msg := m.args["message"]
	if msg == "" {
		msg = code(m.args["rule"])
	}
	text := escape(msg)
	if !strings.HasSuffix(text, ".") {
		text += "."
	}
	if strings.Contains(m.args["rule"], "oldSelf") {
		text += " Checked on update."
	}
	return text
}

// enum writes the values of a type with an enum.
func (w *writer) enum(t *apiType) {
	w.line("")
	w.line("| Value | Description |")
	w.line("| --- | --- |")
	for _, v := range enumValues(t) {
		doc := ""
		for _, c := range t.values {
			if c.value == v {
				doc = c.doc
			}
		}
		w.line("| %s | %s |", escapePipes(code(v)), cell(doc))
	}
}

// conditions writes the condition types and their reasons.
func (w *writer) conditions() {
	if len(w.a.conditions) == 0 {
		return
	}
	w.line("")
	w.line("## Conditions")
	w.line("")
	if t := w.a.types["ConditionType"]; t != nil {
		w.line("%s", prose(t.doc))
		w.line("")
	}
	w.line("| Type | Description |")
	w.line("| --- | --- |")
	for _, c := range w.a.conditions {
		w.line("| %s | %s |", code(c.value), cell(c.doc))
	}
	if len(w.a.reasons) == 0 {
		return
	}
	w.line("")
	w.line("### Reasons")
	w.line("")
	w.line("A condition's reason says why it has its status.")
	w.line("")
	w.line("| Reason | Description |")
	w.line("| --- | --- |")
	for _, c := range w.a.reasons {
		doc := strings.TrimSpace(strings.TrimPrefix(c.doc, c.name+":"))
		if first, _, _ := strings.Cut(doc, " "); !strings.Contains(first, ".") {
			doc = capitalize(doc)
		}
		w.line("| %s | %s |", code(c.value), cell(doc))
	}
}
