// Package clientleaf is the controller of a client-leaf switch: the top
// of rack of clients (DistCache §4.2) running stratum_pipelines' client
// leaf program (p4src/v1model/client_leaf.p4), which sends each read to
// the less loaded of the key's spine switch and the storage-leaf switch of
// the key's rack, on loads it learns from the replies.
//
// Apply programs the leaf from the partition map: its read port of every
// storage shard (client_read_port), the spine layer's ring as ranges of
// the key digest's 64 high bits (spine_owner, from partmap.SwitchArcs:
// the placement partmap itself uses) and the storage-leaf switch of every
// shard's rack (shard_leaf), writing only what changed since the switch's
// tables were read. The program's loads (member_load) are the data
// plane's: the controller neither reads nor writes them.
//
// A Runner keeps a leaf programmed across sessions: it pushes the client
// leaf program at every new session and applies every map read handed to
// it (Renew), as package fabric/fleet runs it beside the cache switches
// for `distcache fabric` and the operator's SwitchFabric controller. A
// client leaf caches nothing and holds no serving lease.
package clientleaf

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/netip"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"

	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// Device is the session the controller programs its switch through (a
// stratum.Conn).
type Device interface {
	Write(ctx context.Context, updates ...*p4v1.Update) error
	Read(ctx context.Context, filters ...*p4v1.Entity) ([]*p4v1.Entity, error)
}

// Config configures a controller.
type Config struct {
	// Addr is the client leaf's address: its read port of the storage
	// shard of global index g is partmap.SwitchReadPort(Addr.Port(), g),
	// as a cache switch's.
	Addr netip.AddrPort
	// Info is the P4Info of the client leaf program.
	Info   *p4configv1.P4Info
	Logger *slog.Logger
}

// Controller programs one client leaf.
type Controller struct {
	cfg Config
	log *slog.Logger
	id  ids
}

// Changes counts the table entries an Apply wrote.
type Changes struct {
	Inserted, Modified, Deleted int
}

// New returns a controller of the client leaf at cfg.Addr.
func New(cfg Config) (*Controller, error) {
	if !cfg.Addr.Addr().Is4() {
		return nil, fmt.Errorf("cannot control the client leaf: address %s is not IPv4", cfg.Addr)
	}
	if cfg.Info == nil {
		return nil, fmt.Errorf("cannot control the client leaf at %s: no P4Info", cfg.Addr)
	}
	id, err := lookupIDs(cfg.Info)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Controller{cfg: cfg, log: cfg.Logger.With("client_leaf", cfg.Addr.String()), id: id}, nil
}

// Apply makes the leaf's tables those of p: it reads them, deletes the
// entries p no longer has, then modifies and inserts, so that spine_owner
// never holds two overlapping arcs. A read meanwhile finds an arc with no
// entry at worst, and goes to the storage leaf.
func (c *Controller) Apply(ctx context.Context, dev Device, p *partmap.Placement) (Changes, error) {
	var ch Changes
	want, err := c.id.entries(p, c.cfg.Addr)
	if err != nil {
		return ch, err
	}
	var filters []*p4v1.Entity
	for _, t := range []uint32{c.id.clientReadPort, c.id.spineOwner, c.id.shardLeaf} {
		filters = append(filters, p4entity.TableEntry(t, 0, nil))
	}
	have, err := dev.Read(ctx, filters...)
	if err != nil {
		return ch, fmt.Errorf("cannot read the client leaf's tables: %w", err)
	}
	current := map[string]*p4v1.TableEntry{}
	for _, e := range have {
		if te := e.GetTableEntry(); te != nil && !te.IsDefaultAction {
			current[entryKey(te)] = te
		}
	}
	var deletes, modifies, inserts []*p4v1.Update
	wanted := map[string]bool{}
	for _, e := range want {
		te := e.GetTableEntry()
		k := entryKey(te)
		wanted[k] = true
		switch old, ok := current[k]; {
		case !ok:
			inserts = append(inserts, p4entity.Update(p4v1.Update_INSERT, e))
		case !proto.Equal(old.Action, te.Action):
			modifies = append(modifies, p4entity.Update(p4v1.Update_MODIFY, e))
		}
	}
	for k, te := range current {
		if !wanted[k] {
			del := p4entity.Entry(te.TableId, te.Priority, te.Match, 0)
			deletes = append(deletes, p4entity.Update(p4v1.Update_DELETE, del))
		}
	}
	for _, batch := range []struct {
		updates []*p4v1.Update
		count   *int
		what    string
	}{{deletes, &ch.Deleted, "delete"}, {modifies, &ch.Modified, "modify"}, {inserts, &ch.Inserted, "insert"}} {
		if len(batch.updates) == 0 {
			continue
		}
		if err := dev.Write(ctx, batch.updates...); err != nil {
			return ch, fmt.Errorf("cannot %s %d entries of the client leaf (map version %d): %w", batch.what, len(batch.updates), p.Version(), err)
		}
		*batch.count = len(batch.updates)
	}
	if ch != (Changes{}) {
		c.log.Info("client leaf programmed", "map_version", p.Version(), "inserted", ch.Inserted, "modified", ch.Modified, "deleted", ch.Deleted)
	}
	return ch, nil
}

// entryKey identifies an entry within the leaf's tables: its table, its
// matches (canonical, as the switch reads them back) and its priority.
func entryKey(te *p4v1.TableEntry) string {
	b := binary.BigEndian.AppendUint32(nil, te.TableId)
	b = binary.BigEndian.AppendUint32(b, uint32(te.Priority))
	for _, m := range te.Match {
		b = binary.BigEndian.AppendUint32(b, m.FieldId)
		switch {
		case m.GetExact() != nil:
			b = appendBytes(append(b, 'e'), m.GetExact().Value)
		case m.GetRange() != nil:
			b = appendBytes(appendBytes(append(b, 'r'), m.GetRange().Low), m.GetRange().High)
		}
	}
	return string(b)
}

func appendBytes(b, v []byte) []byte { return append(append(b, byte(len(v))), canonical(v)...) }
