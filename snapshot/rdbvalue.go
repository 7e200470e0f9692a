package snapshot

import (
	"fmt"
)

// RDB value types (rdb.h).
const (
	typeString              = 0
	typeList                = 1
	typeSet                 = 2
	typeZSet                = 3
	typeHash                = 4
	typeZSet2               = 5
	typeModulePreGA         = 6
	typeModule2             = 7
	typeHashZipmap          = 9
	typeListZiplist         = 10
	typeSetIntset           = 11
	typeZSetZiplist         = 12
	typeHashZiplist         = 13
	typeListQuicklist       = 14
	typeStreamListpacks     = 15
	typeHashListpack        = 16
	typeZSetListpack        = 17
	typeListQuicklist2      = 18
	typeStreamListpacks2    = 19
	typeSetListpack         = 20
	typeStreamListpacks3    = 21
	typeHashMetadataPreGA   = 22
	typeHashListpackExPreGA = 23
	typeHashMetadata        = 24
	typeHashListpackEx      = 25
)

var typeNames = map[byte]string{
	typeString: "string", typeList: "list (linked list)", typeSet: "set",
	typeZSet: "sorted set (zset)", typeHash: "hash", typeZSet2: "sorted set (zset2)",
	typeModulePreGA: "module (pre-GA)", typeModule2: "module",
	typeHashZipmap: "hash (zipmap)", typeListZiplist: "list (ziplist)",
	typeSetIntset: "set (intset)", typeZSetZiplist: "sorted set (ziplist)",
	typeHashZiplist: "hash (ziplist)", typeListQuicklist: "list (quicklist)",
	typeStreamListpacks: "stream (listpacks)", typeHashListpack: "hash (listpack)",
	typeZSetListpack: "sorted set (listpack)", typeListQuicklist2: "list (quicklist 2)",
	typeStreamListpacks2: "stream (listpacks 2)", typeSetListpack: "set (listpack)",
	typeStreamListpacks3:  "stream (listpacks 3)",
	typeHashMetadataPreGA: "hash with field TTLs (7.4 RC)", typeHashListpackExPreGA: "hash listpack with field TTLs (7.4 RC)",
	typeHashMetadata: "hash with field TTLs", typeHashListpackEx: "hash listpack with field TTLs",
}

// typeName names an RDB value type for messages.
func typeName(t byte) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", t)
}

// valueType reports the RDB value types (rdbIsObjectType).
func valueType(t byte) bool {
	return t <= typeModule2 || (t >= typeHashZipmap && t <= typeHashListpackEx)
}

// skipValue passes over a value of type typ, recording it when the reader
// records. keep false lets it pass over a module value too.
func (rd *RDBReader) skipValue(typ byte, keep bool) error {
	switch typ {
	case typeString, typeHashZipmap, typeListZiplist, typeSetIntset, typeZSetZiplist,
		typeHashZiplist, typeHashListpack, typeZSetListpack, typeSetListpack, typeHashListpackExPreGA:
		return rd.skipString() // a string, or one blob: ziplist, listpack, intset, zipmap
	case typeHashListpackEx:
		if _, err := rd.fixed(8); err != nil { // the smallest field expiry
			return err
		}
		return rd.skipString()
	case typeList, typeSet, typeListQuicklist:
		return rd.repeat(rd.skipString)
	case typeHash:
		return rd.repeat(func() error { return rd.strings(2) })
	case typeZSet:
		return rd.repeat(func() error {
			if err := rd.skipString(); err != nil {
				return err
			}
			return rd.skipTextDouble()
		})
	case typeZSet2:
		return rd.repeat(func() error {
			if err := rd.skipString(); err != nil {
				return err
			}
			_, err := rd.fixed(8) // a binary double
			return err
		})
	case typeListQuicklist2:
		return rd.repeat(func() error {
			if _, err := rd.length(); err != nil { // container: plain or packed
				return err
			}
			return rd.skipString()
		})
	case typeHashMetadata, typeHashMetadataPreGA:
		if typ == typeHashMetadata {
			if _, err := rd.fixed(8); err != nil { // the smallest field expiry
				return err
			}
		}
		return rd.repeat(func() error {
			if _, err := rd.length(); err != nil { // the field's TTL
				return err
			}
			return rd.strings(2)
		})
	case typeStreamListpacks, typeStreamListpacks2, typeStreamListpacks3:
		return rd.skipStream(typ)
	case typeModule2:
		id, err := rd.length()
		if err != nil {
			return err
		}
		if keep {
			return fmt.Errorf("cannot restore module type %s: use --redis-server: %w", moduleTypeName(id), ErrUnsupported)
		}
		return rd.skipModuleValue()
	}
	return fmt.Errorf("cannot read %s values: %w (use --redis-server)", typeName(typ), ErrUnsupported)
}

// repeat reads a count, then calls one that many times.
func (rd *RDBReader) repeat(one func() error) error {
	n, err := rd.length()
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		if err := one(); err != nil {
			return err
		}
	}
	return nil
}

// strings passes over n strings.
func (rd *RDBReader) strings(n int) error {
	for range n {
		if err := rd.skipString(); err != nil {
			return err
		}
	}
	return nil
}

// skipTextDouble passes over a double of the first zset format: a length
// byte and that many characters, or 253, 254, 255 for NaN, +inf, -inf.
func (rd *RDBReader) skipTextDouble() error {
	n, err := rd.byte()
	if err != nil || n >= 253 {
		return err
	}
	return rd.skip(uint64(n))
}

// skipStream passes over a stream: its listpacks, its metadata and its
// consumer groups with their pending entries and consumers.
func (rd *RDBReader) skipStream(typ byte) error {
	if err := rd.repeat(func() error { return rd.strings(2) }); err != nil { // master ID, listpack
		return err
	}
	meta := 3 // length, last ID
	if typ >= typeStreamListpacks2 {
		meta += 5 // first ID, max deleted ID, entries added
	}
	if err := rd.lengths(meta); err != nil {
		return err
	}
	return rd.repeat(func() error { // consumer groups
		if err := rd.skipString(); err != nil {
			return err
		}
		ids := 2 // last delivered ID
		if typ >= typeStreamListpacks2 {
			ids++ // entries read
		}
		if err := rd.lengths(ids); err != nil {
			return err
		}
		if err := rd.repeat(func() error { // the group's pending entries
			if _, err := rd.fixed(16); err != nil { // ID
				return err
			}
			if _, err := rd.fixed(8); err != nil { // delivery time
				return err
			}
			_, err := rd.length() // delivery count
			return err
		}); err != nil {
			return err
		}
		return rd.repeat(func() error { // consumers
			if err := rd.skipString(); err != nil {
				return err
			}
			if _, err := rd.fixed(8); err != nil { // seen time
				return err
			}
			if typ >= typeStreamListpacks3 {
				if _, err := rd.fixed(8); err != nil { // active time
					return err
				}
			}
			return rd.repeat(func() error { _, err := rd.fixed(16); return err })
		})
	})
}

// Module value opcodes (rdb.h).
const (
	moduleOpEOF = iota
	moduleOpSInt
	moduleOpUInt
	moduleOpFloat
	moduleOpDouble
	moduleOpString
)

// skipModuleValue passes over a module value saved with its annotations
// (opcode, datum) up to the EOF opcode.
func (rd *RDBReader) skipModuleValue() error {
	for {
		op, err := rd.length()
		if err != nil {
			return err
		}
		switch op {
		case moduleOpEOF:
			return nil
		case moduleOpSInt, moduleOpUInt:
			_, err = rd.length()
		case moduleOpFloat:
			_, err = rd.fixed(4)
		case moduleOpDouble:
			_, err = rd.fixed(8)
		case moduleOpString:
			err = rd.skipString()
		default:
			return fmt.Errorf("%w: unknown module opcode %d", ErrCorrupt, op)
		}
		if err != nil {
			return err
		}
	}
}

// skipModuleAux passes over a module's auxiliary data: its ID, when it is
// loaded, and an annotated value.
func (rd *RDBReader) skipModuleAux() error {
	id, err := rd.length()
	if err != nil {
		return err
	}
	whenOp, err := rd.length()
	if err != nil {
		return err
	}
	if whenOp != moduleOpUInt {
		return fmt.Errorf("%w: module %s aux data: when opcode %d", ErrCorrupt, moduleTypeName(id), whenOp)
	}
	if _, err := rd.length(); err != nil {
		return err
	}
	return rd.skipModuleValue()
}

// moduleTypeName is the 9-character name of a module type in its 64-bit
// ID: 9 characters of 6 bits, then a 10-bit encoding version.
func moduleTypeName(id uint64) string {
	const charset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var name [9]byte
	id >>= 10
	for i := 8; i >= 0; i-- {
		name[i] = charset[id&63]
		id >>= 6
	}
	return string(name[:])
}
