package twemproxy

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/workload/redisstore"
)

func TestRender(t *testing.T) {
	got := Render("127.0.0.1:7000", []string{"127.0.0.1:6379", "127.0.0.1:6380"})
	want := `distcache:
  listen: 127.0.0.1:7000
  hash: fnv1a_64
  distribution: ketama
  redis: true
  auto_eject_hosts: false
  timeout: 2000
  server_connections: 1
  servers:
    - 127.0.0.1:6379:1 s0
    - 127.0.0.1:6380:1 s1
`
	if got != want {
		t.Fatalf("Render:\n%s\nwant:\n%s", got, want)
	}
}

// TestProxySpreadsKeys runs a real nutcracker in front of two real
// redis-servers and checks that keys written through it are read back
// through it and land on both servers.
func TestProxySpreadsKeys(t *testing.T) {
	if _, err := Find(); err != nil {
		t.Fatal("nutcracker not installed (make test installs it):", err)
	}
	ctx := context.Background()
	servers := []string{redistest.Start(t).Addr(), redistest.Start(t).Addr()}
	p, err := Start(ctx, Config{Servers: servers, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	st := redisstore.New(p.Addr(), 4)
	defer st.Close()
	const n = 200
	for i := range n {
		if err := st.Put(ctx, key(i), []byte(strconv.Itoa(i))); err != nil {
			t.Fatalf("SET through twemproxy: %v", err)
		}
	}
	for i := range n {
		if v, err := st.Get(ctx, key(i)); err != nil || string(v) != strconv.Itoa(i) {
			t.Fatalf("GET %s through twemproxy = %q, %v; want %d", key(i), v, err, i)
		}
	}
	if _, err := st.Get(ctx, "missing"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("GET of a missing key through twemproxy: %v, want client.ErrNotFound", err)
	}
	total := 0
	for _, s := range servers {
		direct := redis.NewClient(&redis.Options{Addr: s})
		size, err := direct.DBSize(ctx).Result()
		direct.Close()
		if err != nil {
			t.Fatal(err)
		}
		if size == 0 {
			t.Errorf("server %s holds no key: twemproxy did not shard", s)
		}
		total += int(size)
	}
	if total != n {
		t.Errorf("servers hold %d keys, want %d", total, n)
	}
}

func key(i int) string { return "key:" + strconv.Itoa(i) }
