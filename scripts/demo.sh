#!/usr/bin/env bash
# Builds ztfs and runs its main job on the sample model in corpus/samples:
# check it, mount it, look around, unmount. Needs root (or fuse access).
# Give another file to look at it instead, e.g. the Hurray sample:
#   bash scripts/demo.sh corpus/samples/tiny-llama.hrry
set -euo pipefail
cd "$(dirname "$0")/.."
echo "demo.sh: building ztfs (release; the first build takes a few minutes)"
cargo build --release
# Where cargo put it: CARGO_TARGET_DIR when set (relative to here, as cargo
# takes it), else target/.
target=${CARGO_TARGET_DIR:-target}
ztfs=$target/release/ztfs
model=${1:-corpus/samples/tiny-llama.zt}
mnt=$(mktemp -d /tmp/ztfs-demo.XXXXXX)
trap '$ztfs unmount "$mnt" 2>/dev/null || true; rmdir "$mnt" 2>/dev/null || true' EXIT

run() { printf '\n$ %s\n' "$*"; "$@"; }
run $ztfs check --verify "$model"
run $ztfs ls -l "$model"
run $ztfs mount "$model" "$mnt"
run ls "$mnt"
if [ -e "$mnt/digest" ]; then
    run cat "$mnt/digest"
else # a Hurray file has no content digest
    run head -c 400 "$mnt/manifest.json"
    echo
fi
first=$(find "$mnt" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | head -n 1)
run ls -l "$mnt/$first"
run head -c 256 "$mnt/$first/meta.json"
echo
printf '\n$ od -A x -t x1z %s | head -n 4\n' "$mnt/$first/data"
od -A x -t x1z "$mnt/$first/data" | head -n 4 || true
run $ztfs unmount "$mnt"
echo
echo "demo.sh: finished. Next: mount it yourself ($ztfs mount $model DIR),"
echo "load DIR/<object>/data.npy with numpy or DIR/model.safetensors with safetensors,"
echo "and run the tests with: bash scripts/test.sh"
