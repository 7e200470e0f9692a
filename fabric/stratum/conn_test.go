package stratum_test

import (
	"log/slog"
	"testing"

	"github.com/distcache/distcache/fabric/stratum"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
)

var quiet = slog.New(slog.DiscardHandler)

func open(t *testing.T, addr string, election uint64) *stratum.Conn {
	t.Helper()
	c, err := stratum.Open(t.Context(), stratum.Config{Address: addr, DeviceID: 1, ElectionID: election, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func primary(c *stratum.Conn) bool { p, _, _ := c.Primary(); return p }

func anyPrimary(c *stratum.Conn) bool { _, a, _ := c.Primary(); return a }

// TestSessionsWaitAsBackups: sessions open as backups; a claim makes one
// primary and the others see it; when the primary's session closes, the
// backups stay open and are told nobody is primary; of two claims made
// then, the larger step wins whatever their order and their low ids; Dial
// preempts the primary, whose session stays open as a backup.
func TestSessionsWaitAsBackups(t *testing.T) {
	addr := switchtest.Serve(t, switchtest.NewSwitch(t, 1))
	a, b, c := open(t, addr, 3), open(t, addr, 2), open(t, addr, 1)
	if primary(a) || anyPrimary(a) {
		t.Fatal("a session opened as the primary, or saw one on a new switch")
	}
	if err := a.Claim(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a primary, b and c told so", func() bool { return primary(a) && anyPrimary(b) && anyPrimary(c) && !primary(b) })

	a.Close()
	poll.Until(t, "no primary, b and c open", func() bool { return !anyPrimary(b) && !anyPrimary(c) })
	if b.Err() != nil || c.Err() != nil {
		t.Fatalf("a backup's session ended with the primary's: %v, %v", b.Err(), c.Err())
	}
	if err := b.Claim(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Claim(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "c, the larger step, primary", func() bool { return primary(c) && !primary(b) && anyPrimary(b) })

	d, err := stratum.Dial(t.Context(), stratum.Config{Address: addr, DeviceID: 1, ElectionID: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	poll.Until(t, "d primary, c a backup", func() bool { return primary(d) && !primary(c) && anyPrimary(c) })
	if c.Err() != nil {
		t.Errorf("the preempted session ended: %v", c.Err())
	}
}
