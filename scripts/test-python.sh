#!/usr/bin/env bash
# The Python package's tests (python/tests, pytest) on the wheel that
# scripts/wheel.sh builds in this run, installed in a fresh venv: first the
# wheel alone (nothing else is needed to run it), then numpy and pytest for
# the tests. Mounts need root or fusermount3, and /dev/fuse.
#
#   ZTFS_WHEEL  test this wheel instead of building one
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wheel=${ZTFS_WHEEL:-$(bash "$repo/scripts/wheel.sh")}

# numpy 2.4.6 (cp311 manylinux_2_27, as scripts/venv.sh pins it); pytest
# 9.2.0 and its dependencies pluggy 1.7.0, iniconfig 2.3.1, packaging 26.4,
# pygments 2.21.0 (py3 wheels); mypy 2.4.1 (cp311 manylinux wheel) and its
# mypy_extensions 1.2.0, pathspec 1.1.1, typing_extensions 4.16.0, librt
# 0.17.0, to check the package's types as a user's type checker sees them.
pins=(numpy==2.4.6 pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.4 pygments==2.21.0
    mypy==2.4.1 mypy_extensions==1.2.0 pathspec==1.1.1 typing_extensions==4.16.0 librt==0.17.0)

venv=$(mktemp -d "${TMPDIR:-/tmp}/ztfs-wheel-test.XXXXXX")
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$venv/bin/python" -m pip install -q "$wheel"
# The wheel alone: the command, and the package finding it.
unset ZTFS_BIN
"$venv/bin/ztfs" --version
"$venv/bin/python" -c 'import sys, ztfs
r = ztfs.check(sys.argv[1])
assert r.valid, r
print("ztfs", ztfs.__version__, "from", ztfs.binary(), ":", r.message)' "$repo/corpus/samples/tiny-llama.zt"
"$venv/bin/python" -m pip install -q --only-binary=:all: "${pins[@]}"
# From a directory of its own, so that `import ztfs` is the installed package.
cd "$venv"
# The installed package's annotations (py.typed), strictly.
"$venv/bin/python" -m mypy --strict --no-incremental -p ztfs
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/python/tests"
