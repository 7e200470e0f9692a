package gateway

import (
	"fmt"
	"strconv"
	"strings"
)

// The Redis Cluster commands. Without a cluster face they answer as a
// Redis without cluster support; with one (Config.Cluster), as a node of
// a cluster whose nodes are the gateways (clusterface.go).

// errClusterDisabled is Redis' error for a cluster command without
// cluster support.
const errClusterDisabled = "ERR This instance has cluster support disabled"

// clusterSubcommands are Redis 7.0's CLUSTER subcommands and their arity,
// counted as COMMAND counts it (CLUSTER and the subcommand included): a
// subcommand Redis does not know, or a wrong number of arguments, gets
// Redis' error before anything else.
var clusterSubcommands = map[string]int{
	"addslots": -3, "addslotsrange": -4, "bumpepoch": 2, "count-failure-reports": 3, "countkeysinslot": 3,
	"delslots": -3, "delslotsrange": -4, "failover": -2, "flushslots": 2, "forget": 3, "getkeysinslot": 4,
	"help": 2, "info": 2, "keyslot": 3, "links": 2, "meet": -4, "myid": 2, "nodes": 2, "replicas": 3,
	"replicate": 3, "reset": -2, "saveconfig": 2, "set-config-epoch": 3, "setslot": -4, "shards": 2,
	"slaves": 3, "slots": 2,
}

// clusterHelp is CLUSTER HELP's reply with a cluster face.
var clusterHelp = []string{
	"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"INFO", "    Return information about the cluster.",
	"KEYSLOT <key>", "    Return the hash slot for <key>.",
	"LINKS", "    Return the links to other nodes: none, the gateways have no cluster bus.",
	"MYID", "    Return the node id.",
	"NODES", "    Return the cluster configuration: every gateway of the cluster and its slots.",
	"REPLICAS <node-id>", "    Return <node-id> replicas: none.",
	"SHARDS", "    Return the slot ranges and the gateway of each.",
	"SLOTS", "    Return the slot ranges and the gateway of each.",
	"HELP", "    Print this help.",
	"Every gateway serves every key: the slots only spread the clients' connections.",
}

// runCluster answers CLUSTER subcommand [arg ...].
func runCluster(c *call, dst []byte) []byte {
	sub := strings.ToLower(string(c.args[1]))
	arity, known := clusterSubcommands[sub]
	switch {
	case !known:
		return appendError(dst, "ERR unknown subcommand '"+clip(c.args[1])+"'. Try CLUSTER HELP.")
	case (arity >= 0 && len(c.args) != arity) || len(c.args) < -arity:
		return appendError(dst, "ERR wrong number of arguments for 'cluster|"+sub+"' command")
	}
	f := c.srv.face
	if f == nil {
		return appendError(dst, errClusterDisabled)
	}
	v := f.view.Load()
	if v == nil { // before Serve
		return appendError(dst, "CLUSTERDOWN The cluster is down")
	}
	switch sub {
	case "slots":
		return v.appendSlots(dst, c.resp3)
	case "shards":
		return v.appendShards(dst, c.resp3)
	case "nodes":
		return appendVerbatim(dst, v.nodesText(), c.resp3)
	case "info":
		return appendVerbatim(dst, v.infoText(), c.resp3)
	case "myid":
		return appendBulkString(dst, v.nodes[v.self].id)
	case "keyslot":
		return appendInt(dst, int64(KeySlot(c.args[2])))
	case "links":
		return appendArray(dst, 0)
	case "replicas", "slaves":
		if _, ok := v.node(c.args[2]); !ok {
			return appendError(dst, "ERR Unknown node "+clip(c.args[2]))
		}
		return appendArray(dst, 0)
	case "help":
		dst = appendArray(dst, len(clusterHelp))
		for _, l := range clusterHelp {
			dst = appendSimple(dst, l)
		}
		return dst
	}
	return appendError(dst, "ERR CLUSTER "+strings.ToUpper(sub)+" is not supported by the DistCache gateway: every gateway serves every key")
}

// runClusterConnection answers READONLY, READWRITE and ASKING: OK with a
// cluster face (any gateway serves reads and writes of any key), Redis'
// error without.
func runClusterConnection(c *call, dst []byte) []byte {
	if c.srv.face == nil {
		return appendError(dst, errClusterDisabled)
	}
	return appendOK(dst)
}

// appendSlots appends CLUSTER SLOTS' reply: for every gateway with slots,
// its range and the gateway (IP, port, node id, no more metadata).
func (v *clusterView) appendSlots(dst []byte, resp3 bool) []byte {
	owners := v.withSlots()
	dst = appendArray(dst, len(owners))
	for _, n := range owners {
		dst = appendArray(dst, 3)
		dst = appendInt(dst, int64(n.first))
		dst = appendInt(dst, int64(n.last))
		dst = appendArray(dst, 4)
		dst = appendBulkString(dst, n.addr.Addr().String())
		dst = appendInt(dst, int64(n.addr.Port()))
		dst = appendBulkString(dst, n.id)
		dst = appendMap(dst, 0, resp3)
	}
	return dst
}

// appendShards appends CLUSTER SHARDS' reply: every gateway with slots is
// a shard of one primary.
func (v *clusterView) appendShards(dst []byte, resp3 bool) []byte {
	owners := v.withSlots()
	dst = appendArray(dst, len(owners))
	for _, n := range owners {
		ip := n.addr.Addr().String()
		dst = appendMap(dst, 2, resp3)
		dst = appendBulkString(dst, "slots")
		dst = appendArray(dst, 2)
		dst = appendInt(dst, int64(n.first))
		dst = appendInt(dst, int64(n.last))
		dst = appendBulkString(dst, "nodes")
		dst = appendArray(dst, 1)
		dst = appendMap(dst, 7, resp3)
		dst = appendBulkString(dst, "id")
		dst = appendBulkString(dst, n.id)
		dst = appendBulkString(dst, "port")
		dst = appendInt(dst, int64(n.addr.Port()))
		dst = appendBulkString(dst, "ip")
		dst = appendBulkString(dst, ip)
		dst = appendBulkString(dst, "endpoint")
		dst = appendBulkString(dst, ip)
		dst = appendBulkString(dst, "role")
		dst = appendBulkString(dst, "master")
		dst = appendBulkString(dst, "replication-offset")
		dst = appendInt(dst, 0)
		dst = appendBulkString(dst, "health")
		dst = appendBulkString(dst, "online")
	}
	return dst
}

// nodesText is CLUSTER NODES' reply: a line per gateway, as Redis writes
// it (id, ip:port@bus-port, flags, primary, ping sent, pong received,
// config epoch, link state, slots). The gateways have no cluster bus: its
// port is 0.
func (v *clusterView) nodesText() string {
	var b strings.Builder
	for i, n := range v.nodes {
		flags := "master"
		if i == v.self {
			flags = "myself,master"
		}
		fmt.Fprintf(&b, "%s %s:%d@0 %s - 0 0 %d connected", n.id, n.addr.Addr(), n.addr.Port(), flags, i+1)
		if n.first <= n.last {
			fmt.Fprintf(&b, " %d-%d", n.first, n.last)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// infoText is CLUSTER INFO's reply.
func (v *clusterView) infoText() string {
	var b strings.Builder
	line := func(k string, n int) { b.WriteString(k + ":" + strconv.Itoa(n) + "\r\n") }
	b.WriteString("cluster_state:ok\r\n")
	line("cluster_slots_assigned", ClusterSlots)
	line("cluster_slots_ok", ClusterSlots)
	line("cluster_slots_pfail", 0)
	line("cluster_slots_fail", 0)
	line("cluster_known_nodes", len(v.nodes))
	line("cluster_size", len(v.withSlots()))
	line("cluster_current_epoch", len(v.nodes))
	line("cluster_my_epoch", v.self+1)
	line("cluster_stats_messages_sent", 0)
	line("cluster_stats_messages_received", 0)
	line("total_cluster_links_buffer_limit_exceeded", 0)
	return b.String()
}
