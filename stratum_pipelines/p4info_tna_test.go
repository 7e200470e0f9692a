package pipelines

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// registerSplit is a v1model register that the TNA program of the same
// role holds as other registers, and why Tofino needs it.
type registerSplit struct {
	name string
	why  string
	tna  []*p4configv1.Register // replacing it in the TNA P4Info
}

func p4Register(id uint32, name string, bits int, size int32) *p4configv1.Register {
	return &p4configv1.Register{Preamble: preamble(id, name), Size: size, TypeSpec: bitstring(bits)}
}

// widened is a 48-bit v1model register as the TNA program declares it.
func widened(id uint32, name string) registerSplit {
	return registerSplit{
		name: name,
		why:  "Tofino's register cells are 1, 8, 16, 32 or 64 bits; the controller writes and reads it as a bytestring of either width",
		tna:  []*p4configv1.Register{p4Register(id, name, 64, 1)},
	}
}

// tnaRegisterSplits are the only differences between a program's TNA and
// v1model P4Info besides pkg_info.arch: every table, action, counter,
// digest, controller header and every other register is the same object
// under the same id and name. Tofino executes one access per register per
// pass, so a register a v1model packet touches in several cells becomes
// several registers (tna/cache.p4 and tna/client_leaf.p4 say how); none
// of them is one the controller (fabric/cacheswitch) reads or writes.
var tnaRegisterSplits = map[string][]registerSplit{
	"cache_switch.p4": {
		{
			name: "value_words",
			why: "a hit reads all sixteen words of a slot, and one register holding 1,048,576 words is beyond one stage; " +
				"one register a word index, a cell a slot",
			tna: valueWordRegisters(),
		},
		{
			name: "load",
			why:  "a read counts this window (cell 0) and reads the last (cell 1); the last window is load_last",
			tna: []*p4configv1.Register{
				p4Register(0x16000008, "load", 32, 1), p4Register(0x16000017, "load_last", 32, 1),
			},
		},
		widened(0x16000006, "lease_until"),
		widened(0x16000007, "clock"),
		widened(0x16000009, "load_window_start"),
		widened(0x16000016, "relay_next"),
	},
	"client_leaf.p4": {
		{
			name: "member_load",
			why:  "a GET reads the loads of two members; the second is read from a copy the replies write too",
			tna: []*p4configv1.Register{
				p4Register(0x16000101, "member_load", 32, 1024), p4Register(0x16000102, "member_load_copy", 32, 1024),
			},
		},
	},
}

func valueWordRegisters() []*p4configv1.Register {
	var rs []*p4configv1.Register
	for i := range 16 {
		rs = append(rs, p4Register(0x16000020+uint32(i), fmt.Sprintf("value_words_%d", i), 64, 65536))
	}
	return rs
}

// TestTNAP4InfoIsTheV1modelOne: the controller programs a Tofino switch
// as it programs stratum-bmv2. Each TNA program's P4Info (checked against
// its sources by TestP4InfoMatchesTheSources) is the v1model program's
// with pkg_info.arch "tna" and the registers of tnaRegisterSplits, and
// nothing else.
func TestTNAP4InfoIsTheV1modelOne(t *testing.T) {
	for _, program := range Programs {
		if Arch(program) != "tna" {
			continue
		}
		name := strings.TrimPrefix(program, "tna/")
		t.Run(name, func(t *testing.T) {
			got, err := ProgramP4Info(program)
			if err != nil {
				t.Fatal(err)
			}
			v1, err := ProgramP4Info("v1model/" + name)
			if err != nil {
				t.Fatal(err)
			}
			want := proto.Clone(v1).(*p4configv1.P4Info)
			want.PkgInfo.Arch = "tna"
			for _, s := range tnaRegisterSplits[name] {
				i := registerIndex(want, s.name)
				if i < 0 {
					t.Fatalf("v1model/%s has no register %s to split (%s)", name, s.name, s.why)
				}
				want.Registers = append(want.Registers[:i], want.Registers[i+1:]...)
				for _, r := range s.tna {
					want.Registers = append(want.Registers, proto.Clone(r).(*p4configv1.Register))
				}
			}
			sortByID(want)
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("tna/%s is not v1model/%s for Tofino (-want +got):\n%s", name, name, diff)
			}
		})
	}
}

// TestTNASplitsSpareTheControllersRegisters: a register the controller
// reads or writes by name (fabric/cacheswitch) is at most widened for
// TNA — one register of the same id and name — never split, so the
// controller programs either target alike.
func TestTNASplitsSpareTheControllersRegisters(t *testing.T) {
	controller := map[string]bool{"valid": true, "version": true, "fill_seq": true, "lease_until": true,
		"clock": true, "hot_threshold": true, "sketch_row0": true, "sketch_row1": true, "sketch_row2": true,
		"sketch_row3": true, "bloom0": true, "bloom1": true, "bloom2": true}
	for _, s := range tnaRegisterSplits["cache_switch.p4"] {
		if !controller[s.name] {
			continue
		}
		if len(s.tna) != 1 || s.tna[0].Preamble.Name != s.name {
			t.Errorf("register %s, which the controller uses, becomes %d registers for TNA", s.name, len(s.tna))
		}
	}
}

func registerIndex(info *p4configv1.P4Info, name string) int {
	for i, r := range info.Registers {
		if r.Preamble.Name == name {
			return i
		}
	}
	return -1
}
