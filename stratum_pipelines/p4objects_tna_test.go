package pipelines

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tnaObjectsSrc declares objectsSrc's register, counter and digest in
// TNA's forms, with a RegisterAction and a multi-line macro that declare
// nothing the controller sees.
const tnaObjectsSrc = `
typedef bit<32> addr_t;
const bit<32> SLOTS = 1024;
header h_t { addr_t dst; bit<128> digest; }
struct headers_t { h_t h; }
struct report_t { bit<128> digest; bit<16> count; }
#define TWICE(x) \
    x; \
    register<bit<8>>(4) not_a_register;
control C(inout headers_t hdr) {
    @id(0x16000001) @name(".values") Register<bit<64>, bit<32>>(SLOTS) values;
    @id(0x16000002) @name(".marks") Register<addr_t, _>(16, 0) marks;
    RegisterAction<bit<64>, bit<32>, bit<64>>(values) read_value = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    @id(0x12000001) @name(".hits") Counter<bit<64>, bit<32>>(SLOTS, CounterType_t.PACKETS_AND_BYTES) hits;
    @id(0x12000002) @name(".bytes") Counter<bit<32>, bit<16>>(8, CounterType_t.BYTES) bytes;
    apply { }
}
control D(packet_out pkt, inout headers_t hdr) {
    @name(".report_t") Digest<report_t>() report;
    apply { report.pack({ hdr.h.digest, 1 }); }
}`

func TestParseTNAObjects(t *testing.T) {
	d, err := Parse(tnaObjectsSrc)
	if err != nil {
		t.Fatal(err)
	}
	wantRegisters := []Register{
		{ID: 0x16000001, Name: "values", Bits: 64, Size: 1024},
		{ID: 0x16000002, Name: "marks", Bits: 32, Size: 16},
	}
	if diff := cmp.Diff(wantRegisters, d.Registers); diff != "" {
		t.Errorf("registers (-want +got):\n%s", diff)
	}
	wantCounters := []Counter{
		{ID: 0x12000001, Name: "hits", Unit: "packets_and_bytes", Size: 1024},
		{ID: 0x12000002, Name: "bytes", Unit: "bytes", Size: 8},
	}
	if diff := cmp.Diff(wantCounters, d.Counters); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"report_t"}, d.Digests); diff != "" {
		t.Errorf("digests (-want +got):\n%s", diff)
	}
	info, err := d.P4Info("tna")
	if err != nil {
		t.Fatal(err)
	}
	if info.PkgInfo.Arch != "tna" || len(info.Registers) != 2 || len(info.Digests) != 1 {
		t.Errorf("P4Info %v", info)
	}
}

func TestParseTNAObjectsRejects(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"register without id", `@id(0x16000001) @name(".values") Register`, `Register`, "cannot parse register values: no @id"},
		{"register of no width", `Register<addr_t, _>`, `Register<pair_t, _>`, `type "pair_t" has no width`},
		{"counter without id", `@id(0x12000002) @name(".bytes") Counter`, `Counter`, "cannot parse counter bytes: no @id"},
		{"counter type", `CounterType_t.BYTES`, `CounterType_t.FLOWS`, "unknown CounterType_t.FLOWS"},
		{"digest of no struct", `Digest<report_t>`, `Digest<nothing_t>`, "nothing_t is no struct"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(tnaObjectsSrc, tt.old, tt.new, 1)
			if src == tnaObjectsSrc {
				t.Fatalf("%q is not in the source", tt.old)
			}
			_, err := Parse(src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

func TestArch(t *testing.T) {
	for program, want := range map[string]string{
		"v1model/cache_switch.p4": "v1model", "tna/client_leaf.p4": "tna", "./tna/cache_switch.p4": "tna",
	} {
		if got := Arch(program); got != want {
			t.Errorf("Arch(%q) = %q, want %q", program, got, want)
		}
	}
}
