#!/usr/bin/env bash
# Measures a cache node's GET hits per second on one core against
# redis-server's GETs on one core, on this machine, in one run (see
# docs/benchmarks.md). The server under test is pinned to CPU 0 and its load
# generator to CPU 1 with taskset: redis-benchmark for Redis, `distcache
# loadgen` for the node. Also measures hit and miss latency at concurrency 1.
#
# Usage: hack/bench-dataplane.sh [seconds]   (default 10 per measurement)
set -euo pipefail

secs=${1:-10}
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
shim_addr=127.0.0.1:$base node_addr=127.0.0.1:$((base + 1))
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
GOMAXPROCS=1 taskset -c 0 "$bin" node --map "$run/map.json" --member distcache-spine-0 \
	--interval 200ms --hot-threshold 2 --capacity 100000 --log-level warn >"$run/node.log" 2>&1 & pids+=($!)
wait_udp $base; wait_udp $((base + 1))

lg() { taskset -c 1 "$bin" loadgen --target "$node_addr" "$@"; }
echo "== cache node (GOMAXPROCS=1, CPU 0), GET hits, 64 outstanding, generator batching 32 datagrams per syscall"
lg --keys 1000 --map "$run/map.json" --warmup 3s --duration "${secs}s" --concurrency 64 --batch 32
echo "== cache node, GET hits, 64 outstanding, generator without batching (one syscall per datagram)"
lg --keys 1000 --duration "${secs}s" --concurrency 64 --batch 1
echo "== cache node, hit latency at concurrency 1"
lg --keys 1000 --duration "${secs}s" --concurrency 1 --batch 1
echo "== cache node, miss latency at concurrency 1 (node -> shim -> redis; keys absent, replies not found)"
lg --keys 1000000 --duration "${secs}s" --concurrency 1 --batch 1 | sed 's/^/  /'

echo "== redis-server (CPU 0), GET, 64 clients, no pipelining (redis-benchmark on CPU 1)"
taskset -c 0 redis-server --port $redis_port --save '' --appendonly no >"$run/redis.log" 2>&1 & pids+=($!)
wait_tcp $redis_port
n=$((secs * 200000))
taskset -c 1 redis-benchmark -p $redis_port -t set -n 100000 -r 1000 -d 64 -q >/dev/null
taskset -c 1 redis-benchmark -p $redis_port -t get -n $n -r 1000 -d 64 -c 64 -P 1 -q
echo "== redis-server, GET latency at concurrency 1"
taskset -c 1 redis-benchmark -p $redis_port -t get -n $((secs * 10000)) -r 1000 -d 64 -c 1 -P 1 | grep -E 'throughput|avg|p50|^ +[0-9.]+ +[0-9.]+' | head -8
