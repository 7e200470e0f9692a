// Package pipelines holds the P4_16 sources of the switch-backed cache
// layers (p4src/: the cache switch of the spine and storage-leaf roles,
// and the client leaf; README.md describes them) with their P4Info, and
// reads their declarations, so that Go tests can check them against the
// data plane they must interoperate with: the headers against
// dataplane/wire's encoder, field by field, the constants against the Go
// ones, and each program's P4Info against its tables, actions, registers,
// counters, digests and controller headers. No P4 compiler runs on the
// project's machines, so these checks are what keeps the P4 sources, the
// P4Info files and the Go wire format from drifting apart.
//
// Sources embeds p4src; ProgramP4Info reads a program's P4Info for the
// controller and the software switch.
package pipelines
