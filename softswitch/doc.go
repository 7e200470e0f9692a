// Package softswitch is a software switch that runs the cache switch
// program of stratum_pipelines (p4src/v1model/cache_switch.p4: the spine
// and storage-leaf roles of DistCache §4.1) on a host's UDP sockets, for
// machines without a programmable switch. It is a real P4Runtime target
// written as software, not a model of one: a controller pushes the
// program's P4Info, writes the same table entries and registers, and gets
// the same digests and packet-ins as from stratum-bmv2 or a Tofino switch
// running that program.
//
// It is shaped like the P4 program: the parser (packet.go) mirrors
// parser.p4 over the UDP payload, the control (cache.go) mirrors cache.p4
// — tables applied in the program's order, registers as arrays of cells
// indexed as the program indexes them, counters per index — and every
// table, register and counter is built from the P4Info, so P4Runtime
// reads and writes address them by the P4Info's ids. One lock (the
// pipeline lock) is held for a whole receive batch, as a pipeline
// processes packets one after the other, and for each P4Runtime write, so
// an update is atomic with respect to the packets.
//
// Ports: the switch binds Config.Addr at BasePort (the coherence port,
// the member's address in the partition map) and BasePort + 1 + s for
// each storage shard s it fronts (read ports). The program's
// switch_address table decides what each (address, port) serves.
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
