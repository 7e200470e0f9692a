package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ManifestFile is the manifest's name in a snapshot set's directory.
const ManifestFile = "manifest.json"

// FormatVersion is the version of the manifest's schema.
const FormatVersion = 1

// Manifest describes a snapshot set.
type Manifest struct {
	Format  int    `json:"format"`
	Cluster string `json:"cluster"`
	// Racks and ShardsPerRack are the source cluster's storage shape.
	Racks         int `json:"racks"`
	ShardsPerRack int `json:"shardsPerRack"`
	// Started is when the first shard's copy started, Finished when the
	// last one ended (UTC).
	Started  time.Time   `json:"started"`
	Finished time.Time   `json:"finished"`
	Shards   []ShardFile `json:"shards"`
}

// ShardFile is one shard's RDB in a set.
type ShardFile struct {
	// Name is the storage shard's name, <cluster>-rack-<r>-<s>.
	Name  string `json:"name"`
	Rack  int    `json:"rack"`
	Shard int    `json:"shard"`
	// File is the RDB's name in the set's directory.
	File   string `json:"file"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// RedisVersion is the source Redis's redis_version.
	RedisVersion string `json:"redisVersion"`
	RDBInfo
}

// shardFileName is the RDB file of shard name.
func shardFileName(name string) string { return name + ".rdb" }

// writeManifest writes m into dir, last of a set.
func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the manifest: %w", err)
	}
	tmp := filepath.Join(dir, ManifestFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("cannot write the manifest: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ManifestFile)); err != nil {
		return fmt.Errorf("cannot write the manifest: %w", err)
	}
	return nil
}

// ReadManifest reads the manifest of the set in dir, without checking its
// files.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, fmt.Errorf("cannot read the manifest of snapshot set %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("cannot decode the manifest of snapshot set %s: %w", dir, err)
	}
	if m.Format != FormatVersion {
		return m, fmt.Errorf("cannot use snapshot set %s: manifest format %d, this version reads %d", dir, m.Format, FormatVersion)
	}
	if len(m.Shards) != m.Racks*m.ShardsPerRack || len(m.Shards) == 0 {
		return m, fmt.Errorf("cannot use snapshot set %s: %d shard files for %d racks × %d shards", dir, len(m.Shards), m.Racks, m.ShardsPerRack)
	}
	for _, s := range m.Shards {
		if s.File != filepath.Base(s.File) || s.File == "" || s.File == ManifestFile {
			return m, fmt.Errorf("cannot use snapshot set %s: bad file name %q", dir, s.File)
		}
	}
	return m, nil
}

// VerifySet reads the manifest of the set in dir and checks every shard's
// file: its size and SHA-256 against the manifest, and the RDB itself
// (VerifyRDB).
func VerifySet(dir string) (Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return m, err
	}
	for _, s := range m.Shards {
		if err := verifyShardFile(filepath.Join(dir, s.File), s); err != nil {
			return m, fmt.Errorf("cannot use snapshot set %s: shard %s: %w", dir, s.Name, err)
		}
	}
	return m, nil
}

func verifyShardFile(path string, s ShardFile) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot open its RDB: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("cannot read its RDB: %w", err)
	}
	if n != s.Size {
		return fmt.Errorf("%w: %s has %d bytes, the manifest says %d", ErrCorrupt, s.File, n, s.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 {
		return fmt.Errorf("%w: %s has SHA-256 %s, the manifest says %s", ErrCorrupt, s.File, got, s.SHA256)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("cannot read its RDB: %w", err)
	}
	if _, err := VerifyRDB(f); err != nil {
		return fmt.Errorf("%s: %w", s.File, err)
	}
	return nil
}

// partialSuffix marks a set's directory while it is written.
const partialSuffix = ".partial"

// SetName is the directory name of cluster's set taken at t:
// <cluster>-<UTC time>, which sorts by time.
func SetName(cluster string, t time.Time) string {
	return cluster + "-" + t.UTC().Format("20060102T150405Z")
}

// Sets lists the complete snapshot sets of cluster under root (those with
// a readable manifest naming cluster), oldest first.
func Sets(root, cluster string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list snapshot sets in %s: %w", root, err)
	}
	type set struct {
		dir string
		at  time.Time
	}
	var sets []set
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), cluster+"-") || strings.HasSuffix(e.Name(), partialSuffix) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		m, err := ReadManifest(dir)
		if err != nil || m.Cluster != cluster {
			continue
		}
		sets = append(sets, set{dir, m.Finished})
	}
	slices.SortStableFunc(sets, func(a, b set) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.dir, b.dir)
	})
	out := make([]string, len(sets))
	for i, s := range sets {
		out[i] = s.dir
	}
	return out, nil
}

// Prune deletes the oldest complete sets of cluster under root, keeping
// the newest keep, and returns the directories it deleted.
func Prune(root, cluster string, keep int) ([]string, error) {
	sets, err := Sets(root, cluster)
	if err != nil || keep < 1 || len(sets) <= keep {
		return nil, err
	}
	old := sets[:len(sets)-keep]
	for i, dir := range old {
		if err := os.RemoveAll(dir); err != nil {
			return old[:i], fmt.Errorf("cannot delete snapshot set %s: %w", dir, err)
		}
	}
	return old, nil
}
