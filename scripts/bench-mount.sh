#!/usr/bin/env bash
# Read-speed benchmark of a ztfs mount beside a bare fuser server
# (examples/bare_server.rs) and native reads of the backing file.
#
#   scripts/bench-mount.sh [--size 1G] [--reps 5] [--slow-reps 3]
#                          [--objects 1000,100000,1000000] [--ls-objects 100000,1000000]
#                          [--only default,views,direct,random,metadata,passthrough,remote]
#                          [--format zt|hurray|safetensors|gguf]
#
# --format: the big file's container (scripts/bench/formats.py writes it),
# the tensor's bytes at 64 KiB in every one so the baselines are unchanged;
# `ztfs check` must accept it and big/data must be its bytes, or the run
# fails. gguf (an f32 tensor) needs a --size that is a multiple of 4.
#
# Needs root (FUSE mounts, /sys/class/bdi), dd, ls and python3 (standard
# library only). Builds release binaries into $CARGO_TARGET_DIR (default
# /tmp/bench-target), writes its files to a temporary directory under
# $TMPDIR (default /tmp; about size + 150 MB; it must not be tmpfs for the
# figures to mean anything), and removes it and every mount in it on exit.
# Prints a markdown table on stdout, progress on stderr. A benchmark, not a
# test: exit 0 whatever the figures, non-zero only if something failed to run.
#
# `--only passthrough` measures kernel passthrough (bench/passthrough.py):
# memory clones of the big file, reflink clones of a copy of it on an XFS
# filesystem made in a loop file in the work directory (needs mkfs.xfs, apt
# xfsprogs), and a zt.zstd-seekable/1 part read through its memory clone
# (written by bench/zstd.py's generator in the project venv, made by
# scripts/venv.sh on first use). It is not in the default set: about 3
# minutes at --size 1G and 5 reps (2 with 3 reps, 1 at 512M), about 2 x size
# more disk, and up to 2 x size of memfds at once beside the page cache.
#
# `--only remote` reads the big file by URL from nginx on 127.0.0.1
# (bench/remote.py; apt nginx-light, curl) beside curl fetching the same
# range and a local mount of the same file.
set -euo pipefail

cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/bench-target}"

examples=(--example bare_server --example xxh3)
gen=()
if [[ -f examples/gen_manifest.rs ]]; then
    examples+=(--example gen_manifest)
    gen=(--gen-manifest "$CARGO_TARGET_DIR/release/examples/gen_manifest")
fi
cargo build --release --quiet --bin ztfs "${examples[@]}"

work="$(mktemp -d "${TMPDIR:-/tmp}/ztfs-bench.XXXXXX")"
cleanup() {
    # bench/mount.py unmounts what it mounted; this catches what a killed
    # run left behind. Each daemon exits once its mount is gone. The
    # passthrough section's XFS filesystem is among them: mounted with -o
    # loop, its loop device goes with its last user.
    local mnt
    while read -r _ _ _ _ mnt _; do
        case "$mnt" in "$work"/*) umount -l "$mnt" 2>/dev/null || true ;; esac
    done </proc/self/mountinfo
    rm -rf "$work"
}
trap cleanup EXIT

PYTHONPATH=scripts python3 -m bench.mount \
    --ztfs "$CARGO_TARGET_DIR/release/ztfs" \
    --bare "$CARGO_TARGET_DIR/release/examples/bare_server" \
    --xxh3 "$CARGO_TARGET_DIR/release/examples/xxh3" \
    "${gen[@]}" --work "$work" "$@" &
bench=$!
# On a signal, let the benchmark unmount what it mounted, then clean up.
trap 'kill -TERM "$bench" 2>/dev/null; wait "$bench"; exit 130' INT TERM
wait "$bench"
