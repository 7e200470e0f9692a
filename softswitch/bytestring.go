package softswitch

import (
	"encoding/binary"
	"fmt"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// canonical is b in P4Runtime's canonical binary-string form (no leading
// zero bytes; zero is one zero byte), checked to fit bits. Non-canonical
// input is accepted, as the P4Runtime specification asks of servers.
func canonical(b []byte, bits int) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("empty bytestring for a %d-bit value", bits)
	}
	i := 0
	for i < len(b)-1 && b[i] == 0 {
		i++
	}
	b = b[i:]
	if used := bitLen(b); used > bits {
		return nil, fmt.Errorf("value of %d bits does not fit %d bits", used, bits)
	}
	return b, nil
}

// bitLen is the number of significant bits of big-endian b.
func bitLen(b []byte) int {
	for i, c := range b {
		if c != 0 {
			n := 0
			for ; c != 0; c >>= 1 {
				n++
			}
			return (len(b)-i-1)*8 + n
		}
	}
	return 0
}

// fromUint is v as a canonical bytestring.
func fromUint(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return append([]byte(nil), pipelines.StripZeros(b[:])...)
}
