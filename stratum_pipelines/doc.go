// Package pipelines holds the P4_16 sources of the switch-backed cache
// layers (p4src/) and reads their declarations, so that Go tests can
// check them against the data plane they must interoperate with: the
// headers against dataplane/wire's encoder, field by field, and the
// constants against the Go ones. No P4 compiler runs on the project's
// machines (README.md), so these checks are what keeps the P4 sources,
// the hand-kept P4Info and the Go wire format from drifting apart.
package pipelines
