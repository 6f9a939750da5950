"""The `.npy` views of a mounted model: each `x.npy` beside a part file,
a view file (`dense`, `dequantized`) or a Hurray tensor's `data`.

Per object, from its meta.json: an announced file exists and no other
`.npy` does; its header is a v1.0 header whose data starts at 4096 (8192
when the dict needs the room) and the file is that plus the data; the
announced descr and shape are the ones the type mapping below expects;
`np.load`, plain and with mmap_mode='r', gives that dtype and shape and
the bytes of the file beside it, which are what `ztfs cat` prints (a view
has no cat form: the view file alone). Also the reference writer: np.save
of the loaded array has the same data section (`check_against_np_save`).
"""

from __future__ import annotations

import ast
import math
import os
import random
import struct
from typing import Optional

import numpy as np

from ..results import Results
from .model import Model, Obj

MAGIC = b"\x93NUMPY\x01\x00"
DATA_STARTS = (4096, 8192)  # where the data may start, the larger one only when needed

# zTensor dtypes and logical types -> descr (--npy-dtypes numpy).
ZT_PHYSICAL = {
    "i8": "|i1", "u8": "|u1", "i16": "<i2", "i32": "<i4", "i64": "<i8",
    "u16": "<u2", "u32": "<u4", "u64": "<u8", "f16": "<f2", "f32": "<f4", "f64": "<f8",
    "bf16": "<V2",
}
ZT_LOGICAL = {
    "bool": "|b1", "complex64": "<c8", "complex128": "<c16", "f4_e2m1": "|u1",
    "f8_e4m3fn": "|V1", "f8_e5m2": "|V1", "f8_e4m3fnuz": "|V1", "f8_e5m2fnuz": "|V1",
    "f8_e8m0": "|V1",
}
# Under --npy-dtypes ml these become ml_dtypes names.
ZT_ML = {
    "bf16": "bfloat16", "f8_e4m3fn": "float8_e4m3fn", "f8_e5m2": "float8_e5m2",
    "f8_e4m3fnuz": "float8_e4m3fnuz", "f8_e5m2fnuz": "float8_e5m2fnuz",
    "f8_e8m0": "float8_e8m0fnu",
}
ML_NAMES = set(ZT_ML.values())

# Hurray element types -> descr; the packed sub-byte types but f4 have none.
HURRAY_DESCR = {
    "float16": "<f2", "bfloat16": "<V2", "float32": "<f4", "float64": "<f8",
    "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4",
    "uint32": "<u4", "int64": "<i8", "uint64": "<u8", "complex64": "<c8",
    "complex128": "<c16", "float8_e4m3": "|V1", "float8_e5m2": "|V1",
    "float8_e8m0": "|V1", "float4_e2m1": "|u1", "float128": "|V16",
}
HURRAY_ML = {  # Hurray's float8_e4m3 is OCP E4M3 (no infinities): fn
    "bfloat16": "bfloat16", "float8_e4m3": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2", "float8_e8m0": "float8_e8m0fnu",
}
HURRAY_NO_NPY = {"bool", "int4", "uint4", "int2", "uint2", "float6_e2m3", "float6_e3m2"}


def parse_header(head: bytes) -> tuple[int, dict, int]:
    """A v1.0 header at the start of `head`: (data start, the dict, bytes
    used before the padding), parsed as numpy's reader does
    (ast.literal_eval). Raises ValueError."""
    if head[:8] != MAGIC:
        raise ValueError(f"magic/version {head[:8]!r}, expected {MAGIC!r}")
    if len(head) < 10:
        raise ValueError("shorter than a header")
    (hlen,) = struct.unpack("<H", head[8:10])
    text = head[10:10 + hlen]
    if len(text) != hlen:
        raise ValueError(f"header length {hlen} runs past the {len(head)} bytes read")
    if not text.endswith(b"\n"):
        raise ValueError("header does not end in a newline")
    d = ast.literal_eval(text.decode("latin-1"))
    if not isinstance(d, dict) or set(d) != {"descr", "fortran_order", "shape"}:
        raise ValueError(f"header dict {text[:120]!r} lacks exactly descr, fortran_order, shape")
    if d["fortran_order"] is not False or not isinstance(d["shape"], tuple):
        raise ValueError(f"fortran_order {d['fortran_order']!r}, shape {d['shape']!r}")
    return 10 + hlen, d, 10 + len(text.rstrip(b" \n")) + 1


def expected_zt(o: Obj, part: Optional[dict], mode: str):
    """(descr, shape) a zTensor part (None: the view) should have, or None
    when this check does not know the type (then only consistency is
    checked). The view: shape only, descr None."""
    shape = tuple(o.meta.get("shape") or ())
    if part is None:
        return None, shape
    dtype, logical = part.get("dtype"), part.get("type")
    key = logical if logical is not None else dtype
    descr = (ZT_LOGICAL if logical is not None else ZT_PHYSICAL).get(key)
    if descr is None:
        return None
    itemsize = np.dtype(descr).itemsize
    if mode == "ml":
        descr = ZT_ML.get(key, descr)
    if o.meta.get("layout") != "dense" or part.get("name") != "data":
        return descr, (int(part.get("decoded_length") or 0) // itemsize,)
    if key == "f4_e2m1":
        return descr, ((math.prod(shape) + 1) // 2,)
    return descr, shape


def expected_hurray(o: Obj, mode: str):
    """(descr, shape) for a Hurray tensor's data.npy,
    "none" when it must have none, None when this check does not know."""
    ty = o.meta.get("type")
    if ty in HURRAY_NO_NPY:
        return "none"
    descr = HURRAY_DESCR.get(ty)
    shape = o.meta.get("shape")
    if descr is None or not isinstance(shape, list):
        return None
    if mode == "ml" and ty in HURRAY_ML:
        descr = HURRAY_ML[ty]
    if ty == "float4_e2m1":
        return descr, ((math.prod(shape) + 1) // 2,)
    return descr, tuple(shape)


def check_npy_file(res: Results, where: str, path: str, npy: dict, want: bytes) -> bool:
    """One .npy file against its meta.json entry and the bytes it must hold."""
    descr, shape = npy.get("descr"), tuple(npy.get("shape") or ())
    bad = []
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8192)
        start, d, used = parse_header(head)
        if start not in DATA_STARTS:
            bad.append(f"data starts at {start}, not {DATA_STARTS}")
        elif start == 8192 and used <= 4096:
            bad.append(f"data starts at 8192 though the header needs only {used} bytes")
        if size != start + len(want):
            bad.append(f"size {size} != {start} + {len(want)} data bytes")
        if d["descr"] != descr or d["shape"] != shape:
            bad.append(f"header says {d['descr']!r} {d['shape']!r}, meta.json {descr!r} {shape!r}")
        dt = np.dtype(descr)
        for how in (None, "r"):
            arr = np.load(path, mmap_mode=how)
            if arr.dtype != dt or arr.shape != shape:
                bad.append(f"np.load(mmap_mode={how!r}) gives {arr.dtype} {arr.shape}")
            elif arr.tobytes() != want:
                bad.append(f"np.load(mmap_mode={how!r}) bytes differ from the data "
                           f"({arr.nbytes} vs {len(want)} bytes)")
            del arr
    except (OSError, ValueError, TypeError, SyntaxError) as e:
        bad.append(f"{type(e).__name__}: {e}")
    for b in bad:
        res.fail(where, b)
    if not bad:
        res.ok()
    return not bad


def check_npy_fails(res: Results, where: str, path: str, why: str) -> None:
    """The file beside fails to read: so must the .npy's data, rather than
    serve other bytes. numpy reports a read error part-way as a short read
    (ValueError), an error at once as OSError: either is the failure."""
    try:
        arr = np.load(path)
        res.fail(where, f"loads ({arr.dtype} {arr.shape}) though the file beside it "
                        f"does not: {why}")
    except (OSError, ValueError):
        res.ok()


def values_npy(beside: Optional[str], values) -> Optional[str]:
    """The .npy file serving `beside`: a quantized tensor's values
    (meta.json's `values`, served as `dequantized`) are `data.npy`, in
    place of its blocks' part's; any other file's is FILE.npy."""
    if beside is not None and isinstance(values, dict) and values.get("file") == beside:
        return "data.npy"
    return None if beside is None else beside + ".npy"


def check_entry(res, where, model: Model, o: Obj, npy, no_npy, beside: Optional[str],
                expect, cat_part) -> Optional[str]:
    """One announcement (npy, no_npy) of object `o` against the expectation
    (None: unknown; "none": must have none; else (descr, shape) with descr a
    string, or None for any). `beside` is the file the
    .npy serves (None when there is none); `cat_part` what to ask `ztfs cat`
    (False: nothing; None: a Hurray tensor's data). Returns the .npy file
    name when there is one."""
    if (npy is None) == (no_npy is None):
        res.fail(where, f"exactly one of npy and no_npy must be set: {npy!r}, {no_npy!r}")
        return npy.get("file") if isinstance(npy, dict) else None
    if npy is None:
        if beside is not None and expect not in (None, "none"):
            res.fail(where, f"no .npy ({no_npy!r}), yet {beside!r} has a numpy form "
                            f"{expect[0]!r} {expect[1]!r}")
        else:
            res.ok()
        return None
    fname = npy.get("file")
    if beside is None or fname != values_npy(beside, o.meta.get("values")):
        res.fail(where, f"npy {npy!r} does not sit beside a served file ({beside!r})")
        return fname
    if expect == "none":
        res.fail(where, f"{fname}: the type has no numpy form, yet npy is {npy!r}")
    elif expect is not None:
        descr, shape = expect
        ok_descr = descr is None or npy.get("descr") == descr
        res.check(ok_descr and tuple(npy.get("shape") or ()) == shape, where,
                  f"{fname}: meta.json says {npy.get('descr')!r} {npy.get('shape')!r}, "
                  f"expected {descr!r} {list(shape)!r}")
    want, why = model.data_of(o, beside, cat_part)
    path = os.path.join(o.dir, fname)
    if want is not None:
        check_npy_file(res, f"{where} {fname}", path, npy, want)
    elif why:
        check_npy_fails(res, f"{where} {fname}", path, why)
    return fname


def check_object(model: Model, o: Obj, res: Results, mode: str) -> list[str]:
    """Every .npy announcement of one object, and no stray .npy beside
    them. Returns the descrs of the .npy files it found."""
    where = f"{model.where} {o.name[:60]!r}"
    m = o.meta
    announced = []
    values = m.get("values")
    if model.hurray:
        served = m["data"].get("file") if isinstance(m.get("data"), dict) else None
        expect = ("<f4", tuple(m.get("shape") or ())) if values else expected_hurray(o, mode)
        f = check_entry(res, where, model, o, m.get("npy"), m.get("no_npy"), served,
                        expect, None)
        announced += [(f, m.get("npy"))]
    else:
        for p in m.get("parts") or []:
            files = [f for f in p.get("files") or [] if not f.endswith((".raw", ".npy"))]
            # A quantized tensor's data.npy is its values: its blocks'
            # part `data` has none.
            blocks = values is not None and p.get("name") == "data"
            f = check_entry(res, f"{where}/{p.get('name')!r}", model, o, p.get("npy"),
                            p.get("no_npy"), files[0] if files else None,
                            "none" if blocks else expected_zt(o, p, mode), p.get("name"))
            announced += [(f, p.get("npy"))]
        view = m.get("view")
        if view is not None or m.get("view_npy") is not None:
            expect = ("<f4", tuple(m.get("shape") or ())) if values else expected_zt(o, None, mode)
            f = check_entry(res, f"{where} view", model, o, m.get("view_npy"),
                            m.get("no_view_npy"), view, expect, False)
            announced += [(f, m.get("view_npy"))]
    names = {f for f, _ in announced if f}
    try:
        present = {e for e in os.listdir(o.dir) if e.endswith(".npy")}
    except OSError as e:
        res.fail(where, f"listing: {e}")
        present = names
    res.check(present == names, where, f".npy files {sorted(present)!r}, meta.json announces "
                                       f"{sorted(names)!r}")
    return [n.get("descr") for f, n in announced if f and isinstance(n, dict)]


def check_against_np_save(res: Results, where: str, path: str, tmp: str, seed: int) -> None:
    """The reference writer: np.save of the array np.load gives has the same
    data section as the mounted file (each from its own data start), checked
    over 20 random ranges and in length."""
    arr = np.load(path)
    ref = os.path.join(tmp, "ref.npy")
    np.save(ref, arr)
    with open(path, "rb") as f:
        mine = f.read()
    with open(ref, "rb") as f:
        theirs = f.read()
    ms = parse_header(mine[:8192])[0]
    ts = parse_header(theirs)[0]
    a, b = mine[ms:], theirs[ts:]
    if not res.check(len(a) == len(b), where, f"data section {len(a)} bytes, np.save's {len(b)}"):
        return
    rng = random.Random(seed)
    for _ in range(20):
        off = rng.randrange(len(a) + 1)
        n = rng.randint(0, len(a) - off)
        res.check(a[off:off + n] == b[off:off + n], where,
                  f"bytes [{off}, +{n}) differ from np.save's")
