package pipeline_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/distcache/distcache/fabric/pipeline"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// keptP4Info is the kept P4Info file of pipeline name, as a user would
// supply p4c's.
func keptP4Info(t *testing.T, name string) []byte {
	t.Helper()
	b, err := fs.ReadFile(pipelines.Sources, "p4src/"+pipelines.P4InfoPath(pipelines.Pipelines[name]))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuiltin(t *testing.T) {
	for _, name := range pipelines.PipelineNames() {
		t.Run(name, func(t *testing.T) {
			p, err := pipeline.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pipelines.ProgramP4Info(pipelines.Pipelines[name])
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(p.Info, want) || len(p.DeviceConfig) != 0 || p.Compiled {
				t.Errorf("Builtin(%s) is not the kept P4Info without a device config", name)
			}
			if p.Cookie != pipeline.Cookie(keptP4Info(t, name), nil) {
				t.Errorf("cookie %s is not the hash of the kept P4Info", p.CookieHex())
			}
		})
	}
	if _, err := pipeline.Builtin("distcache-p4-14"); !errors.Is(err, pipeline.ErrUnknownPipeline) {
		t.Errorf("unknown pipeline: %v", err)
	}
}

func TestCompiled(t *testing.T) {
	text := keptP4Info(t, "distcache-v1model")
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(text, info); err != nil {
		t.Fatal(err)
	}
	binary, err := proto.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	renamed := proto.Clone(info).(*p4configv1.P4Info)
	renamed.Tables[3].Preamble.Name = "lookup"
	renamedText, err := prototext.Marshal(renamed)
	if err != nil {
		t.Fatal(err)
	}
	device := []byte(`{"program": "cache_switch.p4", "__meta__": {"version": [2, 23]}}`)
	tests := []struct {
		name    string
		p4info  []byte
		pipe    string
		wantErr string
		is      error
	}{
		{name: "text, as p4c writes it", p4info: text, pipe: "distcache-v1model"},
		{name: "binary", p4info: binary, pipe: "distcache-v1model"},
		{name: "renamed table", p4info: renamedText, pipe: "distcache-v1model", wantErr: "the P4Info is not pipeline distcache-v1model's: table cache_lookup (id 0x2000004) missing"},
		{name: "v1model build for the Tofino pipeline", p4info: text, pipe: "distcache-tna", wantErr: `architecture "v1model", want "tna"`},
		{name: "not a P4Info", p4info: []byte("tables { preamble { id: oops"), pipe: "distcache-v1model", is: pipeline.ErrUnreadable},
		{name: "empty", p4info: nil, pipe: "distcache-v1model", is: pipeline.ErrUnreadable},
		{name: "unknown pipeline", p4info: text, pipe: "distcache-p4-14", is: pipeline.ErrUnknownPipeline},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pipeline.Compiled(tc.pipe, tc.p4info, device)
			var mismatch *pipeline.MismatchError
			switch {
			case tc.wantErr != "":
				if !errors.As(err, &mismatch) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want a mismatch naming %q", err, tc.wantErr)
				}
			case tc.is != nil:
				if !errors.Is(err, tc.is) {
					t.Fatalf("error %v, want %v", err, tc.is)
				}
			case err != nil:
				t.Fatal(err)
			default:
				if !proto.Equal(p.Info, info) || string(p.DeviceConfig) != string(device) || !p.Compiled ||
					p.Cookie != pipeline.Cookie(tc.p4info, device) {
					t.Errorf("Compiled = %+v", p)
				}
			}
		})
	}
}

func TestFromFiles(t *testing.T) {
	dir := t.TempDir()
	p4info, device := filepath.Join(dir, "p4info.txt"), filepath.Join(dir, "device_config.bin")
	if err := os.WriteFile(p4info, keptP4Info(t, "distcache-v1model"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.FromFiles("distcache-v1model", p4info, device); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing device config: %v", err)
	}
	if err := os.WriteFile(device, []byte{0, 1, 2, 0xff}, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.FromFiles("distcache-v1model", p4info, device)
	if err != nil || string(p.DeviceConfig) != "\x00\x01\x02\xff" {
		t.Fatalf("FromFiles = %+v, %v", p, err)
	}
}

// TestCookie pins the cookie's definition: a controller recognises a
// build by it, so it must not change between releases. The values were
// computed apart from the Go code, with Python's hashlib:
// sha256(b"distcache pipeline cookie v1\n" + struct.pack(">Q", len(p4info))
// + p4info + device), the first 8 bytes big endian.
func TestCookie(t *testing.T) {
	tests := []struct {
		p4info, device string
		want           uint64
	}{
		{"", "", 0xd27d92f709ec805c},
		{"pkg_info {}", "", 0x29e6c7c053c5b004},
		{"pkg_info {}", "bmv2", 0x6a9c52ed4aec312d},
		// The same bytes split otherwise: another build.
		{"pkg_info {}b", "mv2", 0xe2095c489f305b28},
	}
	seen := map[uint64]bool{}
	for _, tc := range tests {
		got := pipeline.Cookie([]byte(tc.p4info), []byte(tc.device))
		if got != tc.want {
			t.Errorf("Cookie(%q, %q) = %#x, want %#x", tc.p4info, tc.device, got, tc.want)
		}
		if seen[got] {
			t.Errorf("Cookie(%q, %q) = %#x, as another build's", tc.p4info, tc.device, got)
		}
		seen[got] = true
	}
}
