package workload

import "strconv"

// keyPrefix starts every canonical key string.
const keyPrefix = "key:"

// Key returns the canonical key string of key id: "key:" followed by the
// decimal id, for example Key(42) == "key:42".
func Key(id uint64) string {
	var buf [len(keyPrefix) + 20]byte
	return string(AppendKey(buf[:0], id))
}

// AppendKey appends Key(id) to dst and returns the extended slice. It does
// not allocate when dst has room for the key (at most 24 bytes).
func AppendKey(dst []byte, id uint64) []byte {
	dst = append(dst, keyPrefix...)
	return strconv.AppendUint(dst, id, 10)
}
