#!/usr/bin/env bash
# kafka-delta-ingest (github.com/delta-io/kafka-delta-ingest) for the interop tests of
# tools/readkafka/kdi_it_test.go (make interop-kdi). It is not on crates.io: its source comes
# from git at a pinned commit; its dependencies (deltalake-core, rdkafka with librdkafka built
# by rdkafka-sys through cmake, …) come from crates.io through cargo.
#
#   scripts/kdi.sh build   clone (once) and build; prints the binary's path on stdout
#   scripts/kdi.sh path    prints the binary's path if it is built (exit 1 if not)
#
# The build takes long (≈620 crates, datafusion among them): tens of minutes on a few cores,
# which is why it is not part of make test.
#
# Environment: STREAMKIT_KDI_SRC (a checkout to build instead of cloning),
# STREAMKIT_KDI_REPO (git URL, default the GitHub repository), STREAMKIT_KDI_COMMIT (the pin),
# STREAMKIT_KDI_JOBS (cargo -j, default 1), STREAMKIT_KDI_FEATURES (default azure: its
# build.rs refuses to build without one of its object-store features, s3 or azure; azure pulls
# in less than s3's AWS SDK, and the tests' tables are local), CARGO (default cargo, or
# ~/.cargo/bin/cargo).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.it/kdi"
REPO="${STREAMKIT_KDI_REPO:-https://github.com/delta-io/kafka-delta-ingest}"
COMMIT="${STREAMKIT_KDI_COMMIT:-c6d42def1f65badaac417203591d2d47daf5f0d8}"
SRC="${STREAMKIT_KDI_SRC:-$DIR/src}"
CARGO="${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}"
# The dev profile without debug info: the tests need a working binary, not a fast one, and
# the release profile's fat LTO over datafusion doubles the build time.
BIN="$SRC/target/debug/kafka-delta-ingest"

case "${1:-}" in
build)
	if [ -z "${STREAMKIT_KDI_SRC:-}" ] && [ ! -d "$SRC/.git" ]; then
		mkdir -p "$DIR"
		git clone -q "$REPO" "$SRC" >&2
		git -C "$SRC" checkout -q "$COMMIT" >&2
	fi
	(cd "$SRC" && CARGO_PROFILE_DEV_DEBUG=0 nice -n 5 "$CARGO" build -j "${STREAMKIT_KDI_JOBS:-1}" \
		--features "${STREAMKIT_KDI_FEATURES:-azure}" >&2)
	echo "$BIN"
	;;
path)
	[ -x "$BIN" ] && echo "$BIN"
	;;
*)
	echo "usage: scripts/kdi.sh build|path" >&2
	exit 2
	;;
esac
