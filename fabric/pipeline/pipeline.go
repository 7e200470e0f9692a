// Package pipeline is what a fabric's controller pushes to its switches:
// a P4Info, the target's compiled program (the device config: bmv2's JSON
// for stratum-bmv2, the packed Tofino binary and context for stratum-bf)
// and the cookie that names both.
//
// Without a compiled program, a pipeline is the project's own: the
// P4Info kept in stratum_pipelines and no device config, which the
// software switch needs (Builtin). A compiled one comes from the user —
// no P4 compiler runs here — as files, a ConfigMap or Secret, or an OCI
// artefact (Pull); Compiled checks its P4Info against the kept one
// (pipelines.CompareP4Info) before anything is pushed, and a mismatch is
// a *MismatchError that lists the differences.
//
// The cookie (Cookie) is a content hash of the P4Info file as supplied
// and the device config: the same build has the same cookie in every
// controller and across restarts, so a controller can tell from a
// switch's cookie whether it already runs the build.
package pipeline

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// Default names of the P4Info and the device config in a source: the
// keys of a ConfigMap or Secret, the file names (OCI layer titles) of an
// artefact.
const (
	DefaultP4InfoKey       = "p4info.txt"
	DefaultDeviceConfigKey = "device_config.bin"
)

// ErrUnknownPipeline is wrapped when a name is none of pipelines.Pipelines.
var ErrUnknownPipeline = errors.New("unknown pipeline")

// ErrUnreadable is wrapped when a supplied P4Info cannot be parsed.
var ErrUnreadable = errors.New("unreadable P4Info")

// Pipeline is one build of a cache switch program.
type Pipeline struct {
	// Name is the pipeline, one of pipelines.Pipelines.
	Name string
	// Program is the program of stratum_pipelines it builds.
	Program string
	// Info is its P4Info: what the controller programs the switch by.
	Info *p4configv1.P4Info
	// DeviceConfig is the target's compiled program; empty for the
	// software switch.
	DeviceConfig []byte
	// Cookie names Info and DeviceConfig (Cookie).
	Cookie uint64
	// Compiled says the build was supplied (Compiled), not the project's
	// own (Builtin).
	Compiled bool
}

// CookieHex is the cookie as status and logs show it.
func (p *Pipeline) CookieHex() string { return fmt.Sprintf("%#016x", p.Cookie) }

// SameP4Info says whether p and o have the same P4Info: a switch running
// one can take the other's device config without losing its state.
func (p *Pipeline) SameP4Info(o *Pipeline) bool { return proto.Equal(p.Info, o.Info) }

// Builtin is the project's pipeline name: its kept P4Info and no device
// config.
func Builtin(name string) (*Pipeline, error) {
	program, err := programOf(name)
	if err != nil {
		return nil, err
	}
	raw, err := fs.ReadFile(pipelines.Sources, "p4src/"+pipelines.P4InfoPath(program))
	if err != nil {
		return nil, fmt.Errorf("cannot load pipeline %s: %w", name, err)
	}
	info, err := parseP4Info(raw)
	if err != nil {
		return nil, fmt.Errorf("cannot load pipeline %s: %w", name, err)
	}
	return &Pipeline{Name: name, Program: program, Info: info, Cookie: Cookie(raw, nil)}, nil
}

// MismatchError is a compiled program whose P4Info is not the one the
// controller programs.
type MismatchError struct {
	// Pipeline is the pipeline the build was checked against.
	Pipeline string
	// Differences are pipelines.CompareP4Info's.
	Differences []string
}

func (e *MismatchError) Error() string {
	const shown = 10
	d := e.Differences
	more := ""
	if len(d) > shown {
		d, more = d[:shown], fmt.Sprintf("; and %d more", len(d)-shown)
	}
	return fmt.Sprintf("the P4Info is not pipeline %s's: %s%s", e.Pipeline, strings.Join(d, "; "), more)
}

// Compiled is a build of pipeline name: p4info is its P4Info in protobuf
// text format (p4c's --p4runtime-files *.txt) or binary (*.bin), and
// deviceConfig the target's compiled program. The P4Info must be the
// kept one's in everything the controller relies on
// (pipelines.CompareP4Info), else the error is a *MismatchError.
func Compiled(name string, p4info, deviceConfig []byte) (*Pipeline, error) {
	program, err := programOf(name)
	if err != nil {
		return nil, err
	}
	kept, err := pipelines.ProgramP4Info(program)
	if err != nil {
		return nil, fmt.Errorf("cannot load pipeline %s: %w", name, err)
	}
	info, err := parseP4Info(p4info)
	if err != nil {
		return nil, err
	}
	if d := pipelines.CompareP4Info(kept, info); len(d) > 0 {
		return nil, &MismatchError{Pipeline: name, Differences: d}
	}
	return &Pipeline{Name: name, Program: program, Info: info, DeviceConfig: deviceConfig,
		Cookie: Cookie(p4info, deviceConfig), Compiled: true}, nil
}

// FromFiles is Compiled of the files at p4infoPath and deviceConfigPath.
func FromFiles(name, p4infoPath, deviceConfigPath string) (*Pipeline, error) {
	p4info, err := os.ReadFile(p4infoPath)
	if err != nil {
		return nil, fmt.Errorf("cannot read the P4Info: %w", err)
	}
	dc, err := os.ReadFile(deviceConfigPath)
	if err != nil {
		return nil, fmt.Errorf("cannot read the device config: %w", err)
	}
	p, err := Compiled(name, p4info, dc)
	if err != nil {
		return nil, fmt.Errorf("cannot use %s: %w", p4infoPath, err)
	}
	return p, nil
}

func programOf(name string) (string, error) {
	program, ok := pipelines.Pipelines[name]
	if !ok {
		return "", fmt.Errorf("pipeline %q is not one of %s: %w", name, strings.Join(pipelines.PipelineNames(), ", "), ErrUnknownPipeline)
	}
	return program, nil
}

// parseP4Info reads a P4Info in protobuf text format or, failing that,
// binary format.
func parseP4Info(b []byte) (*p4configv1.P4Info, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("the P4Info is empty: %w", ErrUnreadable)
	}
	info := &p4configv1.P4Info{}
	textErr := prototext.Unmarshal(b, info)
	if textErr == nil {
		return info, nil
	}
	info = &p4configv1.P4Info{}
	if err := proto.Unmarshal(b, info); err != nil || len(info.GetTables()) == 0 {
		return nil, fmt.Errorf("cannot parse the P4Info as protobuf text (%v) or binary: %w", textErr, ErrUnreadable)
	}
	return info, nil
}

// cookieDomain separates the cookie's hash from any other use of SHA-256.
const cookieDomain = "distcache pipeline cookie v1\n"

// Cookie is the P4Runtime cookie of a build: the first 8 bytes, big
// endian, of SHA-256 over "distcache pipeline cookie v1\n", the P4Info's
// length as 8 bytes big endian, the P4Info file's bytes as supplied and
// the device config's bytes. It is never 0.
func Cookie(p4info, deviceConfig []byte) uint64 {
	h := sha256.New()
	h.Write([]byte(cookieDomain))
	_ = binary.Write(h, binary.BigEndian, uint64(len(p4info)))
	h.Write(p4info)
	h.Write(deviceConfig)
	c := binary.BigEndian.Uint64(h.Sum(nil))
	if c == 0 {
		c = 1
	}
	return c
}
