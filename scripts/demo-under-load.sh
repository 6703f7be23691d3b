#!/usr/bin/env bash
# demo-under-load.sh [N] [REPO]: clone REPO's main (default: this checkout's
# repository) into a temporary directory and run `make demo` N times in a row
# (default 50) while a CPU load runs (one busy loop; LOAD_PROCS=K for K of
# them; a shared machine is load already). BRANCH picks another branch.
# Prints one line per run (with the load average) and "demo under load: K
# of N passed"; exits non-zero if any run failed, keeping the failed runs'
# output under the printed log directory. Issue 30's "done when": 50 of 50.
set -euo pipefail
N="${1:-50}"
REPO="${2:-$(git -C "$(dirname "$0")/.." rev-parse --path-format=absolute --git-common-dir)}"
BRANCH="${BRANCH:-main}"
LOAD_PROCS="${LOAD_PROCS:-1}"
WORK="$(mktemp -d)"
LOGS="$WORK/logs"
LOAD=()

cleanup() {
  for p in "${LOAD[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${LOAD[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ] || [ "${failed:-0}" != 0 ]; then
    echo "logs kept in $LOGS"
    rm -rf "$WORK/clone"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

git clone -q --branch "$BRANCH" "$REPO" "$WORK/clone"
mkdir -p "$LOGS"
echo "demo under load: $(git -C "$WORK/clone" log -1 --format='%h %s'), $N runs, $LOAD_PROCS busy loops"
make -C "$WORK/clone" build >"$LOGS/build.log" 2>&1 || { cat "$LOGS/build.log"; exit 1; }

for _ in $(seq "$LOAD_PROCS"); do
  ( while :; do :; done ) &
  LOAD+=("$!")
done

passed=0 failed=0
for i in $(seq "$N"); do
  start=$(date +%s)
  if make -C "$WORK/clone" demo >"$LOGS/run-$i.log" 2>&1; then
    passed=$((passed + 1))
    echo "run $i: ok ($(( $(date +%s) - start )) s, load average $(cut -d' ' -f1 /proc/loadavg))"
    rm -f "$LOGS/run-$i.log"
  else
    failed=$((failed + 1))
    echo "run $i: FAILED ($(( $(date +%s) - start )) s, load average $(cut -d' ' -f1 /proc/loadavg)): $(grep -m1 'DEMO FAILED' "$LOGS/run-$i.log" || tail -1 "$LOGS/run-$i.log")"
  fi
done
echo "demo under load: $passed of $N passed"
[ "$failed" = 0 ]
