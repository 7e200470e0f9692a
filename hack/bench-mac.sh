#!/usr/bin/env bash
# Measures what the data-plane MAC costs a cache node's hit path: GET hits
# per second of one node on one core (CPU 0, GOMAXPROCS=1), loadgen on CPU
# 1, for three builds in alternating rounds so that drift of a shared VM's
# speed hits all alike:
#   base: the tree at $BASE_REV (default 977d012, before authentication)
#   off:  this tree, no data-plane key
#   on:   this tree, shim and node with a data-plane key
# GETs carry no MAC, so all three should serve alike (see docs/benchmarks.md).
#
# Usage: hack/bench-mac.sh [seconds] [rounds]   (default 5 s, 3 rounds)
set -euo pipefail

secs=${1:-5}
rounds=${2:-3}
base_rev=${BASE_REV:-977d012}
cd "$(dirname "$0")/.."
for cmd in redis-server taskset; do
	command -v "$cmd" >/dev/null || { echo "bench-mac: $cmd not found" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "bench-mac: needs 2 CPUs" >&2; exit 1; }

run=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$run"
}
trap cleanup EXIT

go build -o "$run/new" ./cmd/distcache
mkdir "$run/base-src"
git archive "$base_rev" | tar -x -C "$run/base-src"
(cd "$run/base-src" && go build -o "$run/base" ./cmd/distcache)
mkdir -m 700 "$run/key"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$run/key/current"

wait_udp() {
	for _ in $(seq 100); do ss -Hlun "sport = :$1" | grep -q . && return 0; sleep 0.1; done
	echo "bench-mac: nothing listens on UDP $1" >&2; exit 1
}
wait_tcp() {
	for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "bench-mac: redis on $1 did not start" >&2; exit 1
}

echo "== machine: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) CPUs), $(go version | cut -d' ' -f3), base $base_rev, this tree $(git rev-parse --short HEAD)"
redis_port=7490
taskset -c 1 redis-server --port $redis_port --save '' --appendonly no >"$run/redis.log" 2>&1 & pids+=($!)
wait_tcp $redis_port

variants=(base off on)
declare -A port bin keyargs
for i in "${!variants[@]}"; do
	v=${variants[$i]}
	port[$v]=$((7400 + 10 * i))
	bin[$v]=$run/new
	keyargs[$v]=
	[ "$v" = base ] && bin[$v]=$run/base
	[ "$v" = on ] && keyargs[$v]="--data-plane-key-dir=$run/key"
	"$run/new" map init --out "$run/map-$v.json" --racks 1 --shards-per-rack 1 --layer spine=1 --base-port "${port[$v]}" >/dev/null
	# shellcheck disable=SC2086 # keyargs is one flag or none
	taskset -c 1 "${bin[$v]}" shim --map "$run/map-$v.json" --shard distcache-rack-0-0 --redis 127.0.0.1:$redis_port \
		--log-level warn ${keyargs[$v]} >"$run/shim-$v.log" 2>&1 & pids+=($!)
	wait_udp "${port[$v]}"
done

echo "== cache node GET hits/s (GOMAXPROCS=1, CPU 0), loadgen with 64 outstanding, batches of 32, ${secs}s per run"
for r in $(seq "$rounds"); do
	line="round $r:"
	for v in "${variants[@]}"; do
		# shellcheck disable=SC2086
		GOMAXPROCS=1 taskset -c 0 "${bin[$v]}" node --map "$run/map-$v.json" --member distcache-spine-0 \
			--interval 200ms --hot-threshold 2 --capacity 100000 --log-level warn ${keyargs[$v]} >>"$run/node-$v.log" 2>&1 &
		node=$!
		wait_udp $((port[$v] + 1))
		# shellcheck disable=SC2086
		taskset -c 1 "$run/new" loadgen --target 127.0.0.1:$((port[$v] + 1)) --keys 1000 --map "$run/map-$v.json" ${keyargs[$v]} \
			--warmup 3s --duration 1s --concurrency 64 --batch 32 >/dev/null 2>&1
		out=$(taskset -c 1 "$run/new" loadgen --target 127.0.0.1:$((port[$v] + 1)) --keys 1000 --duration "${secs}s" --concurrency 64 --batch 32 2>&1)
		kill "$node"; wait "$node" 2>/dev/null || true
		rate=$(sed -n 's/.* = \([0-9]*\) replies\/s; hit ratio \([0-9.]*\).*/\1 (hit ratio \2)/p' <<<"$out")
		line="$line $v $rate;"
	done
	echo "$line"
done
