#!/usr/bin/env bash
# Speed of `ztfs stats` (scripts/bench/stats.py): every tensor of a 1 GiB
# float32 model beside `cat` of the file and beside numpy computing the same
# numbers on arrays in memory, and a Q4_K tensor beside `ztfs cat --values`.
#
#   scripts/bench-stats.sh [--gib 1] [--reps 3]
#
# Builds the release ztfs into $CARGO_TARGET_DIR (default target/), makes
# the project venv (scripts/venv.sh: numpy is the baseline, gguf-py writes
# the Q4_K file), writes about 1.2 GB under $TMPDIR (default /tmp) and
# removes it on exit. Prints a markdown table on stdout, progress on
# stderr. A benchmark, not a test: exit 0 whatever the figures, non-zero
# only if something failed to run.
set -euo pipefail

cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet --bin ztfs
venv="$(scripts/venv.sh)"
work="$(mktemp -d "${TMPDIR:-/tmp}/ztfs-bench-stats.XXXXXX")"
trap 'rm -rf "$work"' EXIT
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=scripts "$venv/bin/python" -m bench.stats \
    --ztfs "$target/release/ztfs" --work "$work" "$@"
