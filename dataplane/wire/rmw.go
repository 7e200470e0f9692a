package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// RMW is a read-modify-write operation a storage shim runs on a key
// atomically, under the coherence protocol like a write (CableCache's
// in-network read-modify-write, run at the key's shim here): an RMW
// message's Value is the operation (AppendRMW), its reply's Value the
// result (below).
type RMW uint8

// RMW operations and their results (the RMW_REPLY's Value).
const (
	// RMWIncrBy adds a signed 64-bit delta (the argument, 8 bytes big
	// endian) to the key's integer value (a missing key is 0); result:
	// the new value in decimal ASCII.
	RMWIncrBy RMW = 1
	// RMWAppend appends the argument to the key's value (a missing key is
	// empty); result: the new length, 8 bytes big endian.
	RMWAppend RMW = 2
	// RMWGetSet sets the key to the argument; result: "1" and the old
	// value, or "0" when the key did not exist.
	RMWGetSet RMW = 3
	// RMWSetNX sets the key to the argument unless it exists; result: "1"
	// when it set it, "0" when the key existed.
	RMWSetNX RMW = 4
	// RMWSetXX sets the key to the argument only if it exists; result:
	// "1" when it set it, "0" when the key did not exist.
	RMWSetXX RMW = 5
	rmwLimit RMW = 6
)

var rmwNames = [...]string{"", "incrby", "append", "getset", "setnx", "setxx"}

func (r RMW) String() string {
	if r > 0 && r < rmwLimit {
		return rmwNames[r]
	}
	return fmt.Sprintf("RMW(%d)", uint8(r))
}

// ErrRMW is wrapped by ParseRMW for a malformed operation.
var ErrRMW = errors.New("malformed RMW")

// AppendRMW appends the encoding of op with its argument to dst: the op's
// byte, then the argument.
func AppendRMW(dst []byte, op RMW, arg []byte) []byte {
	dst = append(dst, byte(op))
	return append(dst, arg...)
}

// IncrByArg is RMWIncrBy's argument for delta.
func IncrByArg(delta int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(delta)) }

// ParseRMW decodes an RMW message's Value; arg aliases b.
func ParseRMW(b []byte) (op RMW, arg []byte, err error) {
	if len(b) == 0 {
		return 0, nil, fmt.Errorf("%w: empty", ErrRMW)
	}
	op, arg = RMW(b[0]), b[1:]
	switch {
	case op == 0 || op >= rmwLimit:
		return 0, nil, fmt.Errorf("%w: unknown operation %d", ErrRMW, b[0])
	case op == RMWIncrBy && len(arg) != 8:
		return 0, nil, fmt.Errorf("%w: incrby takes an 8-byte delta, got %d bytes", ErrRMW, len(arg))
	}
	return op, arg, nil
}
