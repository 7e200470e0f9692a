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
	// RMWSet is Redis' SET with its options (SetArg): a condition (NX or
	// XX), GET, and an expiry (PX milliseconds) or KEEPTTL; result: "1" or
	// "0" (set or not), then "1" and the old value or "0" (with GET).
	RMWSet RMW = 6
	// RMWCommand runs a Redis command on the key as it is (CommandArg:
	// the command's name and its arguments after the key; package
	// rediscmd lists the commands a shim runs); result: Redis' reply,
	// encoded in RESP2.
	RMWCommand RMW = 7
	// RMWRelease changes nothing in Redis: it invalidates every cached
	// copy of the key, leaves them invalid, and takes the key out of the
	// keys a cache may hold (package heldkeys), so that clients may write
	// it in Redis themselves; no argument. Result: "1" when the key left
	// that set, "0" when it could not (the shard's writes do not go
	// direct).
	RMWRelease RMW = 8
	rmwLimit   RMW = 9
)

var rmwNames = [...]string{"", "incrby", "append", "getset", "setnx", "setxx", "set", "command", "release"}

// SET conditions (SetArg).
const (
	SetAlways byte = 0
	SetNX     byte = 1 // only if the key does not exist
	SetXX     byte = 2 // only if the key exists
)

// SET option bits (SetArg).
const (
	SetGet     byte = 1 << 0 // return the old value
	SetKeepTTL byte = 1 << 1 // keep the key's expiry
)

// setHeader is the length of RMWSet's argument before the value:
// condition, option bits, expiry.
const setHeader = 10

// SetArg is RMWSet's argument: the condition, the option bits, the expiry
// in milliseconds (0: none; exclusive with SetKeepTTL), then the value.
func SetArg(cond, opts byte, pxMillis uint64, value []byte) []byte {
	b := make([]byte, 0, setHeader+len(value))
	b = append(b, cond, opts)
	b = binary.BigEndian.AppendUint64(b, pxMillis)
	return append(b, value...)
}

// ParseSetArg decodes RMWSet's argument; value aliases arg.
func ParseSetArg(arg []byte) (cond, opts byte, pxMillis uint64, value []byte, err error) {
	switch {
	case len(arg) < setHeader:
		return 0, 0, 0, nil, fmt.Errorf("%w: set takes a %d-byte header, got %d bytes", ErrRMW, setHeader, len(arg))
	case arg[0] > SetXX:
		return 0, 0, 0, nil, fmt.Errorf("%w: set condition %d", ErrRMW, arg[0])
	case arg[1]&^(SetGet|SetKeepTTL) != 0:
		return 0, 0, 0, nil, fmt.Errorf("%w: set options %#x", ErrRMW, arg[1])
	}
	px := binary.BigEndian.Uint64(arg[2:10])
	if px != 0 && arg[1]&SetKeepTTL != 0 {
		return 0, 0, 0, nil, fmt.Errorf("%w: set with an expiry and KEEPTTL", ErrRMW)
	}
	return arg[0], arg[1], px, arg[setHeader:], nil
}

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
	case op == RMWRelease && len(arg) != 0:
		return 0, nil, fmt.Errorf("%w: release takes no argument, got %d bytes", ErrRMW, len(arg))
	case op == RMWSet:
		if _, _, _, _, err := ParseSetArg(arg); err != nil {
			return 0, nil, err
		}
	case op == RMWCommand:
		if _, err := ParseCommandArg(arg); err != nil {
			return 0, nil, err
		}
	}
	return op, arg, nil
}

// CommandArg is RMWCommand's argument for a command whose name is args[0]
// and whose arguments after the key are args[1:]: the number of strings,
// then each string's length, each a uvarint, and its bytes.
func CommandArg(args [][]byte) []byte {
	n := binary.MaxVarintLen64
	for _, a := range args {
		n += binary.MaxVarintLen64 + len(a)
	}
	b := binary.AppendUvarint(make([]byte, 0, n), uint64(len(args)))
	for _, a := range args {
		b = binary.AppendUvarint(b, uint64(len(a)))
		b = append(b, a...)
	}
	return b
}

// ParseCommandArg decodes RMWCommand's argument; the strings alias arg.
func ParseCommandArg(arg []byte) ([][]byte, error) {
	n, k := uvarint(arg)
	switch {
	case k <= 0:
		return nil, fmt.Errorf("%w: command without a count", ErrRMW)
	case n == 0:
		return nil, fmt.Errorf("%w: command without a name", ErrRMW)
	case n > uint64(len(arg)):
		return nil, fmt.Errorf("%w: command of %d strings in %d bytes", ErrRMW, n, len(arg))
	}
	args, rest := make([][]byte, 0, n), arg[k:]
	for range n {
		l, k := uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return nil, fmt.Errorf("%w: command string %d overruns its %d bytes", ErrRMW, len(args), len(arg))
		}
		args = append(args, rest[k:k+int(l)])
		rest = rest[k+int(l):]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the command", ErrRMW, len(rest))
	}
	return args, nil
}

// uvarint is binary.Uvarint refusing the longer encodings of a number
// (k = 0), so that a decoded argument encodes back to the same bytes.
func uvarint(b []byte) (uint64, int) {
	n, k := binary.Uvarint(b)
	if k > 1 && b[k-1] == 0 {
		return 0, 0
	}
	return n, k
}
