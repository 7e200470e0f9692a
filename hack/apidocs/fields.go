package main

import (
	"fmt"
	"strings"
)

const (
	metaV1   = "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreV1   = "k8s.io/api/core/v1"
	resource = "k8s.io/apimachinery/pkg/api/resource"
)

// externalTypes are the external types that YAML writes as a plain
// value, with that value's type. Other external types link to their Go
// documentation.
var externalTypes = map[string]string{
	metaV1 + ".Duration":    "string (duration)",
	metaV1 + ".Time":        "string (date-time)",
	coreV1 + ".PullPolicy":  "string",
	coreV1 + ".ServiceType": "string",
}

// externalDocs describe fields of external types that have no doc
// comment.
var externalDocs = map[string]string{
	metaV1 + ".ObjectMeta": "The object's name, namespace, labels and annotations.",
}

// typeText is a field's type as the reference shows it.
func (w *writer) typeText(r *typeRef) string {
	switch r.kind {
	case refBasic:
		return basicText(r.name)
	case refLocal:
		t := w.a.types[r.name]
		if w.documented(t) {
			return link(r.name)
		}
		if t != nil {
			return basicText(t.basic)
		}
		return r.name
	case refExternal:
		if s, ok := externalTypes[r.pkg+"."+r.name]; ok {
			return s
		}
		text := fmt.Sprintf("[%s](https://pkg.go.dev/%s#%s)", r.name, r.pkg, r.name)
		if r.pkg+"."+r.name == resource+".Quantity" {
			text += " (integer or string)"
		}
		return text
	case refSlice:
		return "array of " + w.typeText(r.elem)
	case refMap:
		return "map of " + w.typeText(r.key) + " to " + w.typeText(r.elem)
	}
	return ""
}

func basicText(name string) string {
	switch name {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int32", "int64":
		return "integer (" + name + ")"
	case "int", "uint32", "uint64", "byte":
		return "integer"
	case "float32", "float64":
		return "number"
	}
	return name
}

// enumValues are the values a type's enum marker allows.
func enumValues(t *apiType) []string {
	v, ok := t.markers.get("kubebuilder:validation:Enum")
	if !ok {
		return nil
	}
	return strings.Split(literal(v), ";")
}

// validationMarkers are the validation markers of a field or of its
// items, in the order the reference shows them, with how it shows them.
var validationMarkers = []struct {
	name string
	text func(v string) string
}{
	{"Enum", func(v string) string { return "one of " + codeList(strings.Split(literal(v), ";")) }},
	{"Minimum", func(v string) string { return "min " + v }},
	{"ExclusiveMinimum", func(v string) string { return "more than " + v }},
	{"Maximum", func(v string) string { return "max " + v }},
	{"ExclusiveMaximum", func(v string) string { return "less than " + v }},
	{"MinLength", func(v string) string { return "min length " + v }},
	{"MaxLength", func(v string) string { return "max length " + v }},
	{"MinItems", func(v string) string { return "min items " + v }},
	{"MaxItems", func(v string) string { return "max items " + v }},
	{"MinProperties", func(v string) string { return "min entries " + v }},
	{"MaxProperties", func(v string) string { return "max entries " + v }},
	{"Pattern", func(v string) string { return "pattern " + code(literal(v)) }},
	{"Format", func(v string) string { return "format " + code(literal(v)) }},
}

// ignoredMarkers carry no validation the reference shows: Type=string
// only restates the type column (a duration is a string).
var ignoredMarkers = map[string]bool{
	"kubebuilder:validation:Type": true,
}

// validation is a field's validation cell: its enum, bounds, pattern,
// list type and rules.
func (w *writer) validation(f *field) (string, error) {
	var parts []string
	if f.typ.kind == refLocal {
		if t := w.a.types[f.typ.name]; t != nil && !t.isStruct {
			if vs := enumValues(t); vs != nil {
				parts = append(parts, "one of "+codeList(vs))
			}
		}
	}
	var items []string
	known := map[string]bool{}
	for _, vm := range validationMarkers {
		name := "kubebuilder:validation:" + vm.name
		known[name] = true
		if v, ok := f.markers.get(name); ok {
			parts = append(parts, vm.text(v))
		}
		itemName := "kubebuilder:validation:items:" + vm.name
		known[itemName] = true
		if v, ok := f.markers.get(itemName); ok {
			items = append(items, vm.text(v))
		}
	}
	for _, m := range f.markers {
		if strings.HasPrefix(m.name, "kubebuilder:validation:") && !known[m.name] &&
			!ignoredMarkers[m.name] && m.name != "kubebuilder:validation:XValidation" {
			return "", fmt.Errorf("cannot document the marker +%s", m.name)
		}
	}
	if len(items) > 0 {
		parts = append(parts, "each item: "+strings.Join(items, ", "))
	}
	switch lt, _ := f.markers.get("listType"); lt {
	case "map":
		var keys []string
		for _, m := range f.markers.all("listMapKey") {
			keys = append(keys, m.value)
		}
		parts = append(parts, "items unique by "+codeList(keys))
	case "set":
		parts = append(parts, "items unique")
	}
	for _, m := range f.markers.all("kubebuilder:validation:XValidation") {
		parts = append(parts, ruleText(m))
	}
	return escapePipes(strings.Join(parts, "; ")), nil
}
