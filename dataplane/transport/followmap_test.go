package transport_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// mapSaying is a partition map whose replay protection is r.
func mapSaying(r partmap.ReplayProtection) *partmap.Map {
	return &partmap.Map{Version: 1, ReplayProtection: r}
}

// TestFollowMapReplay: endpoints started at accept follow the maps their
// owner installs, without a restart: a sender stamps once its map says
// stamp, and a receiver whose map says require refuses an unstamped
// signed datagram and a replayed stamped one, and serves them again once
// a map lowers it to accept.
func TestFollowMapReplay(t *testing.T) {
	server, served := servedSeqsOf(t, withReplay(t, transport.ReplayAccept))
	sender := listen(t, nil, withReplay(t, transport.ReplayAccept))
	r := newReplayer(t)

	unstamped := r.capture(sender, request(wire.OpPut, 1))
	if unstamped[2] == wire.StampedVersion {
		t.Fatal("a sender at accept stamped")
	}
	if !sender.FollowMap(mapSaying(partmap.ReplayStamp)) || sender.ReplayMode() != transport.ReplayStamp {
		t.Fatalf("sender mode %v after a map saying stamp", sender.ReplayMode())
	}
	stamped := r.capture(sender, request(wire.OpPut, 2))
	if stamped[2] != wire.StampedVersion {
		t.Fatalf("a sender whose map says stamp sent version %d", stamped[2])
	}
	if got := r.send(server.Addr(), served, unstamped, stamped); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("at accept: served %v, want [1 2]", got)
	}

	if !server.FollowMap(mapSaying(partmap.ReplayRequire)) {
		t.Fatal("a map saying require did not change the receiver's mode")
	}
	if server.FollowMap(mapSaying(partmap.ReplayRequire)) {
		t.Fatal("the same mode again reported a change")
	}
	if got := r.send(server.Addr(), served, unstamped, stamped); len(got) != 0 {
		t.Fatalf("at require: served %v, want nothing (one unstamped, one replayed)", got)
	}
	st := server.Stats()
	if st.Unstamped[wire.OpPut] != 1 || st.ReplayRejected[wire.OpPut] != 1 {
		t.Fatalf("Unstamped[PUT] %d, ReplayRejected[PUT] %d; want 1 and 1", st.Unstamped[wire.OpPut], st.ReplayRejected[wire.OpPut])
	}

	server.FollowMap(mapSaying(partmap.ReplayAccept))
	if got := r.send(server.Addr(), served, unstamped); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("back at accept: served %v, want [1]", got)
	}
}

// TestFollowMapKeepsTheFloor: a configured mode is a floor that maps only
// raise.
func TestFollowMapKeepsTheFloor(t *testing.T) {
	tests := []struct {
		floor transport.ReplayMode
		map_  partmap.ReplayProtection
		want  transport.ReplayMode
	}{
		{transport.ReplayAccept, partmap.ReplayAccept, transport.ReplayAccept},
		{transport.ReplayAccept, partmap.ReplayStamp, transport.ReplayStamp},
		{transport.ReplayAccept, partmap.ReplayRequire, transport.ReplayRequire},
		{transport.ReplayStamp, partmap.ReplayAccept, transport.ReplayStamp},
		{transport.ReplayStamp, partmap.ReplayRequire, transport.ReplayRequire},
		{transport.ReplayRequire, partmap.ReplayAccept, transport.ReplayRequire},
		{transport.ReplayRequire, partmap.ReplayStamp, transport.ReplayRequire},
	}
	for _, tt := range tests {
		t.Run(tt.floor.String()+" with a map saying "+tt.map_.String(), func(t *testing.T) {
			ep := listen(t, nil, withReplay(t, tt.floor))
			ep.FollowMap(mapSaying(tt.map_))
			if got := ep.ReplayMode(); got != tt.want {
				t.Fatalf("mode %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFollowMapWhileSending changes the mode while requests flow (run
// with -race): every request is served.
func TestFollowMapWhileSending(t *testing.T) {
	server := listen(t, echo, withReplay(t, transport.ReplayAccept))
	client := listen(t, nil, withReplay(t, transport.ReplayAccept))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			m := mapSaying(partmap.ReplayProtections[i%2]) // accept and stamp: each accepts what the other sends
			client.FollowMap(m)
			server.FollowMap(m)
		}
	}()
	for range 200 {
		req := request(wire.OpPut, client.NextSeq())
		if _, err := client.Call(t.Context(), server.Addr(), req); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
