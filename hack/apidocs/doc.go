// Command apidocs writes docs/api.md, the reference of the distcache.io
// API, from the Go types in api/v1alpha1 (make api-docs).
//
// It reads the types with go/ast: their doc comments give the
// descriptions, and their kubebuilder markers give the defaults, enums,
// bounds, patterns, CEL rules and printer columns. The kinds come in
// name order; each is followed by the types it uses, in field order.
// Its tests check that docs/api.md is what it writes, and that what it
// reads from the markers agrees with the CRDs in crds/.
//
// Run it from the repository's root:
//
//	go run ./hack/apidocs [-api api/v1alpha1] [-out docs/api.md]
package main
