package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

func TestParseRMW(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		wantOp  wire.RMW
		wantArg []byte
		wantErr bool
	}{
		{"incrby", wire.AppendRMW(nil, wire.RMWIncrBy, wire.IncrByArg(-5)), wire.RMWIncrBy, wire.IncrByArg(-5), false},
		{"append", wire.AppendRMW(nil, wire.RMWAppend, []byte("tail")), wire.RMWAppend, []byte("tail"), false},
		{"getset of an empty value", wire.AppendRMW(nil, wire.RMWGetSet, nil), wire.RMWGetSet, nil, false},
		{"setnx", wire.AppendRMW(nil, wire.RMWSetNX, []byte("v")), wire.RMWSetNX, []byte("v"), false},
		{"setxx", wire.AppendRMW(nil, wire.RMWSetXX, []byte("v")), wire.RMWSetXX, []byte("v"), false},
		{"empty", nil, 0, nil, true},
		{"op 0", []byte{0, 1}, 0, nil, true},
		{"set with every option", wire.AppendRMW(nil, wire.RMWSet, wire.SetArg(wire.SetNX, wire.SetGet, 1500, []byte("v"))),
			wire.RMWSet, wire.SetArg(wire.SetNX, wire.SetGet, 1500, []byte("v")), false},
		{"set with a short header", []byte{6, 0, 0}, 0, nil, true},
		{"set with an unknown condition", wire.AppendRMW(nil, wire.RMWSet, wire.SetArg(3, 0, 0, nil)), 0, nil, true},
		{"set with unknown options", wire.AppendRMW(nil, wire.RMWSet, wire.SetArg(0, 4, 0, nil)), 0, nil, true},
		{"set with an expiry and KEEPTTL", wire.AppendRMW(nil, wire.RMWSet, wire.SetArg(0, wire.SetKeepTTL, 10, nil)), 0, nil, true},
		{"unknown op", []byte{9}, 0, nil, true},
		{"release", []byte{8}, wire.RMWRelease, []byte{}, false},
		{"release with an argument", []byte{8, 0}, 0, nil, true},
		{"command", wire.AppendRMW(nil, wire.RMWCommand, wire.CommandArg([][]byte{[]byte("hset"), []byte("f"), []byte("")})),
			wire.RMWCommand, wire.CommandArg([][]byte{[]byte("hset"), []byte("f"), []byte("")}), false},
		{"command without a count", []byte{7}, 0, nil, true},
		{"command without a name", []byte{7, 0}, 0, nil, true},
		{"command with a long count", []byte{7, 0x81, 0x00, 1, 'x'}, 0, nil, true},
		{"command string overrunning", []byte{7, 1, 5, 'a', 'b'}, 0, nil, true},
		{"command with bytes after it", []byte{7, 1, 1, 'a', 'b'}, 0, nil, true},
		{"incrby with a short delta", []byte{1, 0, 0, 0}, 0, nil, true},
		{"incrby with a long delta", append([]byte{1}, make([]byte, 9)...), 0, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, arg, err := wire.ParseRMW(tc.in)
			if tc.wantErr {
				if !errors.Is(err, wire.ErrRMW) {
					t.Fatalf("ParseRMW(%x) error %v, want ErrRMW", tc.in, err)
				}
				return
			}
			if err != nil || op != tc.wantOp || !bytes.Equal(arg, tc.wantArg) {
				t.Fatalf("ParseRMW(%x) = %v %x %v, want %v %x", tc.in, op, arg, err, tc.wantOp, tc.wantArg)
			}
		})
	}
}

// FuzzParseRMW: any bytes decode to an operation that encodes back to
// them, or to ErrRMW.
func FuzzParseRMW(f *testing.F) {
	f.Add(wire.AppendRMW(nil, wire.RMWIncrBy, wire.IncrByArg(1)))
	f.Add(wire.AppendRMW(nil, wire.RMWAppend, []byte("x")))
	f.Add([]byte{9})
	f.Add(wire.AppendRMW(nil, wire.RMWCommand, wire.CommandArg([][]byte{[]byte("hget"), []byte("field")})))
	f.Fuzz(func(t *testing.T, b []byte) {
		op, arg, err := wire.ParseRMW(b)
		if err != nil {
			if !errors.Is(err, wire.ErrRMW) {
				t.Fatalf("error %v does not wrap ErrRMW", err)
			}
			return
		}
		if got := wire.AppendRMW(nil, op, arg); !bytes.Equal(got, b) {
			t.Fatalf("%x decoded to %v %x, which encodes to %x", b, op, arg, got)
		}
	})
}

func TestCommandArgRoundTrip(t *testing.T) {
	for _, args := range [][][]byte{
		{[]byte("type")},
		{[]byte("hset"), []byte("f"), nil, []byte("v")},
		{[]byte("rpush"), bytes.Repeat([]byte("x"), 300)},
	} {
		got, err := wire.ParseCommandArg(wire.CommandArg(args))
		if err != nil || len(got) != len(args) {
			t.Fatalf("ParseCommandArg(CommandArg(%q)) = %q, %v", args, got, err)
		}
		for i := range args {
			if !bytes.Equal(got[i], args[i]) {
				t.Errorf("string %d: %q, want %q", i, got[i], args[i])
			}
		}
	}
}
