#!/usr/bin/env bash
# The whole test suite: what CI runs (.ci/run) and what the README tells you
# to run. Needs root and /dev/fuse for the mount tests (they do not skip).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS"; }

step "format and lints"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
# The fuzz targets build the library without its default `remote` feature.
cargo clippy --lib --no-default-features -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet

step "unit, corpus, CLI and mount tests (debug)"
cargo test --all-targets

step "mutation test (release)"
cargo test --release --test mutation

step "interoperability with the PyPI ztensor package"
bash scripts/interop.sh

step "fuzzing (15 s per target)"
bash scripts/fuzz.sh 15

echo
echo "all tests passed in $SECONDS s"
