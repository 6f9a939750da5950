#!/usr/bin/env bash
# Decode-speed benchmark of zt.zstd-seekable/1 parts read through a ztfs
# mount, beside the zstd command line decoding the same stored bytes.
#
#   scripts/bench-zstd.sh [--size 512M] [--small-size 64M] [--reps 5]
#                         [--preads 2000] [--only seq,random,concurrent]
#                         [--mount-args "--cache-mib 8"]
#
# Needs root (FUSE mounts), zstd, dd and python3. Builds the release ztfs
# into $CARGO_TARGET_DIR (default target/), makes the project venv
# (scripts/venv.sh: the PyPI ztensor package writes the .zt file, numpy the
# data), writes its files to a temporary directory under $TMPDIR (default
# /tmp; about 1.6 x size; not tmpfs, for the figures to mean anything), and
# removes it and every mount in it on exit. Prints a markdown table on
# stdout, progress on stderr. A benchmark, not a test: exit 0 whatever the
# figures, non-zero only if something failed to run.
set -euo pipefail

cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
command -v zstd >/dev/null || { echo "bench-zstd: no zstd on PATH" >&2; exit 2; }
cargo build --release --quiet --bin ztfs
venv="$(scripts/venv.sh)"

work="$(mktemp -d "${TMPDIR:-/tmp}/ztfs-bench-zstd.XXXXXX")"
cleanup() {
    # bench/zstd.py unmounts what it mounted; this catches what a killed
    # run left behind. Each daemon exits once its mount is gone.
    local mnt
    while read -r _ _ _ _ mnt _; do
        case "$mnt" in "$work"/*) umount -l "$mnt" 2>/dev/null || true ;; esac
    done </proc/self/mountinfo
    rm -rf "$work"
}
trap cleanup EXIT

PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=scripts "$venv/bin/python" -m bench.zstd --ztfs "$target/release/ztfs" --work "$work" "$@" &
bench=$!
# On a signal, let the benchmark unmount what it mounted, then clean up.
trap 'kill -TERM "$bench" 2>/dev/null; wait "$bench"; exit 130' INT TERM
wait "$bench"
