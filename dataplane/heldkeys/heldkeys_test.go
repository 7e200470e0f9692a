package heldkeys_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// heldRedis starts a Redis whose set of held keys has "held", of value 7.
func heldRedis(t *testing.T) (*redis.Client, context.Context) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	if err := rdb.SAdd(ctx, heldkeys.Key, "held").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "held", "7", 0).Err(); err != nil {
		t.Fatal(err)
	}
	return rdb, ctx
}

// TestScripts runs the direct writes in a real Redis: a key not in the
// set is written (SET answers OK, INCRBY the new value, or Redis's error
// for a value that is not an integer); a key in the set is left alone and
// the script answers nil.
func TestScripts(t *testing.T) {
	rdb, ctx := heldRedis(t)
	if err := rdb.Set(ctx, "text", "abc", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		script  *redis.Script
		key     string
		arg     any
		want    any
		wantErr string // "nil": redis.Nil
		value   string // the key's value after
	}{
		{name: "SET of a free key", script: heldkeys.Set, key: "free", arg: "v", want: "OK", value: "v"},
		{name: "SET of a held key", script: heldkeys.Set, key: "held", arg: "v", wantErr: "nil", value: "7"},
		{name: "INCRBY of a free key", script: heldkeys.IncrBy, key: "counter", arg: 5, want: int64(5), value: "5"},
		{name: "INCRBY of a held key", script: heldkeys.IncrBy, key: "held", arg: 5, wantErr: "nil", value: "7"},
		{name: "INCRBY of text", script: heldkeys.IncrBy, key: "text", arg: 1, wantErr: "not an integer", value: "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.script.Run(ctx, rdb, []string{tt.key, heldkeys.Key}, tt.arg).Result()
			switch {
			case tt.wantErr == "nil" && !errors.Is(err, redis.Nil):
				t.Fatalf("got %v, %v; want nil", got, err)
			case tt.wantErr != "" && tt.wantErr != "nil" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, %v; want an error with %q", got, err, tt.wantErr)
			case tt.wantErr == "" && (err != nil || got != tt.want):
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
			if v, err := rdb.Get(ctx, tt.key).Result(); err != nil || v != tt.value {
				t.Fatalf("%s = %q, %v; want %q", tt.key, v, err, tt.value)
			}
		})
	}
}

// TestSetMany runs the direct SET of several keys in a real Redis: each
// key not in the set is written, each in it left alone, and the answer
// says which, in order; a key named twice ends with its last value. With
// the set's key of the wrong type every write is refused, none made, and
// the answer carries Redis's error.
func TestSetMany(t *testing.T) {
	rdb, ctx := heldRedis(t)
	keys := []string{heldkeys.Key, "a", "held", "b", "a"}
	got, err := heldkeys.SetMany.Run(ctx, rdb, keys, "1", "2", "3", "4").Result()
	if err != nil || got != "1011" {
		t.Fatalf("got %v, %v; want 1011", got, err)
	}
	for key, want := range map[string]string{"a": "4", "held": "7", "b": "3"} {
		if v, err := rdb.Get(ctx, key).Result(); err != nil || v != want {
			t.Fatalf("%s = %q, %v; want %q", key, v, err, want)
		}
	}

	if err := rdb.Set(ctx, "not-a-set", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err = heldkeys.SetMany.Run(ctx, rdb, []string{"not-a-set", "c", "d"}, "1", "2").Result()
	s, _ := got.(string)
	if err != nil || !strings.HasPrefix(s, "EE\n") || !strings.Contains(s, "WRONGTYPE") {
		t.Fatalf("got %q, %v; want EE and WRONGTYPE", got, err)
	}
	if n, err := rdb.Exists(ctx, "c", "d").Result(); err != nil || n != 0 {
		t.Fatalf("%d of the refused keys exist (%v)", n, err)
	}
}
