// Package faultinject injects faults into real processes and real traffic
// for the fault-injection suite (test/fault): a network namespace of its own
// for each experiment, packet loss, partitions and delay between chosen
// processes on that namespace's loopback, process crashes and pauses by PID,
// and a record of every fault injected.
//
// Network faults address processes by their ports: every process of a
// standalone cluster has its own data-plane UDP port (and TCP metrics or
// Redis port) on 127.0.0.1, so "from node A to shim B" is "UDP from A's port
// to B's port". A Flow matches a protocol and a set of source and
// destination ports, or every port except a set (a client's ephemeral
// ports are "every port that is no process's").
//
// How each fault is made:
//
//   - loss and partitions: an nftables table of the fault's own in the
//     namespace (through the netlink API, github.com/google/nftables), with
//     a chain on the output hook that drops the flows' packets, with a
//     probability (numgen random) for loss; removing the table heals it. On
//     loopback every packet passes the output hook exactly once.
//   - delay: the kernels this suite runs on have no netem qdisc (nor prio,
//     fq_codel, sfq or drr) and no nftables queue expression, so delay is
//     made in userspace: the fault's nftables chain marks the flows'
//     packets, a legacy iptables rule queues packets with that mark to an
//     NFQUEUE (the xtables NFQUEUE target, with --queue-bypass), and a
//     listener here (github.com/florianl/go-nfqueue) holds each packet for
//     the delay and then accepts it. Verdicts are given out of order, so
//     every packet is delayed by the same amount and none waits for an
//     earlier one.
//   - crashes and pauses: SIGKILL, SIGSTOP and SIGCONT to a PID.
//
// Everything needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); Supported says
// whether this process may create namespaces.
package faultinject
