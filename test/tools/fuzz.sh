#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the main module (outside test/) for a
# while each; `make test-fuzz` runs it. Each package's instrumented test binary
# is built once (go test -c -fuzz) and run once per target from the package's
# directory, as go test would run it: `go test -fuzz` links a fresh binary for
# every target, and the build cache keeps compiled packages, not linked
# binaries.
#
# Settings (environment, the Makefile passes its own):
#   FUZZ_TIME             time per target (default 10s)
#   FUZZ_TIME_SLOW_START  time for targets that compile PostgreSQL's grammar
#                         before their first input (warmParser) (default 20s)
#   FUZZ_PARALLEL         fuzzing workers per target (default 1)
#   FUZZ_MINIMIZE_TIME    bound on minimizing a new input (default 100x)
#   FUZZ_LDFLAGS          linker flags for the test binaries (default none)
#
# A target that fails prints its whole output and the reproducer's path; the
# script then exits non-zero after running the other targets.
set -euo pipefail
cd "$(dirname "$0")/../.."

FUZZ_TIME=${FUZZ_TIME:-10s}
FUZZ_TIME_SLOW_START=${FUZZ_TIME_SLOW_START:-20s}
FUZZ_PARALLEL=${FUZZ_PARALLEL:-1}
FUZZ_MINIMIZE_TIME=${FUZZ_MINIMIZE_TIME:-100x}
FUZZ_LDFLAGS=${FUZZ_LDFLAGS:-}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log
fuzzcache=$(go env GOCACHE)/fuzz
module=$(go list -m)
failed=""

dirs=$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./test/' | xargs -r -n1 dirname | sort -u || true)
for d in $dirs; do
	pkg=$module/${d#./}
	bin=$work/$(echo "${d#./}" | tr / _).fuzz.test
	if ! go test -c -fuzz=. -ldflags="$FUZZ_LDFLAGS" -o "$bin" "$d" >"$log" 2>&1; then
		echo "fuzz $d: FAILED to build the instrumented test binary (go test -c -fuzz=. $d)"
		sed 's/^/    /' "$log"
		failed="$failed $d"
		continue
	fi
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$d"/*_test.go | sed 's/func //'); do
		before=$( (ls "$d/testdata/fuzz/$f" 2>/dev/null || true) | wc -l)
		time=$FUZZ_TIME
		if grep -h -A12 "^func $f(" "$d"/*_test.go | grep -q 'warmParser('; then
			time=$FUZZ_TIME_SLOW_START
		fi
		if (cd "$d" && "$bin" -test.paniconexit0 -test.timeout=10m -test.run='^$' -test.fuzz="^$f\$" -test.fuzztime="$time" \
			-test.parallel="$FUZZ_PARALLEL" -test.fuzzminimizetime="$FUZZ_MINIMIZE_TIME" -test.fuzzcachedir="$fuzzcache/$pkg") >"$log" 2>&1; then
			n=$( (grep -o 'execs: [0-9]*' "$log" || true) | tail -1 | sed 's/execs: //')
			if [ -n "$n" ]; then
				echo "fuzz $d $f ($time): ok, $n inputs"
			else
				echo "fuzz $d $f ($time): ok, no inputs past the seed corpus: the time went to its baseline run (a loaded machine)"
			fi
		elif [ "$( (ls "$d/testdata/fuzz/$f" 2>/dev/null || true) | wc -l)" = "$before" ] &&
			grep -q '^ *context deadline exceeded$' "$log" && ! grep -q 'Failing input written' "$log"; then
			echo "fuzz $d $f ($time): ok, $(grep -o 'execs: [0-9]*' "$log" | tail -1 | sed 's/execs: //') inputs;" \
				"go $(go env GOVERSION) ended it with 'context deadline exceeded' and no failing input:" \
				"the fuzz coordinator's end-of-fuzztime race (golang/go#75804, fixed in go1.27), not a finding"
		else
			echo "fuzz $d $f ($time): FAILED"
			sed 's/^/    /' "$log"
			echo "    reproducer: $(ls -t "$d/testdata/fuzz/$f"/* 2>/dev/null | head -1) (go test -run '$f/<file name>' $d)"
			failed="$failed $f"
		fi
	done
done
if [ -n "$failed" ]; then
	echo "fuzz targets failed:$failed"
	exit 1
fi
