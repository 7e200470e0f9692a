// Package softswitch is a software switch that runs a P4 program of
// stratum_pipelines on a host's UDP sockets, for machines without a
// programmable switch: the cache switch (p4src/v1model/cache_switch.p4:
// the spine and storage-leaf roles of DistCache §4.1) or, one switch
// each (Config.Program), the client leaf (p4src/v1model/client_leaf.p4:
// the client ToR's power-of-two-choices of §4.2). It is a real P4Runtime
// target written as software, not a model of one: a controller pushes the
// program's P4Info (the switch refuses the other program's), writes the
// same table entries and registers, and gets the same digests and
// packet-ins as from stratum-bmv2 or a Tofino switch running that
// program.
//
// It is shaped like the P4 programs: the parser (packet.go) mirrors
// parser.p4 over the UDP payload, the controls (cache.go, clientleaf.go)
// mirror cache.p4 and client_leaf.p4 — tables applied in the program's
// order, registers as arrays of cells indexed as the program indexes
// them, counters per index — and every table, register and counter is
// built from the P4Info, so P4Runtime reads and writes address them by
// the P4Info's ids. Tables match exact, LPM and range fields (range.go). One lock (the
// pipeline lock) is held for a whole receive batch, as a pipeline
// processes packets one after the other, and for each P4Runtime write, so
// an update is atomic with respect to the packets.
//
// Ports: the switch binds Config.Addr at BasePort (the coherence port,
// the member's address in the partition map) and BasePort + 1 + s for
// each storage shard s it fronts (read ports). The program's
// switch_address table decides what each (address, port) serves.
//
// The client leaf's ports are read ports alike (client_read_port maps
// them to shards). A ToR in the clients' path rewrites a read's
// destination and forwards it, and sees the reply on its way back to the
// client; on UDP sockets the software leaf can do neither, so it relays
// (clientleaf.go): the read leaves from the leaf's port under a sequence
// number of its own, kept in relay registers declared as the cache
// switch's (relay.go, outside the program's P4Info), and the reply comes
// back to that port and goes on to the client after the program has
// learned the sender's load from it.
//
// Where it differs from hardware: it has no Ethernet or IPv4 to parse —
// the socket gives the addresses — and no other hosts behind it, so a
// packet that is not addressed to one of its ports is dropped rather than
// routed (the ipv4_route table takes entries and is not used); the
// clock (lease_until, load windows) is microseconds since the switch
// started, as v1model's ingress timestamp; a parser error on a key longer
// than the datagram drops the datagram. Packet-outs and packet-ins are
// Ethernet/IPv4/UDP frames, as the program exchanges them with the CPU
// port.
package softswitch
