#!/usr/bin/env bash
# The whole test suite N times in a row (default 10) while another process keeps one
# core busy: a suite whose timing claims hold under any scheduling passes every run.
# Builds the tests once, stops at the first failing run and names its tests and the
# run, and ends with e.g. "stress: 10 of 10 runs passed in 23m10s".
#
# usage: scripts/stress-tests.sh [N]      (make stress N=...)
set -u
n=${1:-10}
case $n in
'' | *[!0-9]* | 0)
    echo "stress-tests: N '$n' is not a run count: give a whole number ≥ 1" >&2
    exit 2
    ;;
esac
cargo=${CARGO:-cargo}
cd "$(dirname "$0")/.." || exit 1

hms() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

echo "stress: building the tests once"
$cargo test --workspace --locked --no-run -q || exit 1

log=$(mktemp "${TMPDIR:-/tmp}/numalab-stress.XXXXXX")
# The busy loop checks that this script is alive, so it ends with it even when the
# script is killed with SIGKILL and no trap runs.
parent=$$
(while kill -0 "$parent" 2>/dev/null; do :; done) &
busy=$!
trap 'kill "$busy" 2>/dev/null; wait "$busy" 2>/dev/null; rm -f "$log"' EXIT
trap 'exit 130' INT TERM HUP
echo "stress: one core kept busy by process $busy; $n runs of '$cargo test --workspace --locked'"

start=$(date +%s)
for i in $(seq 1 "$n"); do
    t0=$(date +%s)
    if ! $cargo test --workspace --locked >"$log" 2>&1; then
        # "Running tests/x.rs (…)" names the binary; "test name ... FAILED" the test.
        failed=$(awk '/^ *(Running|Doc-tests) / { bin = $2 }
            / \.\.\. FAILED$/ { print "  " bin ": " $2 }' "$log")
        echo "stress: run $i of $n FAILED after $(hms $(($(date +%s) - start)))"
        if [ -n "$failed" ]; then
            echo "failing tests:"
            echo "$failed"
        fi
        echo "--- the run's output, from the first failure:"
        sed -n '/^failures:$/,$p' "$log" | head -80
        [ -s "$log" ] && ! grep -q '^failures:$' "$log" && tail -40 "$log"
        exit 1
    fi
    echo "stress: run $i of $n passed in $(hms $(($(date +%s) - t0)))"
done
echo "stress: $n of $n runs passed in $(hms $(($(date +%s) - start)))"
