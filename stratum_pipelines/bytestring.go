package pipelines

// P4Runtime carries numbers as big-endian bytestrings, canonically without
// leading zero bytes (zero is one zero byte). The software switch, its
// P4Runtime server and the fabric controller read and write them alike.

// StripZeros is b in canonical form: without leading zero bytes, keeping
// at least one byte. It does not copy.
func StripZeros(b []byte) []byte {
	i := 0
	for i < len(b)-1 && b[i] == 0 {
		i++
	}
	return b[i:]
}

// BytesUint is the value of big-endian bytestring b, which has at most 8
// significant bytes.
func BytesUint(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}
