#!/usr/bin/env bash
# The interoperability check CI runs: ztfs against the public zTensor
# implementation (PyPI ztensor 2.1.2), in both directions. See
# scripts/interop/__init__.py for what is compared, and which module does what.
#
#   ZTFS=path/to/ztfs   use this binary instead of `cargo build --release`
#   ZTFS_VENV=dir       where the Python environment lives (default .venv)
#
# Extra arguments go to the check (--corpus DIR, --keep DIR, --only SUBSTR,
# --skip-corpus, --package-only, --suite all|zt|hurray|views|safetensors|gguf|torch|npz|onnx|pack|stats). Exit 0 when everything agrees.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

venv=$("$repo/scripts/venv.sh")

if [[ -n ${ZTFS:-} ]]; then
    bin=$ZTFS
else
    echo "interop.sh: cargo build --release" >&2
    (cd "$repo" && cargo build --release --bin ztfs)
    target=${CARGO_TARGET_DIR:-target}
    case $target in /*) ;; *) target=$repo/$target ;; esac
    bin=$target/release/ztfs
fi

# The check is the package scripts/interop/, run with scripts/ on the path;
# -P keeps the working directory off it, so nothing there can shadow it.
export PYTHONPATH=$repo/scripts${PYTHONPATH:+:$PYTHONPATH}
exec "$venv/bin/python" -P -m interop --ztfs "$bin" "$@"
