package pipelines

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Sources are the P4 sources and P4Info files of the pipelines.
//
//go:embed p4src
var Sources embed.FS

// Programs are the main files of the pipelines under p4src, by
// architecture and role; each has its P4Info next to it
// (P4InfoPath).
var Programs = []string{
	"v1model/cache_switch.p4",
	"v1model/client_leaf.p4",
	"tna/cache_switch.p4",
	"tna/client_leaf.p4",
}

// Pipelines are the pipelines a SwitchFabric may name (spec.pipeline) and
// `distcache fabric --pipeline` takes, and the cache switch program each
// loads onto the spine and storage-leaf switches.
var Pipelines = map[string]string{
	"distcache-v1model": "v1model/cache_switch.p4",
	"distcache-tna":     "tna/cache_switch.p4",
}

// ClientLeafPipelines are the client leaf programs of Pipelines, by
// pipeline name: the program loaded onto a fabric's client-leaf switches,
// for the same target as the pipeline's cache switch program.
var ClientLeafPipelines = map[string]string{
	"distcache-v1model": "v1model/client_leaf.p4",
	"distcache-tna":     "tna/client_leaf.p4",
}

// PipelineNames are the names of Pipelines, sorted.
func PipelineNames() []string {
	return slices.Sorted(maps.Keys(Pipelines))
}

// Arch is the architecture program is written for, the directory it is
// in under p4src: "v1model" (stratum-bmv2) or "tna" (Tofino).
func Arch(program string) string {
	arch, _, _ := strings.Cut(path.Clean(program), "/")
	return arch
}

// P4InfoPath is the path of program's P4Info text file.
func P4InfoPath(program string) string {
	return strings.TrimSuffix(program, ".p4") + ".p4info.txt"
}

var includeLine = regexp.MustCompile(`(?m)^[ \t]*#include\s+"([^"]+)"`)

// ReadProgram reads the P4 program at name in fsys with the files it
// includes by relative path ("…"), each once, as an include guard does;
// system includes (<core.p4>, <v1model.p4>) are left out.
func ReadProgram(fsys fs.FS, name string) (string, error) {
	var b strings.Builder
	seen := map[string]bool{}
	var read func(name string, depth int) error
	read = func(name string, depth int) error {
		if seen[name] {
			return nil
		}
		if depth > 16 {
			return fmt.Errorf("cannot read %s: includes nest deeper than 16", name)
		}
		seen[name] = true
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("cannot read P4 source: %w", err)
		}
		for _, m := range includeLine.FindAllStringSubmatch(string(src), -1) {
			if err := read(path.Join(path.Dir(name), m[1]), depth+1); err != nil {
				return err
			}
		}
		b.Write(src)
		b.WriteByte('\n')
		return nil
	}
	if err := read(path.Clean(name), 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// ParseProgram reads and parses the program at name in fsys.
func ParseProgram(fsys fs.FS, name string) (Decls, error) {
	src, err := ReadProgram(fsys, name)
	if err != nil {
		return Decls{}, err
	}
	d, err := Parse(src)
	if err != nil {
		return d, fmt.Errorf("cannot parse %s: %w", name, err)
	}
	return d, nil
}
