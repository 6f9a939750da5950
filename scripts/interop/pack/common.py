"""What the pack suite's modules share: running `ztfs pack`, what a source
holds as read by its own reference reader (safetensors header and bytes,
gguf-py's GGUFReader, the ztensor package), what a packed file holds as
the ztensor package reads it, and the checks every packed file gets
(deep verify by the package and by ztfs, the content digest three ways).
"""

from __future__ import annotations

import dataclasses
import json
import os
import struct
from typing import Optional

import ztensor

from ..container import read_raw
from ..content import content_digests, content_value
from ..package import package_view
from ..results import Results, short
from ..ztfs import Ztfs

# safetensors dtype -> (zTensor dtype, logical type): the spec's Appendix A
# where it has the type; F6_* carry the names ztfs gives them (no
# registered type, so a pack refuses them).
ST_TYPES = {
    "BOOL": ("u8", "bool"), "U8": ("u8", None), "I8": ("i8", None),
    "F4": ("u8", "f4_e2m1"), "F6_E2M3": ("u8", "f6_e2m3fn"), "F6_E3M2": ("u8", "f6_e3m2fn"),
    "F8_E5M2": ("u8", "f8_e5m2"), "F8_E4M3": ("u8", "f8_e4m3fn"), "F8_E8M0": ("u8", "f8_e8m0"),
    "F8_E4M3FNUZ": ("u8", "f8_e4m3fnuz"), "F8_E5M2FNUZ": ("u8", "f8_e5m2fnuz"),
    "I16": ("i16", None), "U16": ("u16", None), "F16": ("f16", None), "BF16": ("bf16", None),
    "I32": ("i32", None), "U32": ("u32", None), "F32": ("f32", None), "C64": ("f32", "complex64"),
    "F64": ("f64", None), "I64": ("i64", None), "U64": ("u64", None),
}

# GGUF tensor types with a dense zTensor dtype; every other (block) type is
# layout gguf.<type>/1 over u8 (notes §3.6).
GGUF_DENSE = {"F32": "f32", "F16": "f16", "BF16": "bf16", "F64": "f64", "I8": "i8",
              "I16": "i16", "I32": "i32", "I64": "i64"}


@dataclasses.dataclass
class Tensor:
    """One tensor as its source's reference reader gives it."""
    shape: list
    layout: str
    dtype: str
    logical: Optional[str]
    data: bytes


def st_tensors(path: str) -> tuple[dict, Optional[dict]]:
    """A safetensors file's tensors (raw bytes by the header's offsets,
    cross-checked against safe_open where numpy has the dtype) and its
    __metadata__."""
    from safetensors import safe_open

    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        body = f.read()
    meta = header.pop("__metadata__", None)
    out = {}
    with safe_open(path, framework="numpy") as f:
        for name, e in header.items():
            a, b = e["data_offsets"]
            dtype, logical = ST_TYPES[e["dtype"]]
            data = body[a:b]
            try:
                arr = f.get_tensor(name)
            except Exception:  # noqa: BLE001 - numpy lacks bf16, f8, f4, f6
                arr = None
            if arr is not None and arr.tobytes() != data:
                raise ValueError(f"{name!r}: safe_open's bytes are not the header's range")
            out[name] = Tensor(list(e["shape"]), "dense", dtype, logical, data)
    return out, meta


def gguf_tensors(path: str) -> dict:
    """A GGUF file's tensors as GGUFReader reads them: the raw bytes, the
    row-major shape (GGUF dims reversed)."""
    import gguf

    out = {}
    for t in gguf.GGUFReader(path).tensors:
        ty = t.tensor_type.name
        shape = [int(d) for d in reversed(t.shape.tolist())]
        if ty in GGUF_DENSE:
            out[t.name] = Tensor(shape, "dense", GGUF_DENSE[ty], None, t.data.tobytes())
        else:
            out[t.name] = Tensor(shape, f"gguf.{ty.lower()}/1", "u8", None, t.data.tobytes())
    return out


def zt_objects(path: str) -> dict:
    """A zTensor file as the ztensor package reads it: name -> PObj."""
    return package_view(path)[0]


def one_part(objs: dict) -> dict:
    """Package objects of one part `data` as Tensors (for comparing with a
    safetensors or GGUF source); an object of other parts is kept whole."""
    out = {}
    for name, o in objs.items():
        if list(o.parts) == ["data"]:
            p = o.parts["data"]
            out[name] = Tensor(list(o.shape), o.layout, p.dtype, p.logical, p.data)
        else:
            out[name] = o
    return out


def diff_tensors(want: dict, got: dict) -> list[str]:
    """What differs between two name -> Tensor (or PObj) maps."""
    problems = []
    if set(want) != set(got):
        problems.append(f"names differ: missing {sorted(set(want) - set(got))[:5]}, "
                        f"extra {sorted(set(got) - set(want))[:5]}")
    for name in sorted(set(want) & set(got)):
        w, g = want[name], got[name]
        if w == g:
            continue
        for field in ("shape", "layout", "dtype", "logical", "parts"):
            if getattr(w, field, None) != getattr(g, field, None):
                a, b = getattr(w, field, None), getattr(g, field, None)
                if field == "parts":
                    a = {k: (p.dtype, p.logical, len(p.data)) for k, p in a.items()}
                    b = {k: (p.dtype, p.logical, len(p.data)) for k, p in b.items()}
                problems.append(f"{name!r}: {field} {a!r} vs {b!r}")
                break
        else:
            problems.append(f"{name!r}: {len(w.data)} bytes vs {len(g.data)} bytes, "
                            f"first difference at {first_diff(w.data, g.data)}")
    return problems


def first_diff(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def pack(z: Ztfs, src: str, out: str, flags: tuple = ()) -> tuple[int, bytes, bytes]:
    """`ztfs pack SRC -o OUT FLAGS...`: the flags last, since `--zstd` takes
    an optional level and would read SRC as one."""
    return z.run("pack", [], (src, "-o", out, *flags))


def ztfs_digest(z: Ztfs, path: str, algo: str = "sha256") -> tuple[Optional[str], str]:
    rc, out, err = z.run("digest", [path], ("--algo", algo))
    if rc != 0:
        return None, f"`ztfs digest` exited {rc}: {short(err)}"
    return out.decode().strip(), ""


def python_content(path: str, res: Results, where: str) -> Optional[list]:
    """The §6.4 value of a zTensor file, from the package's view of it and
    the manifest read directly (content.py; its own CBOR encoder)."""
    objs = zt_objects(path)
    return content_value(objs, read_raw(path).manifest, res, where)


def check_packed(z: Ztfs, res: Results, where: str, out: str) -> Optional[list]:
    """The checks every packed file gets: the package's deep verify, `ztfs
    check --verify`, and `ztfs digest` equal to the content digest computed
    here. Returns the content value (None when a check could not run)."""
    try:
        checked, undigested = ztensor.verify(out, deep=True)
        res.check(undigested == 0, where,
                  f"ztensor.verify(deep=True): {undigested} parts without a digest")
    except Exception as e:  # noqa: BLE001 - a refusal is the failure reported
        res.fail(where, f"ztensor.verify(deep=True) raised {type(e).__name__}: {e}")
    rc, _, err = z.run("check", [out], ("--verify",))
    res.check(rc == 0, where, f"`ztfs check --verify` of the output exited {rc}: {short(err)}")
    try:
        value = python_content(out, res, where)
    except Exception as e:  # noqa: BLE001
        res.fail(where, f"the package cannot read the output: {type(e).__name__}: {e}")
        return None
    if not res.check(value is not None, where, "a part of the output has no digest"):
        return None
    for algo in ("sha256", "xxh3"):
        got, why = ztfs_digest(z, out, algo)
        want = content_digests(value)[algo]
        res.check(got == want, where, f"`ztfs digest --algo {algo}` gives {got or why}, "
                  f"the content digest computed here is {want}")
    return value


def files_of(path: str) -> dict:
    """The output file and its positional shards (name -> bytes), and any
    stray temporary file beside them."""
    d, base = os.path.split(path)
    stem = base[:-3] if base.endswith(".zt") else base
    out = {}
    for n in sorted(os.listdir(d)):
        if n == base or n.startswith(stem + "-") or n.startswith("." + base):
            with open(os.path.join(d, n), "rb") as f:
                out[n] = f.read()
    return out

