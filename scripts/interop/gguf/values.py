"""Quantized tensors as values, against gguf-py's `quants.dequantize`.

One GGUF file written by `GGUFWriter` holds a tensor of every block type
gguf-py dequantizes: values from gguf-py's own `quants.quantize` where it
quantizes that type, else blocks with finite scales from
tests/data/dequant (scripts/dequant-vectors.py). Then, bit for bit:

- through a mount, each tensor's `data.npy` loads with numpy as float32 in
  the tensor's shape (the GGUF dims reversed) holding what
  `quants.dequantize` gives, `data` stays the blocks, and random byte
  ranges of `data.npy` (cut inside values, across blocks) read by `pread`
  are those bytes of the whole;
- `ztfs mount --dequantize f32|f16|bf16`: `model.safetensors`, loaded by
  the safetensors package, holds each quantized tensor as those values in
  that type (numpy's `astype(float16)`, ml_dtypes' `bfloat16`), and every
  other tensor as it was;
- `ztfs pack --dequantize bf16 -o FILE.zt` read by the ztensor package, and
  `ztfs pack --dequantize f16 --to-folder DIR` read by safetensors: the
  same values.
"""

from __future__ import annotations

import os
import pathlib
import random
import tempfile

import numpy as np

from ..mount import mounted, pread_full
from ..results import Results, short

DENSE = {"F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64"}
VECTORS = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data" / "dequant"
ROWS, BLOCKS_PER_ROW = 3, 4


def dequantizable():
    """The block types gguf-py dequantizes, with (values, bytes) a block."""
    from gguf import quants
    from gguf.constants import GGML_QUANT_SIZES

    out = []
    for ty, (values, nbytes) in GGML_QUANT_SIZES.items():
        if ty.name in DENSE:
            continue
        try:
            quants.dequantize(np.zeros((1, nbytes), dtype=np.uint8), ty)
        except NotImplementedError:
            continue
        out.append((ty, values, nbytes))
    return out


def blocks_of(ty, values: int, nbytes: int, rng) -> tuple[np.ndarray, str]:
    """A tensor of ROWS x BLOCKS_PER_ROW blocks of `ty`, as uint8 bytes."""
    from gguf import quants

    v = rng.standard_normal((ROWS, BLOCKS_PER_ROW * values)).astype(np.float32)
    try:
        return quants.quantize(v, ty), "quants.quantize"
    except NotImplementedError:
        pass
    raw = (VECTORS / f"{ty.name.lower()}.bin").read_bytes()
    n = ROWS * BLOCKS_PER_ROW * nbytes
    b = np.frombuffer(raw[:n], dtype=np.uint8)
    return b.reshape(ROWS, BLOCKS_PER_ROW * nbytes), "vector blocks"


def write_file(path: str) -> dict:
    """The file; returns each quantized tensor's expected f32 values."""
    import gguf
    from gguf import quants

    rng = np.random.default_rng(40)
    w = gguf.GGUFWriter(path, "llama")
    w.add_tensor("dense.f32", rng.standard_normal((2, 3)).astype(np.float32))
    w.add_tensor("dense.f16", rng.standard_normal(5).astype(np.float16))
    want = {}
    for ty, values, nbytes in dequantizable():
        blocks, _ = blocks_of(ty, values, nbytes, rng)
        name = f"q.{ty.name.lower()}"
        w.add_tensor(name, blocks, raw_dtype=ty)
        want[name] = quants.dequantize(blocks, ty).astype(np.float32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return want


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bits (NaNs by their bits)."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def narrow(values: np.ndarray, dtype: str) -> np.ndarray:
    import ml_dtypes

    with np.errstate(all="ignore"):
        return {"f32": values, "f16": values.astype(np.float16),
                "bf16": values.astype(ml_dtypes.bfloat16)}[dtype]


def meta_dirs(mnt: str) -> dict:
    from .check import object_dirs
    return object_dirs(mnt)


def check_npy_ranges(path: str, whole: bytes, res: Results, where: str, rng: random.Random):
    """Random ranges of `path` by pread are those bytes of `whole`."""
    fd = os.open(path, os.O_RDONLY)
    try:
        for _ in range(24):
            a = rng.randrange(len(whole))
            n = rng.randrange(1, min(len(whole) - a, 9000) + 1)
            got = pread_full(fd, n, a)
            if not res.check(got == whole[a:a + n], where, f"bytes [{a}, +{n}) differ"):
                return
    finally:
        os.close(fd)


def check_mount(z, path: str, want: dict, gguf_tensors, res: Results):
    where = "gguf values: data.npy"
    rng = random.Random(40)
    with mounted(z, path, res, where) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"mount: {short(err)}"):
            return
        dirs = meta_dirs(mnt)
        for t in gguf_tensors:
            if t.name not in want:
                continue
            d, w = dirs[t.name], want[t.name]
            shape = tuple(int(x) for x in reversed(t.shape.tolist()))
            npy = os.path.join(d, "data.npy")
            a = np.load(npy)
            res.check(same(a, w.reshape(shape)), f"{where} {t.name}",
                      f"{a.dtype}{a.shape} vs gguf-py's float32{shape}, or different bits")
            with open(os.path.join(d, "data"), "rb") as f:
                res.check(f.read() == t.data.tobytes(), f"{where} {t.name}", "data is not the blocks")
            with open(npy, "rb") as f:
                whole = f.read()
            check_npy_ranges(npy, whole, res, f"{where} {t.name} ranges", rng)


def check_safetensors_mounts(z, path: str, want: dict, gguf_tensors, res: Results):
    from safetensors.numpy import load_file

    dense = {t.name: np.array(t.data) for t in gguf_tensors if t.name not in want}
    for dtype in ("f32", "f16", "bf16"):
        where = f"gguf values: mount --dequantize {dtype}"
        with mounted(z, path, res, where, ("--dequantize", dtype)) as (rc, err, mnt):
            if not res.check(rc == 0, where, f"mount: {short(err)}"):
                continue
            got = load_file(os.path.join(mnt, "model.safetensors"))
            check_tensors(got, want, dense, dtype, res, where)


def check_tensors(got: dict, want: dict, dense: dict, dtype: str, res: Results, where: str):
    res.check(set(got) == set(want) | set(dense), where,
              f"names: missing {sorted(set(want) | set(dense) - set(got))[:4]}")
    for name, w in want.items():
        if name in got:
            res.check(same(got[name].reshape(-1), narrow(w, dtype).reshape(-1)), f"{where} {name}",
                      f"{got[name].dtype} values differ from gguf-py's, narrowed")
    for name, w in dense.items():
        if name in got:
            res.check(got[name].tobytes() == w.tobytes(), f"{where} {name}", "a dense tensor changed")


def check_packs(z, path: str, want: dict, gguf_tensors, res: Results, tmp: str):
    from safetensors.numpy import load_file

    from ..pack.common import zt_objects

    dense = {t.name: np.array(t.data) for t in gguf_tensors if t.name not in want}
    where = "gguf values: pack --dequantize bf16"
    out = os.path.join(tmp, "values-bf16.zt")
    rc, _, err = z.run("pack", [path], ("--dequantize", "bf16", "-o", out))
    if res.check(rc == 0, where, f"pack: {short(err)}"):
        objs = zt_objects(out)
        for name, w in want.items():
            p = objs[name].parts["data"]
            res.check(p.dtype == "bf16" and p.data == narrow(w, "bf16").tobytes(),
                      f"{where} {name}", f"{p.dtype}: values differ from gguf-py's, narrowed")
        for name, w in dense.items():
            res.check(objs[name].parts["data"].data == w.tobytes(), f"{where} {name}",
                      "a dense tensor changed")
    where = "gguf values: pack --dequantize f16 --to-folder"
    folder = os.path.join(tmp, "values-f16")
    rc, _, err = z.run("pack", [path], ("--dequantize", "f16", "--to-folder", folder))
    if res.check(rc == 0, where, f"pack: {short(err)}"):
        got = load_file(os.path.join(folder, "model.safetensors"))
        check_tensors(got, want, dense, "f16", res, where)


def run_values(z, res: Results, outdir: str):
    import gguf

    print("\n== gguf values: every block type gguf-py dequantizes, against quants.dequantize")
    path = os.path.join(outdir, "values.gguf")
    want = write_file(path)
    res.check(len(want) >= 20, "gguf values", f"only {len(want)} block types")
    tensors = gguf.GGUFReader(path).tensors
    for t in tensors:
        if t.name in want:
            check_cat_values(z, path, t.name, want[t.name], res)
    check_mount(z, path, want, tensors, res)
    check_safetensors_mounts(z, path, want, tensors, res)
    with tempfile.TemporaryDirectory(prefix="ztfs-values-") as tmp:
        check_packs(z, path, want, tensors, res, tmp)


def check_cat_values(z, path: str, name: str, want: np.ndarray, res: Results):
    rc, data, err = z.run("cat", [path, name], ("--values",))
    res.check(rc == 0 and data == want.astype("<f4").tobytes(), f"gguf values: cat --values {name}",
              f"{short(err)} ({len(data)} bytes vs {want.nbytes})")
