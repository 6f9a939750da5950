#!/usr/bin/env bash
# ztfs.open, the in-process Python library, measured in one run (ratios
# against baselines of the same run; a benchmark, never a test):
#   scripts/bench/python.py  a 1 GiB safetensors model into numpy, page cache
#                            warm: ztfs.safe_open vs safetensors.safe_open
#                            and np.fromfile
#   scripts/link/python.py   by URL through the link harness (root): the same
#                            load through ztfs.open vs a ztfs mount vs the
#                            link; four threads vs one after another
# Flags go to bench/python.py; LINK_FLAGS to link/python.py.
#
#   ZTFS_WHEEL  measure this wheel instead of building one
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wheel=${ZTFS_WHEEL:-$(bash "$repo/scripts/wheel.sh")}
venv=$(mktemp -d "${TMPDIR:-/tmp}/ztfs-bench-python.XXXXXX")
trap 'rm -rf "$venv"' EXIT
bash "$repo/scripts/wheel-venv.sh" "$wheel" "$venv"
"$venv/bin/python" "$repo/scripts/bench/python.py" "$@"
if [[ $(id -u) != 0 ]]; then
    echo "bench-python.sh: the URL figures need root (a network namespace and tc): skipped" >&2
    exit 0
fi
bash "$repo/scripts/apt-need.sh" bench-python.sh nginx=nginx-light curl=curl tc=iproute2
# shellcheck disable=SC2086
"$venv/bin/python" "$repo/scripts/link/python.py" --python "$venv/bin/python" \
    --ztfs "$venv/bin/ztfs" ${LINK_FLAGS:-}
