#!/usr/bin/env bash
# Fuzzes every target given as NAME:PACKAGE for FUZZTIME each (make
# fuzz-ci, part of make test). A target fails on a crasher: its input's
# path is printed. Go 1.26's fuzz coordinator can report a bare "context
# deadline exceeded" when -fuzztime ends while a worker is mid-input
# (go.dev/issue/75804, fixed in Go 1.27): such a run wrote no input and
# found nothing, so the target runs once more, and fails only if that
# run fails too.
set -u
go=${GO:-go}
fuzztime=${FUZZTIME:?}
minimize=${FUZZMINIMIZE:?}

# run fuzzes one target into log; its exit status is go test's.
run() {
	"$go" test -run '^$' -fuzz "^$1\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$2" >"$3" 2>&1
}

# deadline_race says whether log is the coordinator's race alone: the
# deadline error and no written input, panic or test error.
deadline_race() {
	grep -q '^    context deadline exceeded$' "$1" &&
		! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$1"
}

failed=
for t in "$@"; do
	name=${t%%:*}
	pkg=${t#*:}
	log=$(mktemp)
	echo "fuzz-ci: $name $pkg ($fuzztime)"
	if ! run "$name" "$pkg" "$log"; then
		if deadline_race "$log"; then
			echo "fuzz-ci: $name: the fuzz coordinator's deadline race (go.dev/issue/75804), no input found; running it again"
			run "$name" "$pkg" "$log" || { cat "$log"; failed="$failed $name"; }
		else
			cat "$log"
			failed="$failed $name"
		fi
		sed -n "s|.*Failing input written to \(testdata/fuzz/[^ ]*\).*|fuzz-ci: $name failed on the input $pkg\1|p" "$log"
	fi
	rm -f "$log"
done
if [ -n "$failed" ]; then
	echo "fuzz-ci: failed:$failed"
	exit 1
fi
