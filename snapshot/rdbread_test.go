package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/snapshot"
)

// readAllKeys reads every key of the RDB at path that keep keeps.
func readAllKeys(t *testing.T, path string, opts ...snapshot.RDBReaderOption) (map[string]snapshot.RDBKey, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := snapshot.NewRDBReader(f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]snapshot.RDBKey{}
	for {
		k, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return got, rd.Version()
		}
		if err != nil {
			t.Fatal(err)
		}
		k.Payload = bytes.Clone(k.Payload)
		got[k.Key] = k
	}
}

// TestRDBReaderMatchesDump writes every type and encoding into a real
// Redis, takes its RDB, and checks that the payload the reader cuts for
// each key of database 0 is byte for byte the one DUMP returns, that the
// key in database 1 is left out, and that each TTL is read.
func TestRDBReaderMatchesDump(t *testing.T) {
	srv, c := everyTypeServer(t)
	before := time.Now()
	keys := writeEveryType(t, c)
	path := takeRDB(t, srv)
	got, version := readAllKeys(t, path, snapshot.WithKeep(func(db uint64, _ string) bool { return db == 0 }))

	gotKeys := slices.Sorted(func(yield func(string) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	})
	slices.Sort(keys)
	if !slices.Equal(gotKeys, keys) {
		t.Fatalf("keys read %q, want database 0's %q", gotKeys, keys)
	}
	types := map[byte]bool{}
	for _, key := range keys {
		k := got[key]
		types[k.Type] = true
		dump, err := c.Dump(t.Context(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(k.Payload, []byte(dump)) {
			t.Errorf("key %q (type %d): payload of %d bytes differs from DUMP's %d bytes", key, k.Type, len(k.Payload), len(dump))
		}
		if v := int(binary.LittleEndian.Uint16(k.Payload[len(k.Payload)-10:])); v != version {
			t.Errorf("key %q: payload version %d, file version %d", key, v, version)
		}
		switch {
		case strings.HasPrefix(key, "ttl:"):
			ttl := map[string]time.Duration{"ttl:1h": time.Hour, "ttl:3h": 3 * time.Hour}[key]
			if k.ExpireAt.Before(before.Add(ttl).Truncate(time.Millisecond)) || k.ExpireAt.After(time.Now().Add(ttl)) {
				t.Errorf("key %q expires at %v, want %v after the write", key, k.ExpireAt, ttl)
			}
		case !k.ExpireAt.IsZero():
			t.Errorf("key %q expires at %v, want no TTL", key, k.ExpireAt)
		}
	}
	// Redis 7.0 writes these: string, set, zset2, hash, intset, hash and
	// zset listpacks, quicklist 2, stream listpacks 2 (7.2 adds set
	// listpacks and stream listpacks 3).
	for _, typ := range []byte{0, 2, 4, 5, 11, 16, 17, 18, 19} {
		if !types[typ] && (version >= 11 || typ != 20) {
			t.Errorf("no key of RDB type %d in the file", typ)
		}
	}

	all, _ := readAllKeys(t, path)
	if k, ok := all["db1:key"]; !ok || k.DB != 1 {
		t.Errorf("without a keep function, db1:key read as %+v, %v; want it in database 1", k, ok)
	}
}

// moduleRDB is an RDB with a module value of type "modtype01" in db 0
// and a string after it.
func moduleRDB(t *testing.T, db byte) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("REDIS0010")
	b.Write([]byte{0xFE, db, 7, 1, 'm'})
	id := moduleID("modtype01", 1)
	b.WriteByte(0x81)
	b.Write(binary.BigEndian.AppendUint64(nil, id))
	// The annotated value: a uint, a string, a double, EOF.
	b.Write([]byte{2, 5, 5, 2, 'h', 'i', 4})
	b.Write(make([]byte, 8))
	b.Write([]byte{0, 0, 1, 's', 1, 'v', 0xFF})
	b.Write(make([]byte, 8))
	return b.Bytes()
}

// moduleID encodes a 9-character module type name and an encoding
// version as Redis does.
func moduleID(name string, encver uint64) uint64 {
	const charset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var id uint64
	for _, c := range []byte(name) {
		id = id<<6 | uint64(strings.IndexByte(charset, c))
	}
	return id<<10 | encver
}

// TestRDBReaderRefusesModuleValues refuses a module value it would
// return, naming the module type, and passes over one it leaves out.
func TestRDBReaderRefusesModuleValues(t *testing.T) {
	rd, err := snapshot.NewRDBReader(bytes.NewReader(moduleRDB(t, 0)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = rd.Next()
	if !errors.Is(err, snapshot.ErrUnsupported) || !strings.Contains(err.Error(), "module type modtype01: use --redis-server") {
		t.Fatalf("Next: %v; want ErrUnsupported naming module type modtype01", err)
	}

	rd, err = snapshot.NewRDBReader(bytes.NewReader(moduleRDB(t, 1)), snapshot.WithKeep(func(db uint64, _ string) bool { return db == 0 }))
	if err != nil {
		t.Fatal(err)
	}
	if k, err := rd.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("Next: %+v, %v; want the module value in db 1 passed over, then io.EOF", k, err)
	}
}

// TestRDBReaderRefusesMalformed checks errors on cut and changed files.
func TestRDBReaderRefusesMalformed(t *testing.T) {
	good := moduleRDB(t, 1)
	for _, tc := range []struct {
		name string
		rdb  []byte
		want string
	}{
		{"truncated in a value", good[:20], "truncated"},
		{"no footer", good[:len(good)-4], "truncated"},
		{"unknown record", append(slices.Clone(good[:9]), 0xF0), "unknown record type 240"},
		{"newer version", append([]byte("REDIS0013"), good[9:]...), "RDB version 13"},
		{"no magic", append([]byte("RADIS0010"), good[9:]...), "no REDIS magic"},
		{"long key", append([]byte("REDIS0010\x00\x80\x7f\xff\xff\xff"), good[9:]...), "the limit is 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := readAll(bytes.NewReader(tc.rdb), snapshot.WithMaxPayload(1024),
				snapshot.WithKeep(func(db uint64, _ string) bool { return db == 0 }))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("read: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}

// readAll reads every key of r.
func readAll(r io.Reader, opts ...snapshot.RDBReaderOption) error {
	rd, err := snapshot.NewRDBReader(r, opts...)
	if err != nil {
		return err
	}
	for {
		if _, err := rd.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// FuzzReadRDB reads arbitrary bytes as an RDB: no panic, and no payload
// or key above the bound, whatever the lengths in the input say.
func FuzzReadRDB(f *testing.F) {
	seeds, err := filepath.Glob("testdata/*.rdb")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seed RDB in testdata: %v", err)
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(oldEncodingsRDB())
	f.Add([]byte("REDIS0011\xfe\x00\x00\x81\xff\xff\xff\xff\xff\xff\xff\xff"))
	const bound = 1 << 16
	f.Fuzz(func(t *testing.T, b []byte) {
		rd, err := snapshot.NewRDBReader(bytes.NewReader(b), snapshot.WithMaxPayload(bound))
		if err != nil {
			return
		}
		for range len(b) + 1 { // each key takes at least one byte
			k, err := rd.Next()
			if err != nil {
				return
			}
			if len(k.Payload) > bound+10 || len(k.Key) > bound {
				t.Fatalf("key of %d bytes, payload of %d bytes: above the bound %d", len(k.Key), len(k.Payload), bound)
			}
		}
		t.Fatal("Next returned more keys than the input has bytes")
	})
}
