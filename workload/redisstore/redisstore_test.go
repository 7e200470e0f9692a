package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/internal/testing/redistest"
)

func TestParseGetSetCalls(t *testing.T) {
	tests := []struct {
		name, info string
		want       uint64
		wantErr    bool
	}{
		{name: "none", info: "# Commandstats\r\ncmdstat_info:calls=3,usec=10\r\n"},
		{name: "get and set", info: "# Commandstats\r\ncmdstat_get:calls=12,usec=5,usec_per_call=0.4\r\n" +
			"cmdstat_getset:calls=100,usec=1\r\ncmdstat_set:calls=7,usec=9\r\n", want: 19},
		{name: "garbled", info: "cmdstat_get:calls=x\r\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseGetSetCalls(tt.info)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseGetSetCalls = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestStore runs the store against a real redis-server.
func TestStore(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	s := New(srv.Addr(), 2)
	defer s.Close()
	if _, err := s.Get(ctx, "k"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want client.ErrNotFound", err)
	}
	value := []byte("v\x00\r\nbinary")
	if err := s.Put(ctx, "k", value); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "k"); err != nil || string(got) != string(value) {
		t.Fatalf("Get = %q, %v; want %q", got, err, value)
	}
	n, err := GetSetCalls(ctx, srv.Addr())
	if err != nil || n != 3 {
		t.Fatalf("GetSetCalls = %d, %v; want 3 (2 GET, 1 SET)", n, err)
	}
}
