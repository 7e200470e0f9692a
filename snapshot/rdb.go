package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"os"
	"strconv"
)

// ErrCorrupt reports an RDB file that is not a whole, intact RDB.
var ErrCorrupt = errors.New("corrupt RDB")

// rdbEOF is the RDB opcode that ends the data; the CRC64 follows it.
const rdbEOF = 0xFF

// crcTable is Redis's CRC64 (crc64-jones): the reflected polynomial
// 0xad93d23594c935a9, initial value 0, no final xor.
var crcTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// redisCRC64 continues Redis's CRC64 crc over p. Go's crc64.Update
// complements the value before and after; Redis's does not.
func redisCRC64(crc uint64, p []byte) uint64 { return ^crc64.Update(^crc, crcTable, p) }

// RDBInfo is what VerifyRDB found in an RDB.
type RDBInfo struct {
	// Version is the RDB format version of the header ("REDIS0011": 11).
	Version int `json:"rdbVersion"`
	// Checksummed reports a CRC64 footer that was checked; Redis writes
	// zero instead when rdbchecksum is off.
	Checksummed bool `json:"checksummed"`
}

// VerifyRDB checks that r holds a whole RDB: the "REDIS" magic, a
// four-digit version, and, at the end, the EOF opcode and a CRC64 of
// everything before it that matches (unless the footer is zero, which
// Redis writes when rdbchecksum is off). It does not parse the entries.
func VerifyRDB(r io.Reader) (RDBInfo, error) {
	var info RDBInfo
	head := make([]byte, 9)
	if _, err := io.ReadFull(r, head); err != nil {
		return info, fmt.Errorf("%w: cannot read the 9-byte header: %w", ErrCorrupt, err)
	}
	if !bytes.Equal(head[:5], []byte("REDIS")) {
		return info, fmt.Errorf("%w: no REDIS magic at the start (got %q)", ErrCorrupt, head[:5])
	}
	v, err := strconv.Atoi(string(head[5:]))
	if err != nil || v < 1 {
		return info, fmt.Errorf("%w: bad version %q in the header", ErrCorrupt, head[5:])
	}
	info.Version = v
	crc := redisCRC64(0, head)
	// Keep the last 9 bytes (EOF opcode and CRC64) out of the checksum.
	var tail []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		tail = append(tail, buf[:n]...)
		if k := len(tail) - 9; k > 0 {
			crc = redisCRC64(crc, tail[:k])
			tail = append(tail[:0], tail[k:]...)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return info, fmt.Errorf("cannot read RDB: %w", err)
		}
	}
	if v < 5 { // no checksum before RDB version 5: just the EOF opcode
		if len(tail) == 0 || tail[len(tail)-1] != rdbEOF {
			return info, fmt.Errorf("%w: no EOF opcode at the end", ErrCorrupt)
		}
		return info, nil
	}
	if len(tail) < 9 || tail[0] != rdbEOF {
		return info, fmt.Errorf("%w: no EOF opcode and CRC64 footer at the end (truncated?)", ErrCorrupt)
	}
	crc = redisCRC64(crc, tail[:1])
	want := binary.LittleEndian.Uint64(tail[1:])
	if want == 0 {
		return info, nil // rdbchecksum no
	}
	if crc != want {
		return info, fmt.Errorf("%w: CRC64 %016x, the footer says %016x", ErrCorrupt, crc, want)
	}
	info.Checksummed = true
	return info, nil
}

// VerifyRDBFile is VerifyRDB of the file at path.
func VerifyRDBFile(path string) (RDBInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return RDBInfo{}, fmt.Errorf("cannot open RDB: %w", err)
	}
	defer f.Close()
	info, err := VerifyRDB(f)
	if err != nil {
		return info, fmt.Errorf("cannot use %s: %w", path, err)
	}
	return info, nil
}
