#!/usr/bin/env bash
# coverfloors.sh FLOORS PERCENT: checks merged per-package coverage against
# the floors. FLOORS has one "import/path  percent" per line (# comments);
# PERCENT is the output of `go tool covdata percent`. Prints one row per
# package (figure, floor, verdict) and exits 1 when a package is below its
# floor or a floor names a package that was not measured. A measured package
# with no floor is shown as such and does not fail (give it one).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: coverfloors.sh FLOORS PERCENT" >&2; exit 2; }
awk '
  FNR == NR {
    if ($0 ~ /^[[:space:]]*(#|$)/) next
    if (NF != 2 || $2 !~ /^[0-9]+(\.[0-9]+)?$/) { printf "%s:%d: want \"package percent\", got %s\n", FILENAME, FNR, $0; bad = 1; next }
    floor[$1] = $2; next
  }
  /coverage:/ {
    # covdata prints a package without statements (integrations/pi, only
    # embedded files) with no figure and no line break: the package a
    # figure belongs to is the last one named before it.
    pct = $0; sub(/.*coverage: /, "", pct); sub(/%.*/, "", pct)
    pkg = ""
    for (i = 1; i <= NF && $i != "coverage:"; i++) if ($i ~ /\//) pkg = $i
    got[pkg] = pct; order[++n] = pkg
  }
  END {
    if (bad) exit 2
    printf "%-52s %7s %7s\n", "package", "merged", "floor"
    for (i = 1; i <= n; i++) {
      p = order[i]; short = p; sub(/^github.com\/intercom-dev\/intercom\//, "", short)
      if (!(p in floor)) { printf "%-52s %6.1f%% %7s  no floor\n", short, got[p], "-"; continue }
      verdict = "ok"
      if (got[p] + 0 < floor[p] + 0) { verdict = "BELOW FLOOR"; fail++ }
      printf "%-52s %6.1f%% %6.1f%%  %s\n", short, got[p], floor[p], verdict
    }
    for (p in floor) if (!(p in got)) { printf "%-52s %7s %6.1f%%  NOT MEASURED (stale floor?)\n", p, "-", floor[p]; fail++ }
    if (fail) { printf "coverage: %d package(s) below their floor or not measured\n", fail; exit 1 }
    print "coverage: every package at or above its floor"
  }
' "$1" "$2"
