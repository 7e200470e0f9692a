// Package p4entity builds the P4Runtime entities the controllers write to
// and read from the pipelines of this tree: table entries, their matches,
// register and counter cells, and the updates that carry them. The cache
// switch's controller, the client leaf's controller and the software
// switch build them here, so that one entity has one shape everywhere.
//
// The builders keep the bytestrings they are given: a caller that wants
// P4Runtime's canonical form (no leading zero bytes) strips them first,
// with pipelines.StripZeros.
package p4entity
