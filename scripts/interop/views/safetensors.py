"""The safetensors view of a mounted model: `model.safetensors` (or the
shards views/sharded.py loads), read two ways.

Parsed here byte by byte (`read_layout`): u64 header length N with 8 + N a
multiple of 4096, a JSON header, tensors contiguous from offset 0 with the
size their dtype and shape give, the file ending at the last one. Then
against meta.json (`check_table`): the tensors are exactly the objects
announcing `safetensors`, with the dtype and shape announced and the ones
the type mapping below expects; `__metadata__` has format pt and a
`ztfs.left_out` (in the first file) naming exactly the objects announcing `no_safetensors`;
every tensor's bytes (BF16, F8 and F4 too) are what `ztfs cat` prints.
And through the reference reader (safetensors.safe_open, numpy): the same
names, and every tensor numpy can type equal to the cat bytes. Finally the
reference writer (`check_against_save_file`): safetensors.numpy.save_file
of the same arrays lays each tensor's data out the same.
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
from typing import Callable, Optional

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

from ..results import Results
from .model import Model, Obj

SINGLE = "model.safetensors"
HEADER_ALIGN = 4096
PAGE = 4096

BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "I16": 16, "U16": 16, "I32": 32, "U32": 32, "I64": 64,
    "U64": 64, "F16": 16, "BF16": 16, "F32": 32, "F64": 64, "C64": 64, "F8_E4M3": 8,
    "F8_E5M2": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F8_E8M0": 8, "F4": 4,
}
NUMPY = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
    "I32": np.int32, "U32": np.uint32, "I64": np.int64, "U64": np.uint64,
    "F16": np.float16, "F32": np.float32, "F64": np.float64, "C64": np.complex64,
}
# zTensor dtype / logical type -> safetensors dtype; None: left out.
ZT_ST = {
    "i8": "I8", "u8": "U8", "i16": "I16", "i32": "I32", "i64": "I64", "u16": "U16",
    "u32": "U32", "u64": "U64", "f16": "F16", "f32": "F32", "f64": "F64", "bf16": "BF16",
}
ZT_LOGICAL_ST = {
    "bool": "BOOL", "complex64": "C64", "complex128": None, "f4_e2m1": "F4",
    "f8_e4m3fn": "F8_E4M3", "f8_e5m2": "F8_E5M2", "f8_e4m3fnuz": "F8_E4M3FNUZ",
    "f8_e5m2fnuz": "F8_E5M2FNUZ", "f8_e8m0": "F8_E8M0",
}
HURRAY_ST = {
    "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64", "int8": "I8",
    "uint8": "U8", "int16": "I16", "uint16": "U16", "int32": "I32", "uint32": "U32",
    "int64": "I64", "uint64": "U64", "complex64": "C64", "float8_e4m3": "F8_E4M3",
    "float8_e5m2": "F8_E5M2", "float8_e8m0": "F8_E8M0", "float4_e2m1": "F4",
    "complex128": None, "bool": None, "int4": None, "uint4": None, "int2": None,
    "uint2": None, "float6_e2m3": None, "float6_e3m2": None, "float128": None,
}


def read_layout(res: Results, where: str, path: str,
                aligned: bool = True) -> Optional[tuple[int, dict]]:
    """Parses one safetensors file; (data start, header) or None (failed).
    `aligned`: the data must start on a 4096-byte boundary (ztfs's habit,
    not save_file's)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if n > size - 8:
                raise ValueError(f"header length {n} runs past the file ({size})")
            header = json.loads(f.read(n))
    except (OSError, ValueError, struct.error) as e:
        res.fail(where, f"unreadable: {type(e).__name__}: {e}")
        return None
    bad = []
    if aligned and (8 + n) % HEADER_ALIGN:
        bad.append(f"8 + header length {n} is not a multiple of {HEADER_ALIGN}")
    entries = sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                     key=lambda kv: kv[1]["data_offsets"])
    end = 0
    for k, v in entries:
        b, e = v["data_offsets"]
        nbits = math.prod(v["shape"]) * BITS.get(v["dtype"], 0)
        if b != end or e - b != nbits // 8 or nbits % 8:
            bad.append(f"{k[:60]!r} {v['dtype']} {v['shape']} at [{b}, {e}) after {end}: "
                       "not contiguous or not its size")
        end = max(end, e)
    if size != 8 + n + end:
        bad.append(f"size {size} != 8 + {n} + {end}")
    for b in bad[:5]:
        res.fail(where, b)
    if bad:
        return None
    res.ok()
    return 8 + n, header


def expected_st(model: Model, o: Obj):
    """("in", dtype, shape), ("out", why) or None when this check does not
    know."""
    m = o.meta
    if m.get("values") is not None:
        # A quantized tensor's values go in only with --dequantize.
        return ("out", "quantized: its values only with --dequantize")
    if model.hurray:
        ty = m.get("type")
        if not isinstance(m.get("data"), dict):
            return ("out", "it has no data")
        if HURRAY_ST.get(ty, 0) is None:
            return ("out", f"safetensors has no {ty}")
        if m.get("layout") != "row-major" or ty not in HURRAY_ST:
            return None
        dt, shape = HURRAY_ST[ty], m.get("shape") or []
    else:
        if o.name == "__metadata__" or m.get("layout") != "dense":
            return ("out", f"named __metadata__ or not dense ({m.get('layout')!r})")
        p = next((p for p in m.get("parts") or [] if p.get("name") == "data"), None)
        if p is None or not p.get("available") or p.get("refused") is not None:
            return ("out", "its data part is not available or refused: "
                           + str(p and {k: p.get(k) for k in ("available", "refused", "shard")}))
        lt = p.get("type")
        if lt is not None and lt not in ZT_LOGICAL_ST:
            return None
        dt = ZT_LOGICAL_ST[lt] if lt is not None else ZT_ST.get(p.get("dtype"))
        shape = m.get("shape") or []
        if dt is None:
            return ("out", f"safetensors has no {lt or p.get('dtype')}")
    if dt == "F4" and math.prod(shape) % 2:
        return ("out", "F4 with an odd element count")
    return ("in", dt, list(shape))


def check_attributes(res: Results, where: str, md: dict, attrs) -> None:
    """The model's attributes (`ztfs ls --json`) in __metadata__: a string
    as it is, a number or bool as its JSON text, anything else present."""
    if not isinstance(attrs, dict):
        return
    for k, v in attrs.items():
        if k == "format" or k.startswith("ztfs."):
            continue
        got = md.get(k)
        if got is None:
            res.fail(where, f"__metadata__ lacks the model attribute {k[:60]!r}")
        elif isinstance(v, str):
            res.check(got == v, where,
                      f"attribute {k[:60]!r}: {got[:80]!r}, the model has {v[:80]!r}")
        elif isinstance(v, (bool, int, float)) and math.isfinite(v):
            try:
                same = json.loads(got) == v and type(json.loads(got)) is type(v)
            except ValueError:
                same = False
            res.check(same, where, f"attribute {k[:60]!r}: {got[:80]!r}, the model has {v!r}")


def check_table(model: Model, res: Results, where: str, table: dict, metas: list,
                attrs=None) -> None:
    """The tensors found (`table`: name -> (file, data start, header entry))
    and each file's __metadata__ against the objects' meta.json; the first
    file's also against the model's attributes `attrs`."""
    announced, left = {}, {}
    for name, o in model.objects.items():
        st, no = o.meta.get("safetensors"), o.meta.get("no_safetensors")
        w = f"{where} {name[:60]!r}"
        if not res.check((st is None) != (no is None), w,
                         f"exactly one of safetensors and no_safetensors must be set: "
                         f"{st!r}, {no!r}"):
            continue
        exp = expected_st(model, o)
        if st is None:
            left[name] = no
            res.check(exp is None or exp[0] == "out", w,
                      f"left out ({no!r}), yet safetensors can express it as {exp!r}")
            continue
        announced[name] = st
        if exp is not None:
            res.check(exp[0] == "in" and [st.get("dtype"), st.get("shape")] == list(exp[1:]), w,
                      f"meta.json announces {st!r}; expected " + (
                          f"it left out: {exp[1]}" if exp[0] == "out" else repr(exp)))
        row = table.get(name)
        if row is not None:
            f, _, e = row
            res.check(st.get("file") == os.path.basename(f) and st.get("name") == name
                      and st.get("dtype") == e["dtype"] and st.get("shape") == e["shape"], w,
                      f"meta.json {st!r} differs from {os.path.basename(f)}'s entry {e!r}")
    res.check(set(table) == set(announced), where,
              f"tensors {sorted(set(table) - set(announced))[:5]!r} not announced; "
              f"announced {sorted(set(announced) - set(table))[:5]!r} absent")
    for i, (f, md) in enumerate(metas):
        w = f"{where} {os.path.basename(f)}"
        if not res.check(isinstance(md, dict) and md.get("format") == "pt", w,
                         f"__metadata__ {str(md)[:200]} lacks format pt") or i:
            continue  # the model's metadata is the first file's
        try:
            lo = json.loads(md["ztfs.left_out"])
        except (KeyError, ValueError, TypeError) as e:
            res.fail(w, f"__metadata__ ztfs.left_out unreadable: {type(e).__name__}: {e}")
            continue
        # A long list is cut (about 1 MiB); the count is whole.
        count = md.get("ztfs.left_out_count")
        res.check(count == str(len(left)), w, f"ztfs.left_out_count {count!r}, "
                                              f"{len(left)} objects left out")
        cut = isinstance(lo, dict) and len(lo) < len(left) and count == str(len(left))
        res.check(lo == left or (cut and lo.items() <= left.items()), w,
                  f"ztfs.left_out {str(lo)[:200]} differs from the objects' "
                  f"no_safetensors {str(left)[:200]}")
        check_attributes(res, w, md, attrs)


def want_of(model: Model, name: str) -> tuple[Optional[bytes], str]:
    """An object's data as its `data` file and `ztfs cat` agree on it (see
    Model.data_of)."""
    return model.data_of(model.objects[name], "data", None if model.hurray else "data")


def pages_read(res: Results, where: str, label: str, fd: int, start: int, end: int) -> bool:
    """Whether the whole pages holding [start, end) read: safe_open maps the
    file, and a page that fails to read kills the process (SIGBUS)."""
    a, b = start - start % PAGE, -(-end // PAGE) * PAGE
    try:
        os.pread(fd, b - a, a)
        return True
    except OSError as err:
        res.fail(where, f"{label}: its bytes read, but the pages around them fail "
                        f"({err.strerror}): a mapping of the file would die of SIGBUS")
        return False


def check_bytes(res: Results, where: str, table: dict, want: Callable, names) -> None:
    """Each named tensor's raw range, then through safe_open for the dtypes
    numpy has, against `want(name)` = (bytes, "") or (None, why the data
    fails to read: then the range must fail too) or (None, "": skip)."""
    by_file: dict = {}
    for name in names:
        by_file.setdefault(table[name][0], []).append(name)
    for path, group in sorted(by_file.items()):
        w = f"{where} {os.path.basename(path)}"
        with open(path, "rb") as f, safe_open(path, framework="numpy") as st:
            keys = set(st.keys())
            for name in group:
                _, start, e = table[name]
                exp, why = want(name)
                if (exp is None and not why) or not res.check(name in keys, w,
                                                              f"safe_open lacks {name[:60]!r}"):
                    continue
                b, end = e["data_offsets"]
                label = f"{name[:60]!r} {e['dtype']} [{b}, {end})"
                try:
                    got = os.pread(f.fileno(), end - b, start + b)
                except OSError as err:
                    res.check(exp is None, w, f"{label}: {err.strerror}, though its data "
                                              f"reads ({len(exp or b'')} bytes)")
                    continue
                if exp is None:  # a short read is how a read error part-way shows
                    res.check(len(got) < end - b, w,
                              f"{label}: all {len(got)} bytes served, though its data fails: {why}")
                    continue
                res.check(got == exp, w,
                          f"{label}: bytes differ from `ztfs cat` ({len(exp)} bytes)")
                if e["dtype"] in NUMPY and pages_read(res, w, label, f.fileno(), start + b,
                                                      start + end):
                    arr = st.get_tensor(name)
                    ref = np.frombuffer(exp, dtype=NUMPY[e["dtype"]]).reshape(e["shape"])
                    res.check(arr.dtype == ref.dtype and arr.shape == ref.shape
                              and arr.tobytes() == ref.tobytes(), w,
                              f"get_tensor({name[:60]!r}) gives {arr.dtype} {arr.shape}, "
                              f"not the cat bytes as {ref.dtype} {ref.shape}")


def load_single(res: Results, where: str, path: str) -> Optional[tuple[dict, list]]:
    """model.safetensors as a table and its __metadata__, checked against
    safe_open's names."""
    lay = read_layout(res, where, path)
    if lay is None:
        return None
    start, header = lay
    table = {k: (path, start, v) for k, v in header.items() if k != "__metadata__"}
    with safe_open(path, framework="numpy") as st:
        res.check(set(st.keys()) == set(table), where,
                  f"safe_open lists {len(st.keys())} tensors, the header {len(table)}")
        md = st.metadata()
    res.check(md == header.get("__metadata__"), where,
              "safe_open's metadata differs from the header's")
    return table, [(path, md)]


def check_against_save_file(res: Results, where: str, path: str, tmp: str, seed: int) -> None:
    """The reference writer: safetensors.numpy.save_file of the arrays
    safe_open gives; each tensor's data, from each file's own offsets,
    compared over random ranges."""
    with safe_open(path, framework="numpy") as st:
        arrays = {}
        for k in st.keys():
            if st.get_slice(k).get_dtype() in NUMPY:
                arrays[k] = st.get_tensor(k)
    if not res.check(bool(arrays), where, "no tensor numpy can type"):
        return
    ref = os.path.join(tmp, "ref.safetensors")
    save_file(arrays, ref)
    mine = read_layout(res, where, path)
    theirs = read_layout(res, f"{where} (save_file)", ref, False)
    if mine is None or theirs is None:
        return
    rng = random.Random(seed)
    with open(path, "rb") as a, open(ref, "rb") as b:
        for k in sorted(arrays):
            (ab, ae), (bb, be) = mine[1][k]["data_offsets"], theirs[1][k]["data_offsets"]
            if not res.check(ae - ab == be - bb, where, f"{k[:60]!r}: {ae - ab} bytes, "
                                                        f"save_file's {be - bb}"):
                continue
            for _ in range(5):
                off = rng.randrange(ae - ab + 1)
                n = rng.randint(0, ae - ab - off)
                x = os.pread(a.fileno(), n, mine[0] + ab + off)
                y = os.pread(b.fileno(), n, theirs[0] + bb + off)
                res.check(x == y, where, f"{k[:60]!r}: bytes [{off}, +{n}) differ from save_file's")
