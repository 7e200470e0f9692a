package wire

// What a switch-backed cache layer can hold. A P4 pipeline
// (stratum_pipelines/) parses the key and the value it serves into headers
// of fixed sizes — a parser state per size — and keeps a value in a fixed
// number of register words, as NetCache does (its 16-byte keys and 128-byte
// values): it can serve only what it can parse whole. Keys and values
// beyond these bounds are for the software layers, which serve any key up
// to MaxKeyLen and any value up to MaxValueLen.
const (
	// MaxSwitchKeyLen is the longest key a switch caches: the pipelines
	// parse keys of 1 to 32 bytes, as up to four 8-byte words and a tail
	// of 1 to 7 bytes.
	MaxSwitchKeyLen = 32
	// MaxSwitchValueLen is the largest value a switch caches: sixteen
	// 8-byte register words.
	MaxSwitchValueLen = 128
)

// SwitchCacheable reports whether a switch may cache a key of keyLen bytes
// whose value has valueLen bytes. A value of that size travels in one
// datagram of any size the transport accepts (MinDatagram), so a switch
// never sees one of its fragments.
func SwitchCacheable(keyLen, valueLen int) bool {
	return keyLen >= 1 && keyLen <= MaxSwitchKeyLen && valueLen >= 0 && valueLen <= MaxSwitchValueLen
}
