#!/usr/bin/env bash
# Benchmark of `hf://` mounts against the Hub emulator (scripts/hub/):
# a repository of 300 tensors in 3 shards with a config and a tokenizer.
#
#   scripts/bench-hub.sh [--tensors 300] [--shards 3] [--reps 3] [--delay-ms 0]
#
# Prints, same run: the requests and the time from `ztfs mount` to the
# first answered `ls`, and to every non-weight file read, beside
# `huggingface_hub.snapshot_download` of the same non-weight files; and
# the whole model.safetensors read through the hf:// mount beside the same
# read through an https:// mount of the repository's index URL (the path
# hf:// builds on) and beside snapshot_download of the weights. Ratios are
# of medians over --reps runs; --delay-ms delays every answer of the
# emulator (a link's first-byte time), where round trips made one after
# another show. Needs root (FUSE) and the project venv
# (scripts/venv.sh, made on first use). Builds a release ztfs into
# $CARGO_TARGET_DIR (default /tmp/bench-target). A benchmark, not a test:
# exit 0 whatever the figures.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/bench-target}
(cd "$repo" && cargo build --release --quiet --bin ztfs)
venv=$(bash "$repo/scripts/venv.sh")
exec "$venv/bin/python" "$repo/scripts/hub/bench.py" --ztfs "$CARGO_TARGET_DIR/release/ztfs" "$@"
