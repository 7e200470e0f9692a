package gateway

import (
	"fmt"
	"strings"
	"time"

	"github.com/distcache/distcache/internal/buildinfo"
)

// runCommand answers COMMAND, COMMAND COUNT, COMMAND LIST, COMMAND INFO
// and COMMAND DOCS (no documentation: an empty reply), enough for
// redis-cli and the client libraries that ask.
func runCommand(c *call, dst []byte) []byte {
	if len(c.args) == 1 {
		dst = appendArray(dst, len(table))
		for _, cmd := range table {
			dst = cmd.appendInfo(dst)
		}
		return dst
	}
	switch strings.ToLower(string(c.args[1])) {
	case "count":
		return appendInt(dst, int64(len(table)))
	case "list":
		dst = appendArray(dst, len(table))
		for _, cmd := range table {
			dst = appendBulkString(dst, cmd.name)
		}
		return dst
	case "info":
		names := c.args[2:]
		dst = appendArray(dst, len(names))
		for _, n := range names {
			if cmd := lookup(n); cmd != nil {
				dst = cmd.appendInfo(dst)
			} else {
				dst = appendNull(dst, c.resp3)
			}
		}
		return dst
	case "docs":
		return appendMap(dst, 0, c.resp3)
	}
	return appendError(dst, "ERR unknown subcommand '"+clip(c.args[1])+"'. Try COMMAND HELP.")
}

// appendInfo appends c as an element of COMMAND's reply: name, arity,
// flags, first key, last key, step, and empty ACL categories, tips, key
// specifications and subcommands.
func (c *command) appendInfo(dst []byte) []byte {
	dst = appendArray(dst, 10)
	dst = appendBulkString(dst, c.name)
	dst = appendInt(dst, int64(c.arity))
	dst = appendArray(dst, len(c.flags))
	for _, f := range c.flags {
		dst = appendSimple(dst, f)
	}
	dst = appendInt(dst, int64(c.first))
	dst = appendInt(dst, int64(c.last))
	dst = appendInt(dst, int64(c.step))
	for range 4 {
		dst = appendArray(dst, 0)
	}
	return dst
}

// infoSections are INFO's sections, in order.
var infoSections = []string{"server", "clients", "stats", "commandstats", "errorstats", "cluster", "distcache"}

// runInfo answers INFO [section ...]: server, clients, stats, cluster
// (cluster_enabled) and distcache (the partition map, the layers and the
// reads' hit ratio); all, everything and default name every section.
// RESP3 gets a verbatim string, as from Redis.
func runInfo(c *call, dst []byte) []byte {
	want, all := map[string]bool{}, false
	for _, a := range c.args[1:] {
		s := strings.ToLower(string(a))
		if s == "all" || s == "everything" || s == "default" {
			want, all = nil, s != "default"
			break
		}
		want[s] = true
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if len(want) > 0 && !want[sec] || len(want) == 0 && !all && sec == "commandstats" { // as Redis: not by default
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		c.srv.writeInfo(&b, sec)
	}
	return appendVerbatim(dst, b.String(), c.resp3)
}

// writeInfo writes one INFO section.
func (s *Server) writeInfo(b *strings.Builder, section string) {
	line := func(k string, v any) { fmt.Fprintf(b, "%s:%v\r\n", k, v) }
	switch section {
	case "server":
		b.WriteString("# Server\r\n")
		line("redis_version", RedisVersion)
		line("redis_mode", s.mode())
		line("distcache_version", buildinfo.Get().Version)
		if a := s.Addr(); a != nil {
			line("tcp_addr", a.String())
		}
		line("uptime_in_seconds", int64(time.Since(s.started).Seconds()))
	case "clients":
		b.WriteString("# Clients\r\n")
		line("connected_clients", s.open.Load())
		line("maxclients", s.cfg.MaxConnections)
		line("blocked_clients", s.blocked.Load())
	case "commandstats":
		b.WriteString("# Commandstats\r\n")
		writeCommandStats(b, s.metrics.series)
	case "errorstats":
		b.WriteString("# Errorstats\r\n")
		s.errorStats.write(b)
	case "stats":
		st, base := s.Stats(), s.statsBase.Load()
		if base == nil {
			base = &Stats{}
		}
		b.WriteString("# Stats\r\n")
		line("total_connections_received", st.Connections-base.Connections)
		line("total_commands_processed", st.Commands-base.Commands)
		line("total_error_replies", st.Errors-base.Errors)
		line("rejected_connections", st.Rejected-base.Rejected)
	case "cluster":
		b.WriteString("# Cluster\r\n")
		enabled := 0
		if s.face != nil {
			enabled = 1
		}
		line("cluster_enabled", enabled)
	case "distcache":
		b.WriteString("# DistCache\r\n")
		store := s.cfg.Store
		if p := store.Placement(); p != nil {
			m := p.Map()
			names := make([]string, len(m.Layers))
			for i, l := range m.Layers {
				names[i] = l.Name
			}
			line("cluster", m.Cluster)
			line("map_version", m.Version)
			line("layers", len(names))
			line("layer_names", strings.Join(names, ","))
		}
		cs := store.Stats()
		line("reads", cs.Gets)
		line("cache_hits", cs.Hits)
		ratio := 0.0
		if cs.Hits+cs.Misses > 0 {
			ratio = float64(cs.Hits) / float64(cs.Hits+cs.Misses)
		}
		line("hit_ratio", fmt.Sprintf("%.4f", ratio))
		line("writes", cs.Puts+cs.Deletes)
		line("storage_reads", cs.StorageReads)
		line("storage_writes", cs.StorageWrites)
		line("atomic_operations", cs.Atomics)
		line("released_keys", cs.Releases)
		if u := s.cfg.Users; u != nil {
			line("auth", fmt.Sprintf("users (%d in %s)", u.count(), u.Dir))
		} else {
			line("auth", "none (no users configured: every client is the default user)")
		}
		line("tls", s.cfg.TLS != nil)
	}
}

// mode is the server's mode, as HELLO and INFO report Redis': cluster
// with a cluster face, standalone without.
func (s *Server) mode() string {
	if s.face != nil {
		return "cluster"
	}
	return "standalone"
}

// runConfig answers CONFIG GET of the parameters a client may see and
// CONFIG SET of those it may set (configset.go), and refuses the rest.
func runConfig(c *call, dst []byte) []byte {
	switch {
	case strings.EqualFold(string(c.args[1]), "get") && len(c.args) >= 3:
		return runConfigGet(c, dst)
	case strings.EqualFold(string(c.args[1]), "set"):
		return runConfigSet(c, dst)
	case strings.EqualFold(string(c.args[1]), "resetstat") && len(c.args) == 2:
		c.srv.errorStats.reset()
		for _, series := range c.srv.metrics.series {
			series.resetStat()
		}
		st := c.srv.Stats()
		c.srv.statsBase.Store(&st)
		return appendOK(dst)
	}
	return appendError(dst, "ERR CONFIG "+strings.ToUpper(clip(c.args[1]))+" is not supported by the DistCache gateway")
}
