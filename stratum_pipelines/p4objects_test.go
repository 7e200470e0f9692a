package pipelines

import (
	"strings"
	"testing"
)

const objectsSrc = `
typedef bit<32> addr_t;
const bit<32> SLOTS = 1024;
header h_t { addr_t dst; bit<128> digest; }
@id(0x04000001) @controller_header("packet_in")
header packet_in_h { bit<9> port; bit<7> pad; }
struct headers_t { h_t h; h_t[2] stack; }
struct report_t { bit<128> digest; bit<16> count; }
control C(inout headers_t hdr, inout bit<8> unused) {
    @id(0x16000001) @name(".values") register<bit<64>>(SLOTS) values;
    @id(0x12000001) @name(".hits") counter(SLOTS, CounterType.packets_and_bytes) hits;
    @id(0x01000001) @name(".hit") action hit(bit<32> slot, addr_t via) { }
    @id(0x01000002) @name(".miss") action miss() { }
    action internal() { }
    @id(0x02000001) @name(".lookup") table lookup {
        key = {
            hdr.h.dst: exact @id(1) @name("dst");
            hdr.h.digest[127:64]: range @id(2) @name("point");
        }
        actions = { hit; @defaultonly miss; }
        default_action = miss();
        size = SLOTS;
    }
    apply { if (lookup.apply().hit) { digest<report_t>(1, { hdr.h.digest, 1 }); } }
}`

func TestParseObjects(t *testing.T) {
	d, err := Parse(objectsSrc)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tables) != 1 || len(d.Actions) != 2 || len(d.Registers) != 1 || len(d.Counters) != 1 {
		t.Fatalf("tables %d actions %d registers %d counters %d", len(d.Tables), len(d.Actions), len(d.Registers), len(d.Counters))
	}
	tb := d.Tables[0]
	if tb.ID != 0x02000001 || tb.Name != "lookup" || tb.Size != 1024 || len(tb.Keys) != 2 {
		t.Errorf("table %+v", tb)
	}
	if k := tb.Keys[1]; k.Name != "point" || k.Kind != "range" || k.Bits != 64 || k.ID != 2 {
		t.Errorf("key %+v", k)
	}
	if tb.Actions[0] != (ActionRef{Name: "hit"}) || tb.Actions[1] != (ActionRef{Name: "miss", DefaultOnly: true}) {
		t.Errorf("action refs %+v", tb.Actions)
	}
	if a := d.Actions[0]; a.Name != "hit" || len(a.Params) != 2 || a.Params[1] != (Param{"via", 32}) {
		t.Errorf("action %+v", a)
	}
	if r := d.Registers[0]; r != (Register{ID: 0x16000001, Name: "values", Bits: 64, Size: 1024}) {
		t.Errorf("register %+v", r)
	}
	if c := d.Counters[0]; c.Unit != "packets_and_bytes" || c.Size != 1024 {
		t.Errorf("counter %+v", c)
	}
	if len(d.Digests) != 1 || d.Digests[0] != "report_t" {
		t.Errorf("digests %v", d.Digests)
	}
	if len(d.ControllerHeaders) != 1 || d.ControllerHeaders[0] != (ControllerHeader{ID: 0x04000001, Name: "packet_in", Header: "packet_in_h"}) {
		t.Errorf("controller headers %+v", d.ControllerHeaders)
	}
	info, err := d.P4Info("v1model")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Tables[0].ActionRefs) != 2 || info.TypeInfo.Structs["report_t"] == nil || len(info.ControllerPacketMetadata[0].Metadata) != 2 {
		t.Errorf("P4Info %v", info)
	}
}

func TestParseObjectsRejects(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"table without id", `@id(0x02000001) @name(".lookup") table`, `table`, "cannot parse table lookup: no @id"},
		{"register without id", `@id(0x16000001) @name(".values") register`, `register`, "cannot parse register values: no @id"},
		{"unknown match kind", `range @id(2)`, `fuzzy @id(2)`, "unknown match kind fuzzy"},
		{"slice out of the field", `digest[127:64]`, `digest[128:64]`, "not a slice of 128 bits"},
		{"unknown member", `hdr.h.dst:`, `hdr.h.src:`, "h_t has no member src"},
		{"size not a constant", `size = SLOTS;`, `size = MANY;`, "neither a number nor a constant"},
		{"counter type", `CounterType.packets_and_bytes`, `CounterType.flows`, "unknown CounterType.flows"},
		{"digest of no struct", `digest<report_t>`, `digest<nothing_t>`, "nothing_t is no struct"},
		{"bad id", `@id(0x01000002)`, `@id(zero)`, "@id(zero) is not an id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(objectsSrc, tt.old, tt.new, 1)
			if src == objectsSrc {
				t.Fatalf("%q is not in the source", tt.old)
			}
			_, err := Parse(src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

func TestP4InfoRejectsAnActionWithoutID(t *testing.T) {
	src := strings.Replace(objectsSrc, `@id(0x01000002) @name(".miss") action miss`, `action miss`, 1)
	d, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.P4Info("v1model"); err == nil || !strings.Contains(err.Error(), "names action miss, which has no @id") {
		t.Errorf("error %v", err)
	}
}
