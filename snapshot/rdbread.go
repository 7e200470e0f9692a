package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// ErrUnsupported reports an RDB value this package cannot cut out of an
// RDB file: a module type, or a format newer than it knows.
var ErrUnsupported = errors.New("unsupported in the RDB file")

// MaxRDBVersion is the newest RDB format version RDBReader reads (Redis
// 7.4 writes 12).
const MaxRDBVersion = 12

// DefaultMaxPayload bounds a key's DUMP payload and a key's name: Redis's
// default proto-max-bulk-len, the largest argument RESTORE takes.
const DefaultMaxPayload = 512 << 20

// RDB opcodes that are not value types (rdb.h).
const (
	opSlotInfo       = 0xF4
	opFunction2      = 0xF5
	opFunctionPreGA  = 0xF6
	opModuleAux      = 0xF7
	opIdle           = 0xF8
	opFreq           = 0xF9
	opAux            = 0xFA
	opResizeDB       = 0xFB
	opExpireTimeMS   = 0xFC
	opExpireTime     = 0xFD
	opSelectDB       = 0xFE
	lenEncodedPrefix = 3 // the two high bits of a special string encoding
)

// RDBKey is one key of an RDB file, as RDBReader.Next returns it.
type RDBKey struct {
	// DB is the database the key is in.
	DB uint64
	// Key is the key's name.
	Key string
	// Type is the RDB value type (rdb.h: 0 string, 18 quicklist 2, ...).
	Type byte
	// ExpireAt is when the key expires; zero when it does not.
	ExpireAt time.Time
	// Payload is the key's DUMP payload: the type byte and the value as
	// the file holds them, the file's RDB version (2 bytes, little
	// endian) and Redis's CRC64 of all that (8 bytes, little endian), what
	// RESTORE takes. It is valid until the next call to Next.
	Payload []byte
}

// RDBReader walks the records of an RDB file and cuts each key's value
// out of it as a DUMP payload, without decoding it: it parses only the
// lengths that say where each value ends. It holds one payload in memory
// at a time.
type RDBReader struct {
	r          *bufio.Reader
	version    int
	maxPayload int
	keep       func(db uint64, key string) bool
	db         uint64
	done       bool

	recording bool
	payload   []byte
	chunk     [16]byte
}

// RDBReaderOption configures NewRDBReader.
type RDBReaderOption func(*RDBReader)

// WithMaxPayload bounds each key's name and payload to n bytes (default
// DefaultMaxPayload); a longer one is an error.
func WithMaxPayload(n int) RDBReaderOption {
	return func(r *RDBReader) { r.maxPayload = n }
}

// WithKeep makes Next return only the keys for which keep is true; it
// skips the others' values unread (a module value too, which it would
// otherwise refuse).
func WithKeep(keep func(db uint64, key string) bool) RDBReaderOption {
	return func(r *RDBReader) { r.keep = keep }
}

// NewRDBReader reads the header of the RDB in r: the "REDIS" magic and a
// version from 1 to MaxRDBVersion.
func NewRDBReader(r io.Reader, opts ...RDBReaderOption) (*RDBReader, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 256<<10)
	}
	rd := &RDBReader{r: br, maxPayload: DefaultMaxPayload}
	for _, o := range opts {
		o(rd)
	}
	head := make([]byte, 9)
	if _, err := io.ReadFull(br, head); err != nil {
		return nil, fmt.Errorf("%w: cannot read the 9-byte header: %w", ErrCorrupt, err)
	}
	if string(head[:5]) != "REDIS" {
		return nil, fmt.Errorf("%w: no REDIS magic at the start (got %q)", ErrCorrupt, head[:5])
	}
	v, err := strconv.Atoi(string(head[5:]))
	if err != nil || v < 1 {
		return nil, fmt.Errorf("%w: bad version %q in the header", ErrCorrupt, head[5:])
	}
	if v > MaxRDBVersion {
		return nil, fmt.Errorf("cannot read RDB version %d, newer than %d: %w (use --redis-server)", v, MaxRDBVersion, ErrUnsupported)
	}
	rd.version = v
	return rd, nil
}

// Version is the RDB format version of the file.
func (rd *RDBReader) Version() int { return rd.version }

// Next returns the next key the reader keeps, and io.EOF after the last.
func (rd *RDBReader) Next() (RDBKey, error) {
	if rd.done {
		return RDBKey{}, io.EOF
	}
	k, err := rd.next()
	if err != nil {
		rd.done = true
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: truncated: %w", ErrCorrupt, err)
		}
	}
	return k, err
}

func (rd *RDBReader) next() (RDBKey, error) {
	var expireAt time.Time
	for {
		op, err := rd.byte()
		if err != nil {
			return RDBKey{}, fmt.Errorf("cannot read the next record: %w", err)
		}
		switch op {
		case rdbEOF:
			if rd.version >= 5 { // the CRC64 VerifyRDB checks
				if _, err := rd.fixed(8); err != nil {
					return RDBKey{}, fmt.Errorf("cannot read the CRC64 footer: %w", err)
				}
			}
			rd.done = true
			return RDBKey{}, io.EOF
		case opSelectDB:
			if rd.db, err = rd.length(); err != nil {
				return RDBKey{}, fmt.Errorf("cannot read SELECTDB: %w", err)
			}
		case opExpireTime:
			b, err := rd.fixed(4)
			if err != nil {
				return RDBKey{}, fmt.Errorf("cannot read EXPIRETIME: %w", err)
			}
			expireAt = time.Unix(int64(int32(binary.LittleEndian.Uint32(b))), 0)
		case opExpireTimeMS:
			b, err := rd.fixed(8)
			if err != nil {
				return RDBKey{}, fmt.Errorf("cannot read EXPIRETIME_MS: %w", err)
			}
			expireAt = time.UnixMilli(int64(binary.LittleEndian.Uint64(b)))
		case opResizeDB:
			err = rd.lengths(2)
		case opSlotInfo:
			err = rd.lengths(3)
		case opIdle:
			err = rd.lengths(1)
		case opFreq:
			_, err = rd.byte()
		case opAux:
			if err = rd.skipString(); err == nil {
				err = rd.skipString()
			}
		case opFunction2:
			err = rd.skipString()
		case opFunctionPreGA:
			return RDBKey{}, fmt.Errorf("cannot read the pre-release function format of Redis 7.0 RC: %w", ErrUnsupported)
		case opModuleAux:
			err = rd.skipModuleAux()
		default:
			if !valueType(op) {
				return RDBKey{}, fmt.Errorf("%w: unknown record type %d", ErrCorrupt, op)
			}
			k, kept, err := rd.keyValue(op, expireAt)
			if err != nil || kept {
				return k, err
			}
			expireAt = time.Time{}
		}
		if err != nil {
			return RDBKey{}, fmt.Errorf("cannot read record %d: %w", op, err)
		}
	}
}

// keyValue reads a key and its value of type typ, and cuts the payload
// if the key is kept.
func (rd *RDBReader) keyValue(typ byte, expireAt time.Time) (RDBKey, bool, error) {
	name, err := rd.readString()
	if err != nil {
		return RDBKey{}, false, fmt.Errorf("cannot read a key name: %w", err)
	}
	k := RDBKey{DB: rd.db, Key: string(name), Type: typ, ExpireAt: expireAt}
	keep := rd.keep == nil || rd.keep(k.DB, k.Key)
	rd.recording = keep
	rd.payload = append(rd.payload[:0], typ)
	err = rd.skipValue(typ, keep)
	rd.recording = false
	if err != nil {
		return RDBKey{}, false, fmt.Errorf("cannot read the value of key %q (%s): %w", k.Key, typeName(typ), err)
	}
	if !keep {
		return RDBKey{}, false, nil
	}
	rd.payload = binary.LittleEndian.AppendUint16(rd.payload, uint16(rd.version))
	rd.payload = binary.LittleEndian.AppendUint64(rd.payload, redisCRC64(0, rd.payload))
	k.Payload = rd.payload
	return k, true, nil
}

// byte reads one byte.
func (rd *RDBReader) byte() (byte, error) {
	b, err := rd.r.ReadByte()
	if err != nil {
		return 0, unexpected(err)
	}
	if rd.recording {
		if err := rd.grow(1); err != nil {
			return 0, err
		}
		rd.payload = append(rd.payload, b)
	}
	return b, nil
}

// fixed reads n ≤ 16 bytes; the slice is valid until the next read.
func (rd *RDBReader) fixed(n int) ([]byte, error) {
	b := rd.chunk[:n]
	if _, err := io.ReadFull(rd.r, b); err != nil {
		return nil, unexpected(err)
	}
	if rd.recording {
		if err := rd.grow(n); err != nil {
			return nil, err
		}
		rd.payload = append(rd.payload, b...)
	}
	return b, nil
}

// skip passes over n bytes, recording them if the reader records.
func (rd *RDBReader) skip(n uint64) error {
	if !rd.recording {
		if n > math.MaxInt64 {
			return fmt.Errorf("%w: length %d", ErrCorrupt, n)
		}
		for n > 0 {
			step := int(min(n, 1<<30))
			if _, err := rd.r.Discard(step); err != nil {
				return unexpected(err)
			}
			n -= uint64(step)
		}
		return nil
	}
	if n > uint64(rd.maxPayload) {
		return rd.tooLong(n)
	}
	if err := rd.grow(int(n)); err != nil {
		return err
	}
	for n > 0 {
		step := int(min(n, 64<<10))
		at := len(rd.payload)
		rd.payload = append(rd.payload, make([]byte, step)...)
		if _, err := io.ReadFull(rd.r, rd.payload[at:]); err != nil {
			return unexpected(err)
		}
		n -= uint64(step)
	}
	return nil
}

// grow checks that the payload may take n more bytes.
func (rd *RDBReader) grow(n int) error {
	if len(rd.payload)+n > rd.maxPayload {
		return rd.tooLong(uint64(len(rd.payload) + n))
	}
	return nil
}

func (rd *RDBReader) tooLong(n uint64) error {
	return fmt.Errorf("cannot hold %d bytes: the limit is %d: %w", n, rd.maxPayload, ErrUnsupported)
}

// length reads an RDB length (rdbLoadLen): 6, 14, 32 or 64 bits.
func (rd *RDBReader) length() (uint64, error) {
	n, encoded, err := rd.lengthOrEncoding()
	if err == nil && encoded {
		return 0, fmt.Errorf("%w: a string encoding where a length belongs", ErrCorrupt)
	}
	return n, err
}

// lengths reads and drops n lengths.
func (rd *RDBReader) lengths(n int) error {
	for range n {
		if _, err := rd.length(); err != nil {
			return err
		}
	}
	return nil
}

// lengthOrEncoding reads a length, or the kind of a specially encoded
// string (encoded true).
func (rd *RDBReader) lengthOrEncoding() (uint64, bool, error) {
	b, err := rd.byte()
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3F), false, nil
	case 1:
		c, err := rd.byte()
		return uint64(b&0x3F)<<8 | uint64(c), false, err
	case lenEncodedPrefix:
		return uint64(b & 0x3F), true, nil
	}
	switch b {
	case 0x80:
		p, err := rd.fixed(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(p)), false, nil
	case 0x81:
		p, err := rd.fixed(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(p), false, nil
	}
	return 0, false, fmt.Errorf("%w: unknown length encoding 0x%02x", ErrCorrupt, b)
}

// skipString passes over a string: plain, integer or LZF-compressed.
func (rd *RDBReader) skipString() error {
	n, encoded, err := rd.lengthOrEncoding()
	if err != nil {
		return err
	}
	if !encoded {
		return rd.skip(n)
	}
	switch n {
	case 0, 1, 2: // an 8, 16 or 32-bit integer
		return rd.skip(1 << n)
	case 3:
		clen, err := rd.length()
		if err != nil {
			return err
		}
		if _, err := rd.length(); err != nil {
			return err
		}
		return rd.skip(clen)
	}
	return fmt.Errorf("%w: unknown string encoding %d", ErrCorrupt, n)
}

// readString reads a string (a key name) and decodes it. It is not
// recorded: a key is not part of its payload.
func (rd *RDBReader) readString() ([]byte, error) {
	n, encoded, err := rd.lengthOrEncoding()
	if err != nil {
		return nil, err
	}
	if !encoded {
		return rd.bytes(n)
	}
	switch n {
	case 0:
		b, err := rd.fixed(1)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int8(b[0])), 10), nil
	case 1:
		b, err := rd.fixed(2)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(b))), 10), nil
	case 2:
		b, err := rd.fixed(4)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(b))), 10), nil
	case 3:
		clen, err := rd.length()
		if err != nil {
			return nil, err
		}
		ulen, err := rd.length()
		if err != nil {
			return nil, err
		}
		if ulen > uint64(rd.maxPayload) {
			return nil, rd.tooLong(ulen)
		}
		in, err := rd.bytes(clen)
		if err != nil {
			return nil, err
		}
		return lzfDecompress(in, int(ulen))
	}
	return nil, fmt.Errorf("%w: unknown string encoding %d", ErrCorrupt, n)
}

// bytes reads n bytes, not recorded, growing the slice as they arrive.
func (rd *RDBReader) bytes(n uint64) ([]byte, error) {
	if n > uint64(rd.maxPayload) {
		return nil, rd.tooLong(n)
	}
	var out []byte
	for n > 0 {
		step := int(min(n, 64<<10))
		at := len(out)
		out = append(out, make([]byte, step)...)
		if _, err := io.ReadFull(rd.r, out[at:]); err != nil {
			return nil, unexpected(err)
		}
		n -= uint64(step)
	}
	return out, nil
}

// unexpected turns an end of file in the middle of a record into
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
