#!/usr/bin/env bash
# Speed of a quantized tensor's values (scripts/bench/dequant.py): `ztfs cat
# --values` of a Q4_K tensor beside gguf-py's quants.dequantize, its
# data.npy through a mount beside an F32 tensor's data.npy in the same
# mount, and the dequantizer on one core beside a memory copy.
#
#   scripts/bench-dequant.sh [--rows 4096] [--cols 8192] [--reps 5]
#
# Needs root (FUSE mounts), taskset and python3. Builds the release ztfs
# into $CARGO_TARGET_DIR (default target/), makes the project venv
# (scripts/venv.sh: gguf-py writes the file and is the baseline), writes
# about 170 MB under $TMPDIR (default /tmp) and removes it and every
# mount in it on exit. Prints a markdown table on stdout, progress on
# stderr. A benchmark, not a test: exit 0 whatever the figures, non-zero
# only if something failed to run.
set -euo pipefail

cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
command -v taskset >/dev/null || { echo "bench-dequant: no taskset on PATH" >&2; exit 2; }
cargo build --release --quiet --bin ztfs
venv="$(scripts/venv.sh)"

work="$(mktemp -d "${TMPDIR:-/tmp}/ztfs-bench-dequant.XXXXXX")"
cleanup() {
    local mnt
    while read -r _ _ _ _ mnt _; do
        case "$mnt" in "$work"/*) umount -l "$mnt" 2>/dev/null || true ;; esac
    done </proc/self/mountinfo
    rm -rf "$work"
}
trap cleanup EXIT

PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=scripts "$venv/bin/python" -m bench.dequant --ztfs "$target/release/ztfs" --work "$work" "$@" &
bench=$!
trap 'kill -TERM "$bench" 2>/dev/null; wait "$bench"; exit 130' INT TERM
wait "$bench"
