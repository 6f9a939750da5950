#!/usr/bin/env bash
# Write-speed benchmark of `ztfs pack` (a safetensors model to a zTensor
# file) beside `cp` + `sync` and `zstd -3 -T1` on the same bytes.
#
#   scripts/bench-pack.sh [--size 1G] [--reps 5] [--seed 1]
#
#   ZTFS=path/to/ztfs   use this binary instead of building one
#
# What is measured and how (bench/pack.py says it in full): the source, a
# safetensors file of about --size bytes (a few hundred bf16 and f32
# tensors of normal values, which zstd shrinks by 10-20% as it does real
# weights), is written with numpy, ml_dtypes and safetensors from the
# project venv, then read once so that every timed run reads it from a warm
# page cache. Each repetition runs, in an order that rotates, each to a
# fresh destination (removed and synced, untimed, before each run):
# `cp SRC DST && sync DST` (pack fsyncs its output before the rename, so
# this is the copy it must be compared with), plain `cp` (context),
# `ztfs pack SRC -o DST`, `ztfs pack --zstd=3 --frame-size 1M` and
# `zstd -3 -T1 -q SRC -o DST`. Medians, GB/s (10^9 bytes), the pack/cp ratio
# (target 0.8x or better) and, for the two compressors, throughput per CPU
# second and output sizes.
#
# Needs python3 (the venv: scripts/venv.sh makes it on first use), cp,
# sync, cat and zstd (installed with apt-get when missing and root).
# Builds the release ztfs into $CARGO_TARGET_DIR (default
# /tmp/bench-target), writes its files to a temporary directory under
# $TMPDIR (default /tmp; about 3 x size; it must not be tmpfs for the
# figures to mean anything), and removes it on exit. Prints a markdown
# table on stdout, progress on stderr. A benchmark, not a test: exit 0
# whatever the figures, non-zero only if something failed to run.
set -euo pipefail

cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/bench-target}"

if ! command -v zstd >/dev/null; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "bench-pack: installing zstd with apt-get" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zstd >&2 ||
            { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zstd >&2; }
    fi
    command -v zstd >/dev/null || { echo "bench-pack: no zstd on PATH (apt install zstd)" >&2; exit 2; }
fi

if [[ -n ${ZTFS:-} ]]; then
    ztfs=$ZTFS
else
    cargo build --release --quiet --bin ztfs
    ztfs=$CARGO_TARGET_DIR/release/ztfs
fi
venv="$(scripts/venv.sh)"

work="$(mktemp -d "${TMPDIR:-/tmp}/ztfs-bench-pack.XXXXXX")"
trap 'rm -rf "$work"' EXIT

PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=scripts "$venv/bin/python" -m bench.pack --ztfs "$ztfs" --work "$work" "$@" &
bench=$!
# On a signal, stop the benchmark (and the command it runs), then clean up.
trap 'kill -TERM "$bench" 2>/dev/null; wait "$bench"; exit 130' INT TERM
wait "$bench"
