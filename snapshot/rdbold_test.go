package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/snapshot"
)

// rdbString is s as an RDB string of fewer than 16384 bytes.
func rdbString(s []byte) []byte {
	if len(s) < 64 {
		return append([]byte{byte(len(s))}, s...)
	}
	return append([]byte{0x40 | byte(len(s)>>8), byte(len(s))}, s...)
}

// ziplist encodes items, each shorter than 64 bytes, as a ziplist of
// strings.
func ziplist(items ...string) []byte {
	var entries []byte
	tail, prev := 10, 0
	for _, it := range items {
		tail = 10 + len(entries)
		e := append([]byte{byte(prev), byte(len(it))}, it...)
		entries = append(entries, e...)
		prev = len(e)
	}
	zl := binary.LittleEndian.AppendUint32(nil, uint32(10+len(entries)+1))
	zl = binary.LittleEndian.AppendUint32(zl, uint32(tail))
	zl = binary.LittleEndian.AppendUint16(zl, uint16(len(items)))
	return append(append(zl, entries...), 0xFF)
}

// zipmap encodes field-value pairs, each shorter than 254 bytes.
func zipmap(pairs ...string) []byte {
	zm := []byte{byte(len(pairs) / 2)}
	for i := 0; i < len(pairs); i += 2 {
		zm = append(zm, byte(len(pairs[i])))
		zm = append(zm, pairs[i]...)
		zm = append(zm, byte(len(pairs[i+1])), 0) // no free bytes
		zm = append(zm, pairs[i+1]...)
	}
	return append(zm, 0xFF)
}

// oldEncodingsRDB is an RDB of version 9 (Redis 5) holding the value
// encodings Redis 7 no longer writes, with a zero (unchecked) CRC64.
func oldEncodingsRDB() []byte {
	var b bytes.Buffer
	b.WriteString("REDIS0009")
	b.Write([]byte{0xFE, 0})
	rec := func(typ byte, key string, value ...[]byte) {
		b.WriteByte(typ)
		b.Write(rdbString([]byte(key)))
		for _, v := range value {
			b.Write(v)
		}
	}
	str := func(s string) []byte { return rdbString([]byte(s)) }
	rec(1, "old:linked-list", []byte{3}, str("a"), str("bb"), str("ccc"))
	rec(3, "old:zset", []byte{3}, str("m1"), []byte{3}, []byte("1.5"), str("m2"), []byte{254}, str("m3"), []byte{255})
	rec(9, "old:zipmap", rdbString(zipmap("f1", "v1", "f2", "value two")))
	rec(10, "old:ziplist-list", rdbString(ziplist("x", "yy", "zzz")))
	rec(12, "old:ziplist-zset", rdbString(ziplist("a", "1", "b", "2.5")))
	rec(13, "old:ziplist-hash", rdbString(ziplist("f1", "v1", "f2", "v2")))
	rec(14, "old:quicklist", []byte{2}, rdbString(ziplist("q1", "q2")), rdbString(ziplist("q3")))
	b.WriteByte(0xFF)
	b.Write(make([]byte, 8))
	return b.Bytes()
}

// value renders key's type and value in order.
func value(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	ctx := t.Context()
	typ := c.Type(ctx, key).Val()
	var v any
	switch typ {
	case "list":
		v = c.LRange(ctx, key, 0, -1).Val()
	case "zset":
		v = c.ZRangeWithScores(ctx, key, 0, -1).Val()
	case "hash":
		var fields []string
		for f, x := range c.HGetAll(ctx, key).Val() {
			fields = append(fields, f+"="+x)
		}
		slices.Sort(fields)
		v = fields
	}
	return fmt.Sprintf("%s %v", typ, v)
}

// TestRDBReaderOldEncodings reads an RDB of the encodings older Redis
// versions wrote (linked list, text-score zset, zipmap, ziplists,
// quicklist of ziplists): a real Redis 7 loads the file, the payloads the
// reader cuts are RESTOREd into another, and every key's value must
// match.
func TestRDBReaderOldEncodings(t *testing.T) {
	dir := t.TempDir()
	rdb := oldEncodingsRDB()
	if err := os.WriteFile(filepath.Join(dir, "old.rdb"), rdb, 0o600); err != nil {
		t.Fatal(err)
	}
	loaded := redistest.Start(t, redistest.WithArgs("--dir", dir, "--dbfilename", "old.rdb"))
	src := redis.NewClient(&redis.Options{Addr: loaded.Addr()})
	defer src.Close()
	dst := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	defer dst.Close()

	rd, err := snapshot.NewRDBReader(bytes.NewReader(rdb))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for {
		k, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.Key)
		if err := dst.Restore(t.Context(), k.Key, 0, string(k.Payload)).Err(); err != nil {
			t.Fatalf("RESTORE %s (type %d): %v", k.Key, k.Type, err)
		}
	}
	want := src.Keys(t.Context(), "*").Val()
	slices.Sort(keys)
	slices.Sort(want)
	if len(want) != 7 || !slices.Equal(keys, want) {
		t.Fatalf("reader read keys %q, Redis loaded %q; want the 7 of the file", keys, want)
	}
	for _, k := range keys {
		if got, want := value(t, dst, k), value(t, src, k); got != want {
			t.Errorf("key %s: restored %s, Redis loaded %s", k, got, want)
		}
	}
}
