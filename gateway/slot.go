package gateway

import "bytes"

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

// KeySlot is the hash slot Redis Cluster gives key: CRC16 (XMODEM) of the
// key modulo 16384, or of its hash tag, the bytes between its first '{'
// and the first '}' after it, when there are any.
func KeySlot(key []byte) int {
	if open := bytes.IndexByte(key, '{'); open >= 0 {
		if end := bytes.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key)) & (ClusterSlots - 1)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), as Redis'
// crc16.c computes it.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^c]
	}
	return crc
}

// crc16Table holds CRC-16/XMODEM of every byte value.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
