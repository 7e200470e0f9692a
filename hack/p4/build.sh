#!/usr/bin/env bash
# Compile the pipelines into OUT, and write each compiler's P4Info next
# to its program's output, to compare with the P4Info kept in
# stratum_pipelines/p4src (ids are pinned by @id; the digest's id is not:
# see stratum_pipelines/README.md):
# - the v1model programs with p4c (for stratum-bmv2): p4c from PATH, or
#   else the p4lang/p4c container image through Docker;
# - the TNA programs with bf-p4c (for Tofino under stratum-bf): bf-p4c
#   from PATH or from $SDE_INSTALL/bin (Intel's P4 Studio SDE; there is
#   no public image of it), packed into stratum-bf's device config by
#   Stratum's bf_pipeline_builder when it is on PATH.
#
# Neither compiler exists on the project's CI machines: there it says so
# for each and fails.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/stratum_pipelines/p4src
out=${OUT:-$root/out/p4}
image=${P4C_IMAGE:-p4lang/p4c:latest}
v1model_programs=(v1model/cache_switch.p4 v1model/client_leaf.p4)
tna_programs=(tna/cache_switch.p4 tna/client_leaf.p4)
failed=0

mkdir -p "$out"

# v1model with p4c.
p4c_dest=
if command -v p4c >/dev/null 2>&1; then
	p4c_compile() { p4c "$@"; }
	p4c_in=$src
	p4c_dest=$out
elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	p4c_compile() { docker run --rm -v "$src:/src:ro" -v "$out:/out" "$image" p4c "$@"; }
	p4c_in=/src
	p4c_dest=/out
else
	echo "make p4: cannot compile the v1model programs here: no p4c on PATH and no Docker daemon." >&2
	failed=1
fi
if [[ -n $p4c_dest ]]; then
	for p in "${v1model_programs[@]}"; do
		name=v1model-$(basename "$p" .p4)
		mkdir -p "$out/$name"
		echo "p4c: $p -> $out/$name"
		p4c_compile --target bmv2 --arch v1model --std p4-16 \
			-o "$p4c_dest/$name" --p4runtime-files "$p4c_dest/$name/$(basename "$p" .p4).p4info.txt" "$p4c_in/$p"
	done
fi

# TNA with bf-p4c.
bf_p4c=
if command -v bf-p4c >/dev/null 2>&1; then
	bf_p4c=bf-p4c
elif [[ -n ${SDE_INSTALL:-} && -x $SDE_INSTALL/bin/bf-p4c ]]; then
	bf_p4c=$SDE_INSTALL/bin/bf-p4c
else
	echo "make p4: cannot compile the TNA programs here: no bf-p4c on PATH or in \$SDE_INSTALL/bin." >&2
	failed=1
fi
if [[ -n $bf_p4c ]]; then
	for p in "${tna_programs[@]}"; do
		name=tna-$(basename "$p" .p4)
		mkdir -p "$out/$name"
		echo "bf-p4c: $p -> $out/$name"
		# --p4runtime-force-std-externs: registers, counters and the
		# digest as standard P4Runtime objects, as Stratum and the
		# controller address them, not as Tofino externs.
		"$bf_p4c" --target tofino --arch tna --std p4-16 --p4runtime-force-std-externs \
			-o "$out/$name" --p4runtime-files "$out/$name/$(basename "$p" .p4).p4info.txt" "$src/$p"
		# stratum-bf's device config: bf_pipeline_builder (in Stratum's
		# stratumproject/stratum-tools image) packs tofino.bin and
		# context.json as the .conf names them.
		confs=("$out/$name"/*.conf)
		if command -v bf_pipeline_builder >/dev/null 2>&1 && [[ -f ${confs[0]} ]]; then
			bf_pipeline_builder -p4c_conf_file="${confs[0]}" \
				-bf_pipeline_config_binary_file="$out/$name/device_config.pb.bin"
		else
			echo "make p4: $out/$name is not packed for stratum-bf: no bf_pipeline_builder on PATH (docs/switches.md)." >&2
		fi
	done
fi

if [[ $failed -ne 0 ]]; then
	echo "No P4 compiler, BMv2, Tofino SDE or Stratum package exists in the registries this machine reaches;" >&2
	echo "run make p4 on a workstation with p4c (or Docker) and Intel's SDE (bf-p4c), or compile by hand as in" >&2
	echo "stratum_pipelines/README.md." >&2
	exit 1
fi
