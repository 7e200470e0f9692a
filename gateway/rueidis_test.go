package gateway_test

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"
)

// TestRueidis runs rueidis, unmodified: its default client-side caching
// needs CLIENT TRACKING, which the gateway refuses with Redis' error, so
// creating such a client fails cleanly; with caching off it works (RESP3).
func TestRueidis(t *testing.T) {
	addr, _ := startGateway(t)
	if c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}}); err == nil {
		c.Close()
		t.Fatal("a rueidis client with client-side caching connected; want CLIENT TRACKING refused")
	} else if !strings.Contains(err.Error(), "TRACKING") {
		t.Errorf("refusal %q does not name CLIENT TRACKING", err)
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if err := c.Do(ctx, c.B().Set().Key("rue:a").Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Do(ctx, c.B().Get().Key("rue:a").Build()).ToString(); err != nil || v != "1" {
		t.Errorf("GET = %q (%v)", v, err)
	}
	if n, err := c.Do(ctx, c.B().Incrby().Key("rue:n").Increment(7).Build()).AsInt64(); err != nil || n != 7 {
		t.Errorf("INCRBY = %d (%v)", n, err)
	}
	// rueidis pipelines commands sent together on one connection.
	resps := c.DoMulti(ctx, c.B().Set().Key("rue:b").Value("2").Build(), c.B().Get().Key("rue:b").Build(),
		c.B().Del().Key("rue:a", "rue:b", "rue:none").Build(), c.B().Get().Key("rue:a").Build())
	if v, _ := resps[1].ToString(); v != "2" {
		t.Errorf("pipelined GET after SET = %q", v)
	}
	if n, _ := resps[2].AsInt64(); n != 2 {
		t.Errorf("pipelined DEL = %d, want 2", n)
	}
	if !rueidis.IsRedisNil(resps[3].Error()) {
		t.Errorf("pipelined GET of a deleted key: %v, want nil", resps[3].Error())
	}
}
