package gateway_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/gateway"
	"github.com/distcache/distcache/internal/testing/clustertest"
)

// concurrencyStore is a gateway Store that records how many Gets run at
// once; hold, if set, keeps each Get waiting until it is closed, and
// entered, if set, hears of each Get that starts.
type concurrencyStore struct {
	gateway.Store
	hold, entered chan struct{}
	now, most     atomic.Int64
}

func (s *concurrencyStore) Get(ctx context.Context, key string) ([]byte, error) {
	defer s.enter(1)()
	return s.Store.Get(ctx, key)
}

// GetMany counts as many Gets as it has keys.
func (s *concurrencyStore) GetMany(ctx context.Context, keys []string, res []client.Result, errs []error) {
	defer s.enter(len(keys))()
	s.Store.GetMany(ctx, keys, res, errs)
}

// enter records n Gets starting, waits for hold, and returns what records
// them ending.
func (s *concurrencyStore) enter(k int) (leave func()) {
	n := s.now.Add(int64(k))
	if s.entered != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
	}
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	if s.hold != nil {
		<-s.hold
	}
	return func() { s.now.Add(-int64(k)) }
}

// TestMaxInFlight pipelines GETs from many connections through a gateway
// that lets two run in the cluster at once: every reply is right, and no
// more than two ever ran together.
func TestMaxInFlight(t *testing.T) {
	c := clustertest.Start(t, clustertest.Config{Name: "gw", Racks: 2, ShardsPerRack: 1, Spine: 2})
	store := &concurrencyStore{Store: c.NewClient(client.Config{})}
	_, addr := serveGateway(t, gateway.Config{Store: store, MaxInFlight: 2})
	rc := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 8})
	defer rc.Close()
	ctx := t.Context()
	const keys = 32
	for i := range keys {
		if err := rc.Set(ctx, "k"+strconv.Itoa(i), "v"+strconv.Itoa(i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			pipe := rc.Pipeline()
			cmds := make([]*redis.StringCmd, keys)
			for i := range cmds {
				cmds[i] = pipe.Get(ctx, "k"+strconv.Itoa((i+w)%keys))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Error(err)
				return
			}
			for i, cmd := range cmds {
				if want := "v" + strconv.Itoa((i+w)%keys); cmd.Val() != want {
					t.Errorf("GET = %q, want %q", cmd.Val(), want)
				}
			}
		})
	}
	wg.Wait()
	if most := store.most.Load(); most > 2 || most < 1 {
		t.Errorf("%d GETs ran in the cluster at once, want 1 or 2", most)
	}
}

// TestMaxInFlightWaitTimesOut checks that a command that cannot get into
// the cluster within its OpTimeout gets an error, not a hang.
func TestMaxInFlightWaitTimesOut(t *testing.T) {
	c := clustertest.Start(t, clustertest.Config{Name: "gw", Racks: 2, ShardsPerRack: 1, Spine: 2})
	store := &concurrencyStore{Store: c.NewClient(client.Config{}), hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	_, addr := serveGateway(t, gateway.Config{Store: store, MaxInFlight: 1, OpTimeout: 200 * time.Millisecond})
	release := sync.OnceFunc(func() { close(store.hold) })
	t.Cleanup(release) // before the gateway closes, should the test fail first
	ctx := t.Context()
	first := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer first.Close()
	second := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer second.Close()
	// The first GET holds the only slot until the test lets it go.
	held := make(chan error, 1)
	go func() { held <- first.Get(ctx, "a").Err() }()
	select {
	case <-store.entered:
	case err := <-held:
		t.Fatalf("the first GET ended before it held the slot: %v", err)
	}
	err := second.Get(ctx, "b").Err()
	if err == nil || !strings.Contains(err.Error(), "waiting for the cluster") {
		t.Fatalf("second GET: %v, want an error that it waited for the cluster", err)
	}
	release()
	<-held
}

// TestMGetFanOutIsBounded reads 200 keys with one MGET: every value comes
// back in order, and no more than 32 of its reads were in the cluster at
// once.
func TestMGetFanOutIsBounded(t *testing.T) {
	c := clustertest.Start(t, clustertest.Config{Name: "gw", Racks: 2, ShardsPerRack: 1, Spine: 2})
	store := &concurrencyStore{Store: c.NewClient(client.Config{})}
	_, addr := serveGateway(t, gateway.Config{Store: store})
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	ctx := t.Context()
	keys := make([]string, 200)
	pairs := make([]any, 0, 2*len(keys))
	for i := range keys {
		keys[i] = "m" + strconv.Itoa(i)
		pairs = append(pairs, keys[i], "v"+strconv.Itoa(i))
	}
	if err := rc.MSet(ctx, pairs...).Err(); err != nil {
		t.Fatal(err)
	}
	vals, err := rc.MGet(ctx, keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if v != "v"+strconv.Itoa(i) {
			t.Fatalf("MGET value %d = %v, want v%d", i, v, i)
		}
	}
	if most := store.most.Load(); most > 32 || most < 2 {
		t.Errorf("%d reads of one MGET ran in the cluster at once, want 2 to 32", most)
	}
}
