#!/usr/bin/env bash
# Measures a cache node's GET hits per second on one core against
# redis-server's GETs on one core, on this machine, in one run (see
# docs/benchmarks.md). The server under test is pinned to CPU 0 and its load
# generator to CPU 1 with taskset: redis-benchmark for Redis, `distcache
# loadgen` for the node. The throughput of both is measured in alternating
# rounds, so that drift of a shared VM's speed hits both alike, and each
# round's ratio is printed. Also measures what the node's batching adds,
# hit and miss latency at concurrency 1, and, pipelined, the node's hits
# per second of its CPU (answering bundles of 16 GETs) against Redis's
# (redis-benchmark -P 16), from /proc.
#
# Usage: hack/bench-dataplane.sh [seconds] [rounds]   (default 10 s, 3 rounds)
set -euo pipefail

secs=${1:-10}
rounds=${2:-3}
cd "$(dirname "$0")/.."
for cmd in redis-server redis-benchmark taskset; do
	command -v "$cmd" >/dev/null || { echo "bench-dataplane: $cmd not found (make test-deps installs redis)" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "bench-dataplane: needs 2 CPUs" >&2; exit 1; }

go build -o bin/distcache ./cmd/distcache
bin=$PWD/bin/distcache
run=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$run"
}
trap cleanup EXIT

base=7300
"$bin" map init --out "$run/map.json" --racks 1 --shards-per-rack 1 --layer spine=1 --base-port $base >/dev/null
node_addr=127.0.0.1:$((base + 1))
backend_port=$((base + 90)) redis_port=$((base + 91))

wait_udp() { # waits until something listens on UDP port $1
	for _ in $(seq 100); do ss -Hlun "sport = :$1" | grep -q . && return 0; sleep 0.1; done
	echo "bench-dataplane: nothing listens on UDP $1" >&2; exit 1
}
wait_tcp() {
	for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "bench-dataplane: redis on $1 did not start" >&2; exit 1
}

echo "== machine: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) CPUs), $(go version | cut -d' ' -f3), $(redis-server --version | cut -d' ' -f3)"

# The node's backend (shim + redis) lives on CPU 1; it only serves the
# warm-up's misses and the miss-latency run.
taskset -c 1 redis-server --port $backend_port --save '' --appendonly no >"$run/backend.log" 2>&1 & pids+=($!)
wait_tcp $backend_port
taskset -c 1 "$bin" shim --map "$run/map.json" --shard distcache-rack-0-0 --redis 127.0.0.1:$backend_port --log-level warn >"$run/shim.log" 2>&1 & pids+=($!)
wait_udp $base

node_pid=
start_node() { # (re)starts the cache node on CPU 0 with --batch $1 and the further flags
	if [ -n "$node_pid" ]; then kill "$node_pid"; wait "$node_pid" 2>/dev/null || true; fi
	GOMAXPROCS=1 taskset -c 0 "$bin" node --map "$run/map.json" --member distcache-spine-0 --batch "$1" "${@:2}" \
		--interval 200ms --hot-threshold 2 --capacity 100000 --log-level warn >>"$run/node.log" 2>&1 &
	node_pid=$!
	pids+=($!)
	wait_udp $((base + 1))
}

lg() { taskset -c 1 "$bin" loadgen --target "$node_addr" "$@"; }
rate() { sed -n 's/.* = \([0-9]*\) replies\/s.*/\1/p'; } # replies/s from loadgen's report

taskset -c 0 redis-server --port $redis_port --save '' --appendonly no >"$run/redis.log" 2>&1 & pids+=($!)
redis_pid=$!
wait_tcp $redis_port
taskset -c 1 redis-benchmark -p $redis_port -t set -n 100000 -r 1000 -d 64 -q >/dev/null
redis_gets() { # redis-benchmark GETs/s: 64 clients, no pipelining, about $secs seconds
	taskset -c 1 redis-benchmark -p $redis_port -t get -n $((secs * 90000)) -r 1000 -d 64 -c 64 -P 1 -q |
		tr '\r' '\n' | sed -n 's/^GET: \([0-9]*\).* requests per second.*/\1/p'
}

echo "== cache node (GOMAXPROCS=1, CPU 0, recvmmsg/sendmmsg batches of 32: the default) vs redis-server (CPU 0), GETs/s"
echo "   node: GET hits, loadgen with 64 outstanding, generator batching 32; redis: redis-benchmark, 64 clients, no pipelining"
start_node 32
lg --keys 1000 --map "$run/map.json" --warmup 3s --duration 1s --concurrency 64 --batch 32 >/dev/null 2>&1
for r in $(seq "$rounds"); do
	out=$(lg --keys 1000 --duration "${secs}s" --concurrency 64 --batch 32 2>&1)
	node=$(rate <<<"$out")
	redis=$(redis_gets)
	echo "round $r: node $node/s, redis $redis/s, ratio $(awk -v a="$node" -v b="$redis" 'BEGIN{printf "%.2f", a/b}')x"
	echo "  node: $(grep latency <<<"$out")"
done
echo "== cache node, batches of 32, GET hits, 64 outstanding, generator without batching (one syscall per datagram)"
lg --keys 1000 --duration "${secs}s" --concurrency 64 --batch 1
echo "== cache node, hit latency at concurrency 1"
lg --keys 1000 --duration "${secs}s" --concurrency 1 --batch 1
echo "== cache node, miss latency at concurrency 1 (node -> shim -> redis; keys absent, replies not found)"
lg --keys 1000000 --duration "${secs}s" --concurrency 1 --batch 1
echo "== cache node reading and answering one datagram per syscall (--batch 1), GET hits, 64 outstanding, generator batching 32"
start_node 1
lg --keys 1000 --map "$run/map.json" --warmup 3s --duration "${secs}s" --concurrency 64 --batch 32
echo "== redis-server, GET latency at concurrency 1"
taskset -c 1 redis-benchmark -p $redis_port -t get -n $((secs * 10000)) -r 1000 -d 64 -c 1 -P 1 |
	tr '\r' '\n' | sed -n '/throughput summary/,$p' | head -4
echo "== pipelined: cache node answering in bundles (--bundle) vs redis-server, GETs per second of the server's CPU"
echo "   node: GET hits, loadgen bundles of 16 GETs (the datagram form of -P 16), 1,024 outstanding; redis: redis-benchmark -c 64 -P 16"
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; } # CPU time in clock ticks
hz=$(getconf CLK_TCK)
per_cpu() { awk -v n="$1" -v t="$2" -v hz="$hz" 'BEGIN{printf "%.0f", n / (t / hz)}'; }
start_node 32 --bundle
lg --keys 1000 --warmup 3s --duration 1s --concurrency 1024 --batch 32 --bundle 16 >/dev/null 2>&1 # inserts the keys again
for r in $(seq "$rounds"); do
	t0=$(ticks "$node_pid")
	out=$(lg --keys 1000 --duration "${secs}s" --concurrency 1024 --batch 32 --bundle 16 2>&1)
	t1=$(ticks "$node_pid")
	node=$(per_cpu "$(sed -n 's/.*: \([0-9]*\) replies in.*/\1/p' <<<"$out")" $((t1 - t0)))
	n=$((secs * 600000))
	t0=$(ticks "$redis_pid")
	taskset -c 1 redis-benchmark -p $redis_port -t get -n $n -r 1000 -d 64 -c 64 -P 16 -q >/dev/null
	t1=$(ticks "$redis_pid")
	redis=$(per_cpu $n $((t1 - t0)))
	echo "round $r: node $node GETs per CPU second ($(rate <<<"$out")/s, hit ratio $(sed -n 's/.*hit ratio \([0-9.]*\).*/\1/p' <<<"$out")), redis $redis, ratio $(awk -v a="$node" -v b="$redis" 'BEGIN{printf "%.2f", a/b}')x"
done
