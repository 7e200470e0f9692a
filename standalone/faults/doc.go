// Package faults is DistCache's fault injection for local clusters: it
// makes real faults in real processes and real traffic on one host. It is
// a feature of standalone mode, used in two places:
//
//   - `distcache bench --fail-node NAME@T --fail-mode slow` (and the
//     control API's POST /v1/processes/{name}/slow) delays every datagram
//     a cache node or shim sends. The cluster's own process installs the
//     delay on the host's loopback (CurrentNamespace and DelayFlows) and
//     removes it on unslow or when the cluster stops.
//   - The local fault suite (test/fault; `make chaos-local` runs many
//     random schedules) runs a cluster in a network namespace of its own
//     and injects every fault this package makes: packet loss, one-way and
//     two-way partitions, delay, crashes and pauses. A Recorder keeps a
//     record of each fault for the suite's report.
//
// Nothing here acts unless it is asked: a cluster delays nothing until a
// process is slowed, and only the fault suite creates namespaces or drops
// packets. Faults need root (CAP_NET_ADMIN and CAP_SYS_ADMIN); delays also
// need iptables-legacy (`make iptables`). Supported says whether this
// process may create namespaces.
//
// Network faults address processes by their ports: every process of a
// standalone cluster has its own data-plane UDP port (and TCP metrics or
// Redis port) on 127.0.0.1, so "from node A to shim B" is "UDP from A's
// port to B's port". A Flow matches a protocol and a set of source and
// destination ports, or every port except a set (a client's ephemeral
// ports are "every port that is no process's").
//
// How each fault is made:
//
//   - loss and partitions (Drop): an nftables table of the fault's own in
//     the namespace (through the netlink API, github.com/google/nftables),
//     with a chain on the output hook that drops the flows' packets, with
//     a probability (numgen random) for loss; removing the table heals it.
//     On loopback every packet passes the output hook exactly once.
//   - delay (DelayFlows): the kernels this runs on have no netem qdisc
//     (nor prio, fq_codel, sfq or drr) and no nftables queue expression,
//     so delay is made in userspace: the fault's nftables chain marks the
//     flows' packets, a legacy iptables rule queues packets with that mark
//     to an NFQUEUE (the xtables NFQUEUE target, with --queue-bypass), and
//     a listener here (github.com/florianl/go-nfqueue) holds each packet
//     for the delay and then accepts it. Verdicts are given out of order,
//     so every packet is delayed by the same amount and none waits for an
//     earlier one.
//   - crashes and pauses (Kill, Pause, Resume): SIGKILL, SIGSTOP and
//     SIGCONT to a PID.
package faults
