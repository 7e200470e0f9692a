package pipelines

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := `
#include <core.p4>
typedef bit<48> mac_t; // a typedef
/* a block
   comment */
const bit<8> A = 0x1f;
const bit<16> B = 1_000;
header h_t {
    mac_t dst;   /* typedef'd */
    bit<4> v;
    bit<12> rest;
}`
	d, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	h := d.Headers["h_t"]
	if h.Bits() != 64 || len(h.Fields) != 3 || h.Fields[0] != (Field{"dst", 48}) {
		t.Errorf("header %+v", h)
	}
	if off, ok := h.Offset("rest"); !ok || off != 52 {
		t.Errorf("offset of rest %d, %v", off, ok)
	}
	if _, ok := h.Offset("none"); ok {
		t.Error("offset of a field that does not exist")
	}
	if d.Consts["A"] != (Const{"A", 8, 0x1f}) || d.Consts["B"].Value != 1000 {
		t.Errorf("consts %+v", d.Consts)
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown type", `header h { foo_t x; }`, `unknown type "foo_t"`},
		{"not a field", `header h { bit<8> x = 3; }`, "is not a field"},
		{"zero width", `header h { bit<0> x; }`, "width 0 outside"},
		{"too wide", `typedef bit<2048> t;`, "width 2048 outside"},
		{"const overflow", `const bit<4> C = 16;`, "does not fit bit<4>"},
		{"const too wide", `const bit<128> C = 1;`, "at most 64 supported"},
		{"field twice", `header h { bit<8> x; bit<8> x; }`, "field x declared twice"},
		{"name twice", `const bit<8> h = 1; header h { bit<8> x; }`, `"h" declared twice`},
		{"empty header", `header h { }`, "no fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// FuzzParse: any source parses or fails with an error, and every header
// parsed has fields whose widths add up.
func FuzzParse(f *testing.F) {
	f.Add(`header h { bit<8> a; bit<16> b; }`)
	f.Add(`typedef bit<48> m; const bit<8> X = 0xff; header e { m d; m s; bit<16> t; }`)
	f.Add(`/* unclosed header h { bit<8>`)
	f.Fuzz(func(t *testing.T, src string) {
		d, err := Parse(src)
		if err != nil {
			return
		}
		for _, h := range d.Headers {
			n := 0
			for _, fd := range h.Fields {
				if fd.Bits < 1 || fd.Bits > maxBits {
					t.Fatalf("field %s of %d bits", fd.Name, fd.Bits)
				}
				n += fd.Bits
			}
			if n != h.Bits() {
				t.Fatalf("header %s: %d bits, fields %d", h.Name, h.Bits(), n)
			}
		}
	})
}
