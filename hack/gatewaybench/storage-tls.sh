#!/usr/bin/env bash
# CPU per request through the gateway when the shards' Redis needs a
# password and serves TLS only (spec.storage.auth and storage.tls), beside
# the same cluster without them: bench-gateway's cluster
# (hack/gatewaybench/cluster.yaml, direct reads and writes), run by each
# distcache binary given, redis-benchmark SET and GET through the gateway
# (50 connections, no pipelining, 100,000 keys, REQUESTS each, REPS runs),
# and the CPU time of the gateway and of every process of the cluster from
# /proc. With PERF=1 the last GET run of each records the gateway with
# `perf record -g` into OUT/perf-<config>-<n>.data. CONFIGS (default
# "tls plain") and TESTS (default "set get") choose what runs.
#
#   hack/gatewaybench/storage-tls.sh [distcache ...]   (default bin/distcache)
set -euo pipefail

out=${OUT:-out/storage-tls}
requests=${REQUESTS:-200000}
reps=${REPS:-3}
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(bin/distcache)
mkdir -p "$out/secrets/tls" "$out/secrets/auth"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

# A CA and a certificate for 127.0.0.1, and a password.
tls=$out/secrets/tls
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj /CN=storage-tls-ca -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
	-keyout "$tls/tls.key" -out "$tls/tls.csr" 2>/dev/null
openssl x509 -req -in "$tls/tls.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial -days 1 \
	-extfile <(printf 'subjectAltName=IP:127.0.0.1\n') -out "$tls/tls.crt" 2>/dev/null
printf 'storage-tls-bench' >"$out/secrets/auth/password"
sed 's/^    appendOnly: disabled$/&\n    auth: {secretName: redis-login}\n    tls: {certSecretName: redis-cert}/' \
	"$here/cluster.yaml" >"$out/cluster-tls.yaml"
grep -q certSecretName "$out/cluster-tls.yaml"

# ticks is the CPU time (user + system, clock ticks) of the PIDs given.
ticks() {
	local sum=0 pid
	for pid in "$@"; do
		sum=$((sum + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
	done
	echo "$sum"
}

# run BIN CONFIG: one cluster, its runs, a line each.
run() {
	local bin=$1 config=$2 n=$3 file=$here/cluster.yaml args=()
	if [ "$config" = tls ]; then
		file=$out/cluster-tls.yaml
		args=(--redis-auth-dir "$out/secrets/auth" --redis-tls-dir "$tls")
	fi
	local rundir=$out/run-$config-$n
	"$bin" up -f "$file" --run-dir "$rundir" "${args[@]}" >"$out/up-$config-$n.log" 2>&1
	trap '"$bin" down --run-dir "$rundir" >/dev/null 2>&1' RETURN
	local status port gateway pids
	status=$("$bin" status --run-dir "$rundir" --json)
	port=$(python3 -c 'import json,sys; print([p["addr"] for p in json.load(sys.stdin)["processes"] if p["kind"] == "gateway"][0].rsplit(":", 1)[1])' <<<"$status")
	gateway=$(python3 -c 'import json,sys; print([p["pid"] for p in json.load(sys.stdin)["processes"] if p["kind"] == "gateway"][0])' <<<"$status")
	read -r -a pids <<<"$(python3 -c 'import json,sys; print(" ".join(str(p["pid"]) for p in json.load(sys.stdin)["processes"] if p.get("pid")))' <<<"$status")"
	local test rep perf a b ca cb rate hz
	hz=$(getconf CLK_TCK)
	for test in ${TESTS:-set get}; do
		for rep in $(seq "$reps"); do
			perf=
			if [ "${PERF:-0}" = 1 ] && [ "$test" = get ] && [ "$rep" = "$reps" ]; then
				perf record -F 499 -g -p "$gateway" -o "$out/perf-$config-$n.data" >/dev/null 2>&1 &
				perf=$!
			fi
			a=$(ticks "$gateway")
			ca=$(ticks "${pids[@]}")
			rate=$(timeout 300 redis-benchmark -p "$port" -c 50 -n "$requests" -r 100000 -t "$test" -q |
				tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1)
			b=$(ticks "$gateway")
			cb=$(ticks "${pids[@]}")
			if [ -n "$perf" ]; then
				kill -INT "$perf"
				wait "$perf" || true
			fi
			printf '%-28s %-5s %-4s run %s  %-28s gateway %6.2f µs/request  all processes %6.2f µs/request%s\n' \
				"$bin" "$config" "$test" "$rep" "$rate" \
				"$(echo "($b - $a) * 1000000 / $hz / $requests" | bc -l)" \
				"$(echo "($cb - $ca) * 1000000 / $hz / $requests" | bc -l)" "${perf:+ (perf)}"
		done
	done
}

n=0
for bin in "${bins[@]}"; do
	for config in ${CONFIGS:-tls plain}; do
		n=$((n + 1))
		run "$bin" "$config" "$n"
	done
done
