package heldkeys_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/internal/redistest"
)

// TestScripts runs the direct writes in a real Redis: a key not in the
// set is written (SET answers OK, INCRBY the new value, or Redis's error
// for a value that is not an integer); a key in the set is left alone and
// the script answers nil.
func TestScripts(t *testing.T) {
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
