"""Hurray files written with pyhurray 0.1.0, each with a JSON sidecar of
what a reader must find in it.

`gen_hurray(dir)` writes FILE.hrry and FILE.json per case. The sidecar holds,
per index entry (composite members included, under the names the writer
gives them), the expected row-major bytes of `data` where they are defined
and a policy saying how strictly, and the raw bytes of every buffer as
`hr.load` returns them; plus the placement facts of the file
(parse.facts) and the KV section as `hr.load_kv` reads it back.

Expected `data`, by construction: each tensor starts from a numpy array (or
random bytes for types numpy lacks); the buffer is derived from it by the
layout's address function (layouts/*.md), and the expected bytes are the
array's own row-major bytes, never the writer's or a reader's opinion.

Policies: "must" (zero-copy row-major, or a layout whose row-major view is
well defined: column-major, strided, tiled, Morton, a composite partition),
"may" (sparse: dense bytes defined but possibly enormous, so a reader may
refuse; what it serves must match), "none" (no defined view: composite
overlay; a reader must not serve `data`). A quantized tensor's data is its
values (quant.py), served as `dequantized`, "unchecked" (Hilbert:
well defined, but this script has no oracle for it yet).
"""

from __future__ import annotations

import dataclasses
import json
import os
import struct

import hurray as hr
import numpy as np

from .parse import facts, parse
from .layouts import col_major, morton, strided, tiled

RNG_SEED = 20260


@dataclasses.dataclass
class Item:
    """One index entry: the tensor to save (None for a composite member,
    saved through its head), the expected row-major bytes and the policy."""
    tensor: object
    data: bytes | None
    policy: str
    members: tuple = ()  # (member name suffix, expected bytes) for a composite head
    file: str = "data"  # the mount's file of the data (a quantized tensor's: dequantized)


def raw_bytes(n: int, rng) -> bytes:
    return rng.integers(0, 256, n, dtype=np.uint8).tobytes()


def packed(count: int, bits: int, rng) -> bytes:
    """Random sub-byte elements, LSB first, with the padding bits of the last
    byte zero so the row-major bytes are unambiguous. Six-bit types pack four
    elements in three bytes, so they take whole groups (pyhurray asks 6
    bytes for 5 elements)."""
    nbytes = -(-count // 4) * 3 if bits == 6 else (count * bits + 7) // 8
    v = int.from_bytes(raw_bytes(nbytes, rng), "little") & ((1 << (count * bits)) - 1)
    return v.to_bytes(nbytes, "little")


NUMPY_OF = {"float16": np.float16, "float32": np.float32, "float64": np.float64,
            "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
            "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64}


def all_dtypes() -> list:
    return [getattr(hr.dtype, n) for n in sorted(dir(hr.dtype))
            if isinstance(getattr(hr.dtype, n), hr.Dtype)]


def case_dtypes(rng) -> dict:
    """Every element type pyhurray has, row-major, as [5], as [2, 3] and as a
    scalar; numpy's through from_numpy, the others from bytes."""
    out = {}
    for dt in all_dtypes():
        for shape in ([5], [2, 3], []):
            n = int(np.prod(shape)) if shape else 1
            name = f"{dt.name}{shape}"
            if dt.name in NUMPY_OF:
                a = (rng.standard_normal(n) * 100).astype(NUMPY_OF[dt.name]).reshape(shape)
                out[name] = Item(hr.from_numpy(a), a.tobytes(), "must")
            else:
                b = packed(n, dt.bit_width, rng)
                out[name] = Item(hr.Tensor(b, dt, shape), b, "must")
    return out


def case_empty(rng) -> dict:
    """Empty tensors and scalars between others; the last tensor ends off an
    8-byte boundary (5 bytes), to show the padding before the index."""
    z = np.zeros((0, 4), np.float32)
    s = np.array(-42, np.int64)
    tail = np.arange(5, dtype=np.int8)
    return {"empty/0x4": Item(hr.from_numpy(z), b"", "must"),
            "empty/3x0x2": Item(hr.Tensor(b"", hr.float64, [3, 0, 2]), b"", "must"),
            "scalar/i64": Item(hr.from_numpy(s), s.tobytes(), "must"),
            "empty/bool": Item(hr.Tensor(b"", hr.bool, [0]), b"", "must"),
            "scalar/f32": Item(hr.from_numpy(np.array(1.5, np.float32)), struct.pack("<f", 1.5), "must"),
            "zz/tail-int8x5": Item(hr.from_numpy(tail), tail.tobytes(), "must")}


def case_layouts(rng) -> dict:
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.integers(-999, 999, (2, 3, 4)).astype(np.int16)
    c = rng.standard_normal((5, 6)).astype(np.float32)
    m = rng.standard_normal((3, 5)).astype(np.float64)
    out = {
        "col_major/3x4": Item(hr.Tensor(col_major(a), hr.float32, [3, 4], layout=hr.ColMajorLayout()),
                              a.tobytes(), "must"),
        "col_major/2x3x4": Item(hr.Tensor(col_major(b), hr.int16, [2, 3, 4], layout=hr.ColMajorLayout()),
                                b.tobytes(), "must"),
        # Equal bits only: with unequal morton_bits, morton.md's interleaving
        # formula yields codes past its own buffer size 2^sum(bits) (bits
        # [2, 3], element [0, 4]: code 32 of 32 slots), so no view is defined.
        "morton/3x5": Item(hr.Tensor(morton(m, [3, 3]), hr.float64, [3, 5],
                                     layout=hr.MortonLayout([3, 3])), m.tobytes(), "must"),
        "strided/permuted": Item(hr.Tensor(strided(a, [1, 3]), hr.float32, [3, 4],
                                           layout=hr.StridedLayout([1, 3])), a.tobytes(), "must"),
        "hilbert/4x4": Item(hr.Tensor(raw_bytes(64, rng), hr.float32, [4, 4],
                                      layout=hr.HilbertLayout(2, 2)), None, "unchecked"),
    }
    bc = np.broadcast_to(a[:1], (3, 4))  # one row, read three times
    # pyhurray wants count x width bytes whatever the strides (strided.md
    # asks only the addressed range): the row, then zeros to 12 elements.
    out["strided/broadcast"] = Item(hr.Tensor(strided(bc, [0, 1]).ljust(48, b"\0"), hr.float32, [3, 4],
                                              layout=hr.StridedLayout([0, 1])),
                                    np.ascontiguousarray(bc).tobytes(), "must")
    for outer in ("row_major", "col_major"):
        for inner in ("row_major", "col_major"):
            lay = hr.TiledLayout([2, 4], outer_layout=outer, inner_layout=inner)
            out[f"tiled/5x6-2x4-{outer}-{inner}"] = Item(
                hr.Tensor(tiled(c, [2, 4], outer, inner), hr.float32, [5, 6], layout=lay),
                c.tobytes(), "must")
    return out


def case_sparse(rng) -> dict:
    dense = np.zeros((3, 4), np.float32)
    idx = np.array([[0, 1], [1, 3], [2, 0]], np.uint64)
    vals = np.array([5.0, -7.0, 0.25], np.float32)
    dense[idx[:, 0].astype(int), idx[:, 1].astype(int)] = vals
    csr = hr.Tensor(vals.tobytes(), hr.float32, [3, 4],
                    aux_buffers=[np.array([1, 3, 0], np.uint64).tobytes(),
                                 np.array([0, 1, 2, 3], np.uint64).tobytes()],
                    layout=hr.CsrLayout(nnz=3))
    return {"coo": Item(hr.sparse_coo(vals, idx, [3, 4]), dense.tobytes(), "may"),
            "csr": Item(csr, dense.tobytes(), "may")}


def case_quant(rng) -> dict:
    """Quantized tensors: their data is their values, float32, by the
    scheme's formula (quant.py computes them), served as `dequantized`."""
    from .quant import cases, struct_check

    struct_check()
    return {f"quant/{name}": Item(t, want, "must", file="dequantized")
            for name, t, want in cases(rng)}


def case_sections(rng) -> dict:
    """Shard and stats sections (which do not change the data)."""
    st = hr.Statistics(nnz=6, value_min=-1.0, value_max=1.0, value_abs_max=1.0)
    piece = rng.standard_normal((2, 4)).astype(np.float32)
    return {
        "shard+stats": Item(hr.Tensor(piece.tobytes(), hr.float32, [2, 4],
                                      shard=hr.Shard(parent_shape=[4, 4], shard_offset=[2, 0]),
                                      statistics=st), piece.tobytes(), "must"),
    }


def case_composite(rng) -> dict:
    whole = rng.standard_normal((8, 8)).astype(np.float32)
    left, right = np.ascontiguousarray(whole[:, :4]), np.ascontiguousarray(whole[:, 4:])
    members = [hr.Tensor(left.tobytes(), hr.float32, [8, 4], shard=hr.Shard([8, 8], [0, 0])),
               hr.Tensor(right.tobytes(), hr.float32, [8, 4], shard=hr.Shard([8, 8], [0, 4]))]
    head = hr.Composite("partition", shape=[8, 8], dtype=hr.float32, members=members)
    after = np.arange(3, dtype=np.int32)
    # Members are index entries of their own, named by the writer "<head>.<i>".
    return {"part": Item(head, whole.tobytes(), "must",
                         members=((".0", left.tobytes()), (".1", right.tobytes()))),
            "after": Item(hr.from_numpy(after), after.tobytes(), "must")}


HOSTILE_NAMES = ["../x", "a/b", "a//b", "/abs", ".", "..", "a\nb", "meta.json", "data",
                 "buffer0.raw", "-dash", " ", "\0nul", "back\\slash", "%2F", "é/ü",
                 "日本語", "a" * 300]


def case_names(rng) -> dict:
    out = {}
    for n in HOSTILE_NAMES:
        v = np.array([len(out)], np.int32)
        out[n] = Item(hr.from_numpy(v), v.tobytes(), "must")
    return out


def case_long_name(rng) -> dict:
    v = np.array([7], np.uint8)
    return {"n" * 65535: Item(hr.from_numpy(v), v.tobytes(), "must")}


KV_ALL = {"str": "llama", "str/empty": "", "str/utf8": "héllo 世界", "i64": 32,
          "i64/min": -2**63, "i64/max": 2**63 - 1, "f64": 0.5, "f64/nan": float("nan"),
          "bool/t": True, "bool/f": False, "bytes": b"\0\xff", "bytes/empty": b"",
          "arr/i64": [1, -2, 3], "arr/f64": [1.5, -0.0], "arr/str": ["a", "é"],
          "arr/bool": [True, False], "arr/bytes": [b"x", b""], "ключ": 1, "k" * 65535: 1}

# file stem -> (builder, kv)
CASES = {
    "dtypes": (case_dtypes, None),
    "empty-and-scalars": (case_empty, None),
    "layouts": (case_layouts, None),
    "sparse": (case_sparse, None),
    "sections": (case_sections, None),
    "quant": (case_quant, None),
    "composite": (case_composite, None),
    "names": (case_names, None),
    "long-name": (case_long_name, None),
    "kv-all-types": (lambda rng: {"t": Item(hr.Tensor(bytes(4), hr.float32, [1]), bytes(4), "must")},
                     KV_ALL),
    "no-tensors": (lambda rng: {}, None),
    "kv-only": (lambda rng: {}, {"only": "kv"}),
}


def hexs(b) -> str | None:
    return None if b is None else bytes(b).hex()


def buffers_of(t) -> list:
    return [np.asarray(t.buffer(i)).tobytes() for i in range(t.buffer_count)]


def write_case(outdir: str, stem: str, items: dict, kv) -> str:
    """Saves one file and its sidecar; returns the .hrry path."""
    path = os.path.join(outdir, stem + ".hrry")
    hr.save(path, {n: it.tensor for n, it in items.items()}, **({"kv": kv} if kv else {}))
    blob = open(path, "rb").read()
    back = hr.load(path)
    entries = []
    for name, it in items.items():
        t = back[name]
        if isinstance(t, hr.Composite):
            entries.append({"name": name, "policy": it.policy, "data": hexs(it.data),
                            "buffers": [], "layout": repr(t.layout)})
            for m, (suffix, mdata) in zip(t.members, it.members):
                entries.append({"name": name + suffix, "policy": "must", "data": hexs(mdata),
                                "buffers": [hexs(b) for b in buffers_of(m)],
                                "layout": repr(m.layout)})
            continue
        entries.append({"name": name, "policy": it.policy, "data": hexs(it.data),
                        "buffers": [hexs(b) for b in buffers_of(t)], "layout": repr(t.layout),
                        "file": it.file})
    check_against_bytes(blob, entries)
    side = {"file": os.path.basename(path), "facts": facts(blob),
            "kv": repr(hr.load_kv(path)) if kv else None, "tensors": entries}
    with open(os.path.join(outdir, stem + ".json"), "w", encoding="utf-8") as f:
        json.dump(side, f, indent=1, ensure_ascii=True)
    return path


def check_against_bytes(blob: bytes, entries: list) -> None:
    """The buffers pyhurray reads back must be the bytes at the offsets the
    index and the placement rule give (else the sidecar, or parse.py, is
    wrong): raises AssertionError."""
    c = parse(blob)
    by_name = {e.name.decode("utf-8"): e for e in c.entries}
    assert sorted(by_name) == sorted(x["name"] for x in entries), "index names differ"
    for x in entries:
        e = by_name[x["name"]]
        offs = e.buffer_offsets(c.alignment)
        got = [blob[o:o + n].hex() for o, n in zip(offs, e.buffer_sizes)]
        assert got == x["buffers"], f"{x['name'][:40]!r}: buffers at {offs} differ from hr.load's"


def gen_hurray(outdir: str, log) -> list[str]:
    """Writes every case; returns the .hrry paths."""
    os.makedirs(outdir, exist_ok=True)
    paths = []
    for i, (stem, (build, kv)) in enumerate(CASES.items()):
        rng = np.random.default_rng(RNG_SEED + i)
        path = write_case(outdir, stem, build(rng), kv)
        log(f"  wrote {os.path.basename(path)} ({os.path.getsize(path)} bytes)")
        paths.append(path)
    return paths
