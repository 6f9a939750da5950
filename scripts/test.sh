#!/usr/bin/env bash
# The whole test suite: what CI runs (.ci/run) and what the README tells you
# to run. Needs root and /dev/fuse for the mount tests (they do not skip).
set -euo pipefail
cd "$(dirname "$0")/.."

# The free disk at each step, so that a run that fills it says where.
step() { printf '\n== %s (at %d s, %s free)\n' "$*" "$SECONDS" "$(df -h --output=avail . | tail -n 1 | tr -d ' ')"; }

# A run of the suite builds each target once: incremental compilation's
# cache would save nothing and cost 1.2 GB of disk.
export CARGO_INCREMENTAL=0

# The Python tools of the interop and remote tests first (about 6 GB
# installed, torch's CUDA libraries most of it), while the disk is at its
# emptiest: pip holds a batch's wheels beside what it has installed.
step "the Python environment of the interop and remote tests"
bash scripts/venv.sh >/dev/null

step "format and lints"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
# The fuzz targets build the library without its default `remote` feature.
cargo clippy --lib --no-default-features -- -D warnings
# The Python binding (src/python.rs) builds only with its feature.
cargo clippy --lib --features python -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet

# The mutation test (tests/mutation.rs) runs here too: in a debug build an
# arithmetic overflow panics, which the test counts as a failure, so a
# second run in release (same seed, same mutants) would find nothing more.
step "unit, corpus, CLI, mount and mutation tests (debug)"
cargo test --all-targets

# With the debug binary the tests just built: a release build of every
# dependency (aws-lc-sys's C among them) would cost CI about 4 minutes to
# save about 1.5 in the check, and a debug binary panics on an arithmetic
# overflow a release one would let pass.
step "interoperability with the PyPI ztensor package"
cargo build --bin ztfs
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$PWD/$target ;; esac
ZTFS="$target/debug/ztfs" bash scripts/interop.sh

# The wheel a user installs (release, manylinux2014, the command and the
# extension module: about 5 minutes from nothing, scripts/wheel.sh prints
# its time and size), in a fresh venv.
step "the Python package: its wheel, built and tested with pytest"
bash scripts/test-python.sh

step "fuzzing (10 s per target)"
bash scripts/fuzz.sh 10

echo
# What the run left on the disk, for the next one that runs short of it.
du -sh "${CARGO_TARGET_DIR:-target}" fuzz/target "${ZTFS_VENV:-.venv}" .venv-build 2>/dev/null || true
echo "all tests passed in $SECONDS s ($(df -h --output=avail . | tail -n 1 | tr -d ' ') free)"
