package pipelines

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/distcache/distcache/dataplane/wire"
)

var update = flag.Bool("update", false, "rewrite the P4Info files from the P4 declarations")

func parseProgram(t *testing.T, program string) Decls {
	t.Helper()
	src, err := fs.Sub(Sources, "p4src")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseProgram(src, program)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestP4InfoMatchesTheSources derives each program's P4Info from its P4
// declarations — tables with their match fields (ids, names, widths,
// kinds), action references and sizes, actions with their parameters,
// registers, counters, digests and controller headers — and compares it
// with the P4Info file the controller and the software switch load. With
// -update it writes the files instead.
func TestP4InfoMatchesTheSources(t *testing.T) {
	for _, program := range Programs {
		t.Run(program, func(t *testing.T) {
			want, err := parseProgram(t, program).P4Info(Arch(program))
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				writeP4Info(t, "p4src/"+P4InfoPath(program), want)
				return
			}
			got, err := ProgramP4Info(program)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("%s drifted from %s (-sources +file; go test -update rewrites it):\n%s", P4InfoPath(program), program, diff)
			}
		})
	}
}

var spaces = regexp.MustCompile(`([^ \n])  +`)

func writeP4Info(t *testing.T, path string, info *p4configv1.P4Info) {
	t.Helper()
	b, err := prototext.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	// prototext varies its spacing on purpose; the file is kept tidy.
	b = spaces.ReplaceAll(b, []byte("$1 "))
	b = bytes.ReplaceAll(b, []byte(": {"), []byte(" {"))
	header := "# P4Info of " + strings.TrimPrefix(path, "p4src/") + ": kept with the P4 source and checked against\n" +
		"# its declarations by TestP4InfoMatchesTheSources (stratum_pipelines/README.md).\n"
	if err := os.WriteFile(path, append([]byte(header), b...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestIDsArePrefixedByKind: every P4Runtime id carries its kind in its
// top byte (P4Ids.Prefix), and no two objects of a program share one.
func TestIDsArePrefixedByKind(t *testing.T) {
	for _, program := range Programs {
		t.Run(program, func(t *testing.T) {
			info, err := ProgramP4Info(program)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[uint32]string{}
			check := func(kind p4configv1.P4Ids_Prefix, p *p4configv1.Preamble) {
				if p.Id>>24 != uint32(kind) {
					t.Errorf("%s %s has id %#x, not of prefix %#x", kind, p.Name, p.Id, uint32(kind))
				}
				if other, ok := seen[p.Id]; ok {
					t.Errorf("id %#x of %s is also %s's", p.Id, p.Name, other)
				}
				seen[p.Id] = p.Name
			}
			for _, x := range info.Tables {
				check(p4configv1.P4Ids_TABLE, x.Preamble)
			}
			for _, x := range info.Actions {
				check(p4configv1.P4Ids_ACTION, x.Preamble)
			}
			for _, x := range info.Registers {
				check(p4configv1.P4Ids_REGISTER, x.Preamble)
			}
			for _, x := range info.Counters {
				check(p4configv1.P4Ids_COUNTER, x.Preamble)
			}
			for _, x := range info.Digests {
				check(p4configv1.P4Ids_DIGEST, x.Preamble)
			}
			for _, x := range info.ControllerPacketMetadata {
				check(p4configv1.P4Ids_CONTROLLER_HEADER, x.Preamble)
			}
		})
	}
}

// TestParsedSizesHoldWhatASwitchCaches: the header stacks and value
// registers hold exactly the largest key and value wire.SwitchCacheable
// admits, and the value words cover every cache slot.
func TestParsedSizesHoldWhatASwitchCaches(t *testing.T) {
	d := parseProgram(t, "v1model/cache_switch.p4")
	stack := map[string]int{}
	for _, m := range d.Structs["headers_t"].Members {
		stack[m.Name] = m.Stack
	}
	word, tail := d.Headers["word_h"].Bits()/8, d.Headers["byte_h"].Bits()/8
	if word != 8 || tail != 1 {
		t.Fatalf("word_h is %d bytes, byte_h %d", word, tail)
	}
	if got := stack["key_words"]*word + stack["key_tail"]*tail; got != wire.MaxSwitchKeyLen+word-1 {
		t.Errorf("the key stacks hold %d bytes, want the %d of the largest key and up to %d of a tail",
			got, wire.MaxSwitchKeyLen, word-1)
	}
	if stack["key_words"]*word != wire.MaxSwitchKeyLen || stack["value_words"]*word != wire.MaxSwitchValueLen {
		t.Errorf("key words %d, value words %d: want %d and %d bytes", stack["key_words"], stack["value_words"],
			wire.MaxSwitchKeyLen, wire.MaxSwitchValueLen)
	}
	if stack["key_tail"] != word-1 || stack["value_tail"] != word-1 {
		t.Errorf("tails of %d and %d bytes, want %d", stack["key_tail"], stack["value_tail"], word-1)
	}
	c := d.Consts
	if c["VALUE_WORDS_PER_SLOT"].Value*8 != wire.MaxSwitchValueLen {
		t.Errorf("VALUE_WORDS_PER_SLOT %d words hold no %d-byte value", c["VALUE_WORDS_PER_SLOT"].Value, wire.MaxSwitchValueLen)
	}
	if c["VALUE_WORDS"].Value != c["CACHE_SLOTS"].Value*c["VALUE_WORDS_PER_SLOT"].Value {
		t.Errorf("VALUE_WORDS %d, want CACHE_SLOTS × VALUE_WORDS_PER_SLOT", c["VALUE_WORDS"].Value)
	}
}

func TestObjectIDs(t *testing.T) {
	info, err := ProgramP4Info("v1model/cache_switch.p4")
	if err != nil {
		t.Fatal(err)
	}
	var lookup, hits uint32
	if err := ObjectIDs(info, IDRef{&lookup, "cache_lookup"}, IDRef{&hits, "cache_hits"}); err != nil {
		t.Fatal(err)
	}
	if want, _ := ObjectID(info, "cache_lookup"); lookup != want || lookup == 0 {
		t.Errorf("cache_lookup = %d, want %d", lookup, want)
	}
	if want, _ := ObjectID(info, "cache_hits"); hits != want || hits == 0 {
		t.Errorf("cache_hits = %d, want %d", hits, want)
	}
	var none uint32
	err = ObjectIDs(info, IDRef{&lookup, "cache_lookup"}, IDRef{&none, "no_such_table"})
	if err == nil || err.Error() != "its P4Info has no no_such_table" {
		t.Fatalf("err = %v, want the missing name", err)
	}
}
