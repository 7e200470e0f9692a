package cacheswitch

import (
	"context"
	"fmt"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/dataplane/wire"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// DefaultInterval is the insertion interval.
const DefaultInterval = time.Second

// Run serves the switch's digests and packet-ins and calls Insert every
// interval (DefaultInterval when 0), until ctx ends or done closes (the
// session ended); it returns the first error of an Insert.
func (c *Controller) Run(ctx context.Context, interval time.Duration, done <-chan struct{}) error {
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-done:
			return nil
		case d := <-c.dev.Digests():
			c.hotKeys(d)
		case frame := <-c.dev.PacketIns():
			if err := c.filled(ctx, frame); err != nil {
				c.log.Warn("cannot check a fill", "err", err)
			}
		case <-t.C:
			if err := c.Insert(ctx); err != nil {
				c.stats.Errors.Add(1)
				return err
			}
		}
	}
}

// hotKeys records the keys of a hot_key_t digest list: key_digest,
// key_len, key (left-aligned), count.
func (c *Controller) hotKeys(d *p4v1.DigestList) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, data := range d.Data {
		m := data.GetStruct().GetMembers()
		if len(m) != 4 {
			continue
		}
		n := int(pipelines.BytesUint(m[1].GetBitstring()))
		raw := m[2].GetBitstring()
		if n < 1 || n > wire.MaxSwitchKeyLen || len(raw) > 32 {
			continue
		}
		var key [32]byte
		copy(key[32-len(raw):], raw) // canonical: leading zero bytes dropped
		count := uint16(pipelines.BytesUint(m[3].GetBitstring()))
		c.stats.HotKeys.Add(1)
		k := string(key[:n])
		if count > c.hot[k] {
			c.hot[k] = count
		}
	}
}

// filled handles a FETCH_REPLY the switch passed on: the slot it was for
// is filled when its valid bit is set; otherwise the fill was refused,
// and a key that is gone, has an expiry or a value too big for the switch
// is released, and any other waits for the next interval's FETCH.
func (c *Controller) filled(ctx context.Context, frame []byte) error {
	_, _, payload, err := pipelines.ParseFrame(frame)
	if err != nil {
		return err
	}
	p, err := wire.Parse(payload)
	if err != nil || p.Op != wire.OpFetchReply {
		return fmt.Errorf("packet-in is not a FETCH_REPLY (op %s): %w", p.Op, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.slots.byKey[string(p.Key)]
	if !ok || s.fetchSeq != p.Seq {
		return nil // an older FETCH's, or a released slot's
	}
	es, err := c.dev.Read(ctx, p4entity.Register(c.id.valid, int64(s.index), nil))
	if err != nil || len(es) != 1 {
		return fmt.Errorf("cannot read slot %d of %s: %w", s.index, c.cfg.Member, err)
	}
	if pipelines.BytesUint(es[0].GetRegisterEntry().GetData().GetBitstring()) == 1 {
		s.fetchSeq = 0
		c.stats.Filled.Add(1)
		return nil
	}
	c.stats.FillRefused.Add(1)
	if p.Status != wire.StatusOK || !wire.SwitchCacheable(len(p.Key), int(p.ValueLen)) {
		return c.release(ctx, []*slot{s})
	}
	return nil
}
