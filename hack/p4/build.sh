#!/usr/bin/env bash
# Compile the v1model pipelines with p4c (for stratum-bmv2) into OUT, and
# write the compiler's P4Info next to each program's output, to compare
# with the P4Info kept in stratum_pipelines/p4src (ids are pinned by @id;
# the digest's id is not: see stratum_pipelines/README.md).
#
# Uses p4c from PATH, or else the p4lang/p4c container image through
# Docker. Neither exists on the project's CI machines: there it says so
# and fails.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/stratum_pipelines/p4src
out=${OUT:-$root/out/p4}
image=${P4C_IMAGE:-p4lang/p4c:latest}
programs=(v1model/cache_switch.p4 v1model/client_leaf.p4)

if command -v p4c >/dev/null 2>&1; then
	compile() { p4c "$@"; }
	in=$src
	dest=$out
elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	compile() { docker run --rm -v "$src:/src:ro" -v "$out:/out" "$image" p4c "$@"; }
	in=/src
	dest=/out
else
	echo "make p4: cannot compile the P4 programs here: no p4c on PATH and no Docker daemon." >&2
	echo "No P4 compiler, BMv2 or Stratum package exists in the registries this machine reaches;" >&2
	echo "run make p4 on a workstation with p4c (or Docker), or compile by hand as in stratum_pipelines/README.md." >&2
	exit 1
fi

mkdir -p "$out"
for p in "${programs[@]}"; do
	name=$(basename "$p" .p4)
	mkdir -p "$out/$name"
	echo "p4c: $p -> $out/$name"
	compile --target bmv2 --arch v1model --std p4-16 \
		-o "$dest/$name" --p4runtime-files "$dest/$name/$name.p4info.txt" "$in/$p"
done
