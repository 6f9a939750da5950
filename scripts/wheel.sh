#!/usr/bin/env bash
# Builds the ztfs wheel and prints its path on stdout (everything else goes
# to stderr): the extension module `ztfs._native` (PyO3) and the Python
# package python/ztfs, with the release binary as the wheel's `ztfs`
# command. maturin builds one or the other, so the binary is built first
# (a `bin` wheel, taken apart) into the data directory pyproject.toml names,
# whose scripts/ the pyo3 wheel then carries. Both are linked by zig against
# glibc 2.17, so that it is a manylinux2014 wheel whatever the host's glibc
# (this machine's 2.36 would make it manylinux_2_34: no Ubuntu 22.04, no
# RHEL 8); maturin checks the tag (auditwheel's rules) as it builds.
#
#   ZTFS_BUILD_VENV  where maturin and ziglang live (default <repo>/.venv-build,
#                    gitignored; made once, about 100 MB of wheels)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${ZTFS_BUILD_VENV:-$repo/.venv-build}
# maturin 1.16.0: the build backend and the wheel's packer (manylinux
# wheel of its own, no dependencies). ziglang 0.17.1: zig as a PyPI wheel,
# the C compiler and linker for an older glibc (maturin --zig).
pins=(maturin==1.16.0 ziglang==0.17.1)

log() { printf 'wheel.sh: %s\n' "$*" >&2; }

marker=$venv/.ztfs-build-pins
if [[ ! -x $venv/bin/maturin || ! -f $marker || "$(cat "$marker")" != "${pins[*]}" ]]; then
    log "creating $venv with ${pins[*]}"
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 "$venv/bin/python" -m pip install -q --only-binary=:all: "${pins[@]}" >&2
    echo "${pins[*]}" >"$marker"
fi

out=${CARGO_TARGET_DIR:-$repo/target}/wheels
case $out in /*) ;; *) out=$repo/$out ;; esac
rm -f "$out"/ztfs-*.whl
start=$SECONDS
# The command goes in the wheel's data directory (pyproject.toml) for this
# build only: a later `pip install .` must not find an old one there.
data=$repo/python/wheel-data
rm -rf "$data/scripts" && mkdir -p "$data/scripts"
# maturin finds zig as `python -m ziglang` with the python on PATH.
build() { # maturin build ARGS..., from the repository
    (cd "$repo" && PATH=$venv/bin:$PATH maturin build --release --zig \
        --compatibility manylinux2014 "$@" >&2)
}
bin_out=$(mktemp -d)
trap 'rm -rf "$bin_out" "$data/scripts"' EXIT
build --bindings bin --out "$bin_out"
"$venv/bin/python" - "$bin_out" "$data/scripts" <<'PY'
import os, sys, zipfile, glob
(wheel,) = glob.glob(os.path.join(sys.argv[1], "ztfs-*.whl"))
with zipfile.ZipFile(wheel) as z:
    (name,) = [n for n in z.namelist() if n.endswith(".data/scripts/ztfs")]
    target = os.path.join(sys.argv[2], "ztfs")
    with z.open(name) as src, open(target, "wb") as dst:
        dst.write(src.read())
os.chmod(target, 0o755)
PY
build --out "$out"
wheel=$(ls "$out"/ztfs-*.whl)
log "built $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB, in $((SECONDS - start)) s"
echo "$wheel"
