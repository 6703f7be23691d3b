#!/usr/bin/env bash
# Lays out release archives the way goreleaser does, from the binaries that
# `make cross` put in bin/OS-ARCH/:
#   $DIST/intercom_<version>_<os>_<arch>.tar.gz   (the four binaries, README.md, docs/)
#   $DIST/intercom_<version>_checksums.txt        (sha256sum format)
# <version> is VERSION without a leading "v", as goreleaser's {{ .Version }}.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${VERSION:?}" "${DIST:?}" "${TARGETS:?}" "${BINS:?}"
version=${VERSION#v}
rm -rf "$DIST"
mkdir -p "$DIST"
out=$(cd "$DIST" && pwd)
sum() { if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi; }
archives=()
for t in $TARGETS; do
	os=${t%/*} arch=${t#*/}
	name="intercom_${version}_${os}_${arch}"
	stage=$(mktemp -d)
	for b in $BINS; do cp "bin/$os-$arch/$b" "$stage/"; done
	cp README.md "$stage/"
	cp -R docs "$stage/docs"
	(cd "$stage" && tar -czf "$out/$name.tar.gz" *)
	rm -rf "$stage"
	archives+=("$name.tar.gz")
done
(cd "$out" && sum "${archives[@]}" >"intercom_${version}_checksums.txt")
echo "wrote ${#archives[@]} archives and intercom_${version}_checksums.txt to $DIST/"
