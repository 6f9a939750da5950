#!/usr/bin/env bash
# The Python package's tests (python/tests, pytest) on the wheel that
# scripts/wheel.sh builds in this run, installed in a fresh venv
# (scripts/wheel-venv.sh: the wheel, its dependencies, and the reference
# readers the tests compare with), then pytest and mypy. Mounts and the
# isolation tests need root and /dev/fuse; the URL tests start nginx.
#
#   ZTFS_WHEEL  test this wheel instead of building one
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wheel=${ZTFS_WHEEL:-$(bash "$repo/scripts/wheel.sh")}

# pytest 9.2.0 and its dependencies pluggy 1.7.0, iniconfig 2.3.1,
# packaging 26.4, pygments 2.21.0 (py3 wheels); mypy 2.4.1 (cp311
# manylinux wheel) and its mypy_extensions 1.2.0, pathspec 1.1.1,
# typing_extensions 4.16.0, librt 0.17.0, to check the package's types as
# a user's type checker sees them.
pins=(pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.4 pygments==2.21.0
    mypy==2.4.1 mypy_extensions==1.2.0 pathspec==1.1.1 typing_extensions==4.16.0 librt==0.17.0)

venv=$(mktemp -d "${TMPDIR:-/tmp}/ztfs-wheel-test.XXXXXX")
trap 'rm -rf "$venv"' EXIT
bash "$repo/scripts/wheel-venv.sh" "$wheel" "$venv"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# As installed: the command, the package finding it, and ztfs.open.
unset ZTFS_BIN
"$venv/bin/ztfs" --version
"$venv/bin/python" -c 'import sys, ztfs
r = ztfs.check(sys.argv[1])
assert r.valid, r
with ztfs.open(sys.argv[1]) as m:
    n = len(m.keys())
print("ztfs", ztfs.__version__, "from", ztfs.binary(), ":", r.message, "; open:", n, "tensors")' \
    "$repo/corpus/samples/tiny-llama.zt"
PIP_NO_CACHE_DIR=1 "$venv/bin/python" -m pip install -q --only-binary=:all: "${pins[@]}"
# From a directory of its own, so that `import ztfs` is the installed package.
cd "$venv"
# The installed package's annotations (py.typed), strictly, and a user's
# script against them.
"$venv/bin/python" -m mypy --strict --no-incremental -p ztfs
"$venv/bin/python" -m mypy --strict --no-incremental "$repo/python/tests/typed_example.py"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/python/tests"
