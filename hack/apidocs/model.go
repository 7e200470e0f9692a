package main

// api is what the reference shows of one API group-version.
type api struct {
	group   string
	version string
	// types holds every type declared in the package, by Go name.
	types map[string]*apiType
	// kinds are the root types (the kinds), without their lists, by name.
	kinds []*apiType
	// conditions are the values of type ConditionType.
	conditions []constant
	// reasons are the package's Reason* constants, the reasons of the
	// conditions.
	reasons []constant
}

// apiType is a type declared in the package.
type apiType struct {
	name    string
	doc     string
	markers markerSet
	// isStruct says the type is a struct; fields and inline are its
	// members.
	isStruct bool
	fields   []*field
	// inline are the struct's embedded types whose fields are inlined.
	inline []*typeRef
	// basic is the underlying type of a non-struct type, e.g. string.
	basic string
	// values are the constants of the type, in source order.
	values []constant
}

// field is one JSON field of a struct.
type field struct {
	goName   string
	json     string
	typ      *typeRef
	doc      string
	markers  markerSet
	optional bool
}

// constant is a named constant with its doc comment.
type constant struct {
	name  string
	value string
	doc   string
}

// refKind says what a typeRef names.
type refKind int

const (
	refBasic    refKind = iota // a Go predeclared type
	refLocal                   // a type of the package
	refExternal                // a type of another package
	refSlice                   // a slice of elem
	refMap                     // a map of key to elem
)

// typeRef is the type of a field, pointers removed.
type typeRef struct {
	kind refKind
	name string
	// pkg is the import path of an external type.
	pkg  string
	key  *typeRef
	elem *typeRef
}

// isRoot says a type is a kind or a list of a kind.
func (t *apiType) isRoot() bool {
	return t.markers.has("kubebuilder:object:root")
}
