#!/usr/bin/env bash
# Makes a fresh venv at DIR holding the wheel WHEEL and its two
# dependencies (numpy, ml_dtypes), with the reference readers of
# scripts/venv.sh's venv (safetensors, gguf-py, ztensor, pyhurray, torch)
# seen through a .pth file after its own packages: the `ztfs` imported is
# the wheel's. Used by scripts/test-python.sh and scripts/bench-python.sh.
#
#   bash scripts/wheel-venv.sh WHEEL DIR
set -euo pipefail

wheel=$1 venv=$2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ref=${ZTFS_VENV:-$repo/.venv}
bash "$repo/scripts/venv.sh" >/dev/null

# numpy 2.4.6 and ml_dtypes 0.7.0 (cp311 manylinux_2_27 wheels), as
# scripts/venv.sh pins them.
deps=(numpy==2.4.6 ml_dtypes==0.7.0)
# The reference venv's interpreter, so that its packages load here too.
"$ref/bin/python" -m venv "$venv"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 "$venv/bin/python" -m pip install -q --only-binary=:all: "${deps[@]}" "$wheel"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
"$ref/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' >"$site/zz-reference.pth"
