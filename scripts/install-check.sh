#!/usr/bin/env bash
# CI: the README's two install commands, run from this clone into temporary
# prefixes, then `version` on every binary each of them installed.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bins="intercom intercom-hook intercom-broker agent-runs intercom-bridge"

make install PREFIX="$tmp/prefix"
GOBIN="$tmp/gobin" go install ./cmd/...

want=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
for b in $bins; do
	line=$("$tmp/prefix/bin/$b" version)
	case "$line" in
	"$b $want (commit "*) echo "make install: $line" ;;
	*) echo "make install: $b version printed '$line', want '$b $want (commit …)'" >&2; exit 1 ;;
	esac
	line=$("$tmp/gobin/$b" version)
	case "$line" in
	"$b "*" (commit "*", go"*) echo "go install:   $line" ;;
	*) echo "go install: $b version printed '$line'" >&2; exit 1 ;;
	esac
done
