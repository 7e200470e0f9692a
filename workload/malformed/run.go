package malformed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Config bounds a run and names its targets.
type Config struct {
	// Datagrams is the bad datagrams to send in all (the run ends when
	// they are sent or Duration has passed, whichever comes first).
	Datagrams int
	// Connections bounds the gateway connections and the HTTP requests,
	// each.
	Connections int
	// Duration bounds the run.
	Duration time.Duration
	// Seed seeds the generators.
	Seed uint64
	// Senders is the goroutines sending datagrams (default 2).
	Senders int
	// UDP are the data-plane addresses (shims, cache nodes).
	UDP []netip.AddrPort
	// Gateways are the gateways' Redis addresses (host:port).
	Gateways []string
	// HTTP are metrics addresses (host:port).
	HTTP []string
	// Control is an HTTP client of the control API (nil: none), which
	// reaches it whatever the host in the URL.
	Control *http.Client
	// Signer signs datagrams with the cluster's data-plane key (nil: it
	// has none).
	Signer Signer
}

// Report is what a run sent.
type Report struct {
	Elapsed   time.Duration    `json:"elapsed"`
	Datagrams map[string]int64 `json:"datagrams"` // by Kind
	// DatagramsPerSecond is every datagram sent over Elapsed.
	DatagramsPerSecond float64          `json:"datagramsPerSecond"`
	SendErrors         int64            `json:"sendErrors"`
	Connections        map[string]int64 `json:"connections"` // gateway connections by RESPKind
	Refused            int64            `json:"refused"`     // connections answered with a protocol error
	HTTP               map[string]int64 `json:"http"`        // HTTP answers by status ("error": no answer)
	// Slowest is the longest gateway connection of each RESPKind, from
	// the dial to the gateway's close (or the 10 s bound).
	Slowest map[string]time.Duration `json:"slowest"`
}

// Run sends bad input to cfg's targets until its bounds or ctx end.
func Run(ctx context.Context, cfg Config) Report {
	if cfg.Senders <= 0 {
		cfg.Senders = 2
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex // guards rep's maps
		rep = Report{Datagrams: map[string]int64{}, Connections: map[string]int64{}, HTTP: map[string]int64{},
			Slowest: map[string]time.Duration{}}
		sent  atomic.Int64
		errs  atomic.Int64
		start = time.Now()
	)
	add := func(m map[string]int64, k string) { mu.Lock(); m[k]++; mu.Unlock() }
	if len(cfg.UDP) > 0 {
		for w := range cfg.Senders {
			wg.Go(func() {
				counts := sendDatagrams(ctx, cfg, uint64(w), &sent, &errs)
				mu.Lock()
				for k, n := range counts {
					rep.Datagrams[Kind(k).String()] += n
				}
				mu.Unlock()
			})
		}
	}
	if len(cfg.Gateways) > 0 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(cfg.Seed, 1<<32))
			for i := 0; i < cfg.Connections && ctx.Err() == nil; i++ {
				k := RESPKind(i % int(respKinds))
				began := time.Now()
				if exchange(ctx, cfg.Gateways[i%len(cfg.Gateways)], resp(rng, k)) {
					atomic.AddInt64(&rep.Refused, 1)
				}
				took := time.Since(began)
				add(rep.Connections, k.String())
				mu.Lock()
				rep.Slowest[k.String()] = max(rep.Slowest[k.String()], took)
				mu.Unlock()
			}
		})
	}
	if len(cfg.HTTP) > 0 || cfg.Control != nil {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(cfg.Seed, 2<<32))
			plain := &http.Client{Timeout: 5 * time.Second}
			for i := 0; i < cfg.Connections && ctx.Err() == nil; i++ {
				control := cfg.Control != nil && (len(cfg.HTTP) == 0 || i%4 == 0)
				c, host := plain, "control"
				if control {
					c = cfg.Control
				} else {
					host = cfg.HTTP[i%len(cfg.HTTP)]
				}
				method, path, body := httpRequest(rng, control)
				add(rep.HTTP, request(ctx, c, method, "http://"+host+path, body))
			}
		})
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	rep.SendErrors = errs.Load()
	rep.DatagramsPerSecond = float64(sent.Load()) / rep.Elapsed.Seconds()
	return rep
}

// sendDatagrams is one sender: its share of cfg.Datagrams, round robin
// over the kinds and the addresses, as fast as the socket takes them.
func sendDatagrams(ctx context.Context, cfg Config, w uint64, sent, errs *atomic.Int64) [kinds]int64 {
	var counts [kinds]int64
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		errs.Add(1)
		return counts
	}
	defer conn.Close()
	d := &datagrams{rng: rand.New(rand.NewPCG(cfg.Seed, w)), signer: cfg.Signer}
	share := cfg.Datagrams / cfg.Senders
	for i := 0; i < share; i++ {
		if i%256 == 0 && ctx.Err() != nil {
			break
		}
		k := Kind(i % int(kinds))
		if _, err := conn.WriteToUDPAddrPort(d.next(k), cfg.UDP[i%len(cfg.UDP)]); err != nil {
			errs.Add(1)
			continue
		}
		counts[k]++
		sent.Add(1)
	}
	return counts
}

// exchange sends b on a new connection to addr, closes its side and reads
// the answer until the gateway closes; it says whether the answer ends
// with a protocol error.
func exchange(ctx context.Context, addr string, b []byte) bool {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = conn.Write(b) // the gateway may refuse before all is sent
	if err == nil {
		_ = conn.(*net.TCPConn).CloseWrite()
	}
	out, _ := io.ReadAll(conn)
	return bytes.Contains(out, []byte("-ERR Protocol error"))
}

// request sends one request and names its outcome.
func request(ctx context.Context, c *http.Client, method, url string, body []byte) string {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return "error"
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return "cancelled"
		}
		return "error"
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	return fmt.Sprint(resp.StatusCode)
}
