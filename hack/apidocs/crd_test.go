package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestAgreesWithCRDs checks what the generator reads from the markers
// against the CRDs controller-gen generates from the same types (crds/,
// kept up to date by the API package's tests): every field, whether it
// is required, its type, default, enum, bounds and pattern, each type's
// rules, and each kind's names and printer columns.
func TestAgreesWithCRDs(t *testing.T) {
	a, err := load(apiDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../../crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("cannot find the CRDs in crds/: %v", err)
	}
	crds := map[string]apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("cannot read %s: %v", f, err)
		}
		crds[crd.Spec.Names.Kind] = crd
	}
	if len(crds) != len(a.kinds) {
		t.Errorf("%d CRDs, %d kinds", len(crds), len(a.kinds))
	}
	for _, k := range a.kinds {
		crd, ok := crds[k.name]
		if !ok {
			t.Errorf("no CRD of kind %s", k.name)
			continue
		}
		c := &crdChecker{t: t, a: a}
		c.kind(k, crd)
	}
}

type crdChecker struct {
	t *testing.T
	a *api
}

func (c *crdChecker) errorf(path, format string, args ...any) {
	c.t.Helper()
	c.t.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
}

// kind checks a kind's names, printer columns and schema.
func (c *crdChecker) kind(k *apiType, crd apiextensionsv1.CustomResourceDefinition) {
	res, err := resourceOf(k)
	if err != nil {
		c.t.Fatal(err)
	}
	n := crd.Spec.Names
	if crd.Spec.Group != c.a.group || n.Plural != res.plural || string(crd.Spec.Scope) != res.scope ||
		!slices.Equal(n.ShortNames, res.shortNames) || !slices.Equal(n.Categories, res.categories) {
		c.errorf(k.name, "names %s %s %s %v %v, CRD %s %s %s %v %v", c.a.group, res.plural, res.scope, res.shortNames, res.categories,
			crd.Spec.Group, n.Plural, crd.Spec.Scope, n.ShortNames, n.Categories)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != c.a.version {
		c.errorf(k.name, "the CRD does not serve %s alone", c.a.version)
		return
	}
	v := crd.Spec.Versions[0]
	var subresources []string
	if v.Subresources != nil && v.Subresources.Status != nil {
		subresources = append(subresources, "status")
	}
	if !slices.Equal(subresources, res.subresources) {
		c.errorf(k.name, "subresources %v, CRD %v", res.subresources, subresources)
	}
	var columns []column
	for _, col := range v.AdditionalPrinterColumns {
		columns = append(columns, column{name: col.Name, typ: col.Type, jsonPath: col.JSONPath, description: col.Description, priority: int(col.Priority)})
	}
	if !reflect.DeepEqual(columns, res.columns) {
		c.errorf(k.name, "printer columns %+v, CRD %+v", res.columns, columns)
	}
	root := v.Schema.OpenAPIV3Schema
	delete(root.Properties, "apiVersion")
	delete(root.Properties, "kind")
	c.object(k.name, k, root)
}

// object checks a struct against its object schema.
func (c *crdChecker) object(path string, t *apiType, s *apiextensionsv1.JSONSchemaProps) {
	fields, rules := c.flatten(t)
	if got, want := sorted(rules), ruleMessages(s.XValidations); !slices.Equal(got, want) {
		c.errorf(path, "rules %q, CRD %q", got, want)
	}
	var names, required []string
	for _, f := range fields {
		names = append(names, f.json)
		if !f.optional {
			required = append(required, f.json)
		}
		p, ok := s.Properties[f.json]
		if !ok {
			c.errorf(path+"."+f.json, "not in the CRD")
			continue
		}
		c.field(path+"."+f.json, f, &p)
	}
	var props []string
	for name := range s.Properties {
		props = append(props, name)
	}
	if got, want := sorted(names), sorted(props); !slices.Equal(got, want) {
		c.errorf(path, "fields %v, CRD properties %v", got, want)
	}
	if got, want := sorted(required), sorted(s.Required); !slices.Equal(got, want) {
		c.errorf(path, "required %v, CRD %v", got, want)
	}
}

// flatten returns a struct's fields and rule messages with those of its
// inlined types.
func (c *crdChecker) flatten(t *apiType) ([]*field, []string) {
	fields := slices.Clone(t.fields)
	var rules []string
	for _, m := range t.markers.all("kubebuilder:validation:XValidation") {
		rules = append(rules, m.args["message"])
	}
	for _, r := range t.inline {
		if u := c.a.types[r.name]; r.kind == refLocal && u != nil {
			f, rs := c.flatten(u)
			fields = append(fields, f...)
			rules = append(rules, rs...)
		}
	}
	return fields, rules
}

// field checks a field against its property schema, and what it holds.
func (c *crdChecker) field(path string, f *field, p *apiextensionsv1.JSONSchemaProps) {
	if def, ok := f.markers.get("kubebuilder:default"); ok {
		if got := jsonText(p.Default); got != literal(def) {
			c.errorf(path, "default %s, CRD %s", literal(def), got)
		}
	} else if p.Default != nil {
		c.errorf(path, "no default, CRD %s", jsonText(p.Default))
	}
	var enum []string
	if v, ok := f.markers.get("kubebuilder:validation:Enum"); ok {
		enum = strings.Split(literal(v), ";")
	} else if t := c.a.types[f.typ.name]; f.typ.kind == refLocal && t != nil {
		enum = enumValues(t)
	}
	var crdEnum []string
	for _, e := range p.Enum {
		crdEnum = append(crdEnum, jsonText(&e))
	}
	if !slices.Equal(enum, crdEnum) {
		c.errorf(path, "enum %v, CRD %v", enum, crdEnum)
	}
	c.bounds(path, f.markers, "kubebuilder:validation:", p, f.typ)
	if p.Items != nil && p.Items.Schema != nil {
		c.bounds(path+"[]", f.markers, "kubebuilder:validation:items:", p.Items.Schema, f.typ.elem)
	}
	doc := f.doc
	if t := c.a.types[f.typ.name]; doc == "" && f.typ.kind == refLocal && t != nil {
		doc = t.doc
	}
	if got, want := strings.Join(strings.Fields(doc), " "), strings.Join(strings.Fields(p.Description), " "); got != want {
		c.errorf(path, "description %q, CRD %q", got, want)
	}
	lt, _ := f.markers.get("listType")
	if got := stringOf(p.XListType); got != lt {
		c.errorf(path, "list type %q, CRD %q", lt, got)
	}
	var keys []string
	for _, m := range f.markers.all("listMapKey") {
		keys = append(keys, m.value)
	}
	if !slices.Equal(keys, p.XListMapKeys) {
		c.errorf(path, "list map keys %v, CRD %v", keys, p.XListMapKeys)
	}
	c.typ(path, f.typ, p)
}

// typ checks a type against its schema and, for local structs, their
// fields.
func (c *crdChecker) typ(path string, r *typeRef, p *apiextensionsv1.JSONSchemaProps) {
	want := c.schemaType(r)
	got := p.Type
	if p.XIntOrString {
		got = "int-or-string"
	}
	if got != want {
		c.errorf(path, "type %s, CRD %s", want, got)
	}
	switch r.kind {
	case refLocal:
		if t := c.a.types[r.name]; t != nil && t.isStruct {
			c.object(path, t, p)
		}
	case refSlice:
		if p.Items == nil || p.Items.Schema == nil {
			c.errorf(path, "no items in the CRD")
			return
		}
		c.typ(path+"[]", r.elem, p.Items.Schema)
	case refMap:
		if p.AdditionalProperties == nil || p.AdditionalProperties.Schema == nil {
			c.errorf(path, "no additionalProperties in the CRD")
			return
		}
		c.typ(path+"{}", r.elem, p.AdditionalProperties.Schema)
	}
}

// schemaType is the OpenAPI type controller-gen gives a Go type.
func (c *crdChecker) schemaType(r *typeRef) string {
	switch r.kind {
	case refBasic:
		switch basicText(r.name) {
		case "boolean":
			return "boolean"
		case "number":
			return "number"
		case "string":
			return "string"
		}
		return "integer"
	case refLocal:
		t := c.a.types[r.name]
		if t == nil || t.isStruct {
			return "object"
		}
		return c.schemaType(&typeRef{kind: refBasic, name: t.basic})
	case refExternal:
		if r.pkg+"."+r.name == resource+".Quantity" {
			return "int-or-string"
		}
		if s, ok := externalTypes[r.pkg+"."+r.name]; ok {
			typ, _, _ := strings.Cut(s, " ")
			return typ
		}
		return "object"
	case refSlice:
		return "array"
	}
	return "object"
}

// bounds checks the numeric, length, item-count and pattern markers
// with a prefix against a schema. Sized integers have a format of their
// own, and external types (quantities, durations) a pattern or format.
func (c *crdChecker) bounds(path string, ms markerSet, prefix string, p *apiextensionsv1.JSONSchemaProps, r *typeRef) {
	for _, b := range []struct {
		name string
		crd  string
	}{
		{"Minimum", floatText(p.Minimum)},
		{"Maximum", floatText(p.Maximum)},
		{"MinLength", intText(p.MinLength)},
		{"MaxLength", intText(p.MaxLength)},
		{"MinItems", intText(p.MinItems)},
		{"MaxItems", intText(p.MaxItems)},
		{"MinProperties", intText(p.MinProperties)},
		{"MaxProperties", intText(p.MaxProperties)},
		{"Pattern", p.Pattern},
		{"Format", p.Format},
	} {
		v, ok := ms.get(prefix + b.name)
		if r.kind == refExternal && !ok && (b.name == "Format" || b.name == "Pattern") {
			continue
		}
		if b.name == "Format" && !ok && r.kind == refBasic && (r.name == "int32" || r.name == "int64") {
			v = r.name
		}
		if literal(v) != b.crd {
			c.errorf(path, "%s %q, CRD %q", b.name, literal(v), b.crd)
		}
	}
}

func ruleMessages(rules apiextensionsv1.ValidationRules) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Message)
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// jsonText is a JSON value as a marker writes it: strings bare, other
// values as JSON.
func jsonText(v *apiextensionsv1.JSON) string {
	if v == nil {
		return ""
	}
	var s string
	if err := json.Unmarshal(v.Raw, &s); err == nil {
		return s
	}
	return string(v.Raw)
}

func floatText(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

func intText(n *int64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatInt(*n, 10)
}

func stringOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
