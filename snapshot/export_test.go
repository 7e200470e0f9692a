package snapshot

// RedisCRC64 is Redis's CRC64 of p.
func RedisCRC64(p []byte) uint64 { return redisCRC64(0, p) }
