"""GGUF key-values through `ztfs pack` and `ztensor.convert`.

gguf-py's GGUFWriter writes a file holding every KV type (u8..i64, f32,
f64, bool, string, arrays of each, an array given as bytes, nested arrays)
and tensors of every unquantized type (f32, f16, bf16, f64, i8..i64) and
some block types (q8_0 made by gguf.quants.quantize; q4_0, q5_1, q4_k,
q6_k, iq4_nl as random blocks). Both
converters write it; the outputs must be byte-identical, and the file
attributes each gives (`ztensor.open(out).attributes`) must be the values
written, typed as GGUF types them (an f32 as the float it holds, arrays as
lists of the same types). Where they differ, every differing key is
reported with both values and types. The tensors read back as GGUFReader
reads them, and the packed file gets the checks of every packed file.

`reader_kvs` (also used for the corpus) rebuilds GGUFReader's fields from
its parts: its `contents()` flattens nested arrays.
"""

from __future__ import annotations

import os

import numpy as np
import ztensor

from ..container import read_raw
from ..content import same_value
from .common import check_packed, diff_tensors, first_diff, gguf_tensors, one_part, pack
from .common import zt_objects
from ..results import Results
from ..ztfs import Ztfs


def _value(parts: list, i: int, vtype: int):
    """One value of GGUF type `vtype` from a ReaderField's parts at `i`;
    returns (value, next part index)."""
    import gguf

    t = gguf.GGUFValueType
    if vtype == t.STRING:
        return bytes(parts[i + 1]).decode("utf-8"), i + 2
    if vtype == t.ARRAY:
        itype, n = int(parts[i][0]), int(parts[i + 1][0])
        i += 2
        items = []
        while len(items) < n:
            if itype in (t.STRING, t.ARRAY):
                v, i = _value(parts, i, itype)
                items.append(v)
            else:
                items += [_scalar(itype, x) for x in parts[i].tolist()]
                i += 1
        return items, i
    return _scalar(vtype, parts[i].tolist()[0]), i + 1


def _scalar(vtype: int, x):
    import gguf

    t = gguf.GGUFValueType
    if vtype == t.BOOL:
        return bool(x)
    if vtype in (t.FLOAT32, t.FLOAT64):
        return float(x)
    return int(x)


def reader_kvs(path: str) -> dict:
    """GGUFReader's key-values, typed as read, nested arrays kept nested."""
    import gguf

    out = {}
    for f in gguf.GGUFReader(path).fields.values():
        if f.name.startswith("GGUF."):
            continue
        out[f.name] = _value(f.parts, 3, int(f.parts[2][0]))[0]
    return out


def write_kv_file(path: str) -> dict:
    """Writes the file; returns the KVs as written (f32 values as the float
    an f32 holds)."""
    import gguf

    t = gguf.GGUFValueType
    f32 = lambda x: float(np.float32(x))  # noqa: E731
    w = gguf.GGUFWriter(path, "llama")
    want = {"general.architecture": "llama"}
    scalars = [("k.u8", 200, t.UINT8), ("k.i8", -100, t.INT8), ("k.u16", 60000, t.UINT16),
               ("k.i16", -30000, t.INT16), ("k.u32", 4_000_000_000, t.UINT32),
               ("k.i32", -2_000_000_000, t.INT32), ("k.u64", 2**64 - 1, t.UINT64),
               ("k.i64", -(2**63), t.INT64), ("k.f32", 0.1, t.FLOAT32),
               ("k.f32.half", 0.5, t.FLOAT32), ("k.f32.int", 3.0, t.FLOAT32),
               ("k.f32.inf", float("inf"), t.FLOAT32), ("k.f64", 0.1, t.FLOAT64),
               ("k.f64.one", 1.0, t.FLOAT64), ("k.f64.f32exact", 0.25, t.FLOAT64),
               ("k.bool", True, t.BOOL), ("k.bool.false", False, t.BOOL),
               ("k.str", "héllo \u2603", t.STRING), ("k.zero", 0, t.UINT64)]
    for key, v, ty in scalars:
        w.add_key_value(key, v, ty)
        want[key] = f32(v) if ty == t.FLOAT32 else v
    arrays = [("k.arr.u8", [0, 255], t.UINT8), ("k.arr.i8", [-128, 127], t.INT8),
              ("k.arr.u16", [0, 65535], t.UINT16), ("k.arr.i16", [-1, 2], t.INT16),
              ("k.arr.u32", [1, 2**32 - 1], t.UINT32), ("k.arr.i32", [-5, 5], t.INT32),
              ("k.arr.u64", [2**64 - 1], t.UINT64), ("k.arr.i64", [-(2**63), 1], t.INT64),
              ("k.arr.f32", [0.1, 0.5, -2.0], t.FLOAT32), ("k.arr.f64", [0.1, 1e300], t.FLOAT64),
              ("k.arr.bool", [True, False, True], t.BOOL), ("k.arr.str", ["a", "", "é"], t.STRING)]
    for key, v, ty in arrays:
        w.add_key_value(key, v, t.ARRAY, ty)
        want[key] = [f32(x) for x in v] if ty == t.FLOAT32 else list(v)
    w.add_key_value("k.arr.bytes", b"\x00\x01\xff", t.ARRAY)  # bytes: an array of u8
    want["k.arr.bytes"] = [0, 1, 255]
    w.add_key_value("k.arr.nested", [[1, 2], [3]], t.ARRAY)
    want["k.arr.nested"] = [[1, 2], [3]]
    w.add_key_value("k.arr.nested.str", [["x"], ["y", "z"]], t.ARRAY)
    want["k.arr.nested.str"] = [["x"], ["y", "z"]]
    w.add_key_value("k.arr.nested.3", [[[1.5], [2.5]], [[-1.0]]], t.ARRAY)
    want["k.arr.nested.3"] = [[[1.5], [2.5]], [[-1.0]]]
    rng = np.random.default_rng(11)
    w.add_tensor("f32", rng.standard_normal((4, 8)).astype(np.float32))
    w.add_tensor("f16", rng.standard_normal(16).astype(np.float16))
    q = gguf.quants.quantize(rng.standard_normal((2, 64)).astype(np.float32),
                             gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("q8", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("f64", rng.standard_normal(8))
    for dt in (np.int8, np.int16, np.int32, np.int64):
        w.add_tensor(np.dtype(dt).name, rng.integers(-100, 100, 8, dtype=dt))
    bf16 = (rng.standard_normal(64).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    w.add_tensor("bf16", bf16.view(np.uint8).reshape(2, 64),
                 raw_dtype=gguf.GGMLQuantizationType.BF16)
    for name in ("Q4_0", "Q5_1", "Q4_K", "Q6_K", "IQ4_NL"):  # block bytes as they come
        qt = getattr(gguf.GGMLQuantizationType, name)
        row = gguf.GGML_QUANT_SIZES[qt][1]
        w.add_tensor(name.lower(), rng.integers(0, 256, (2, row), dtype=np.uint8), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return want


def describe(v) -> str:
    """A value with its Python types, so 1, 1.0, True and b'' tell apart."""
    if isinstance(v, list):
        return "[" + ", ".join(describe(x) for x in v[:4]) + (", ..." if len(v) > 4 else "") + "]"
    return f"{v!r}:{type(v).__name__}"


def attr_diff(want: dict, got, who: str) -> list[str]:
    if not isinstance(got, dict):
        return [f"{who} has attributes {got!r}"]
    out = []
    if who != "GGUFReader" and list(got) != sorted(got, key=lambda k: (len(k.encode()), k.encode())):
        out.append(f"{who}: keys not in deterministic CBOR order")
    for k in sorted(set(want) | set(got)):
        if k not in got or k not in want:
            out.append(f"{k}: {'missing from' if k not in got else 'extra in'} {who}")
        elif not same_value(want[k], got[k]):
            out.append(f"{k}: written {describe(want[k])}, {who} {describe(got[k])}")
    return out


def run_gguf_kv(z: Ztfs, res: Results, tmp: str) -> None:
    where = "pack gguf-kv"
    src = os.path.join(tmp, "kv.gguf")
    want = write_kv_file(src)
    rc, _, err = z.run("check", [src])
    if not res.check(rc == 0, where, f"`ztfs check` of the GGUF file exited {rc}: {err!r:.200}"):
        return
    got_reader = reader_kvs(src)
    res.check(not attr_diff(want, got_reader, "GGUFReader"), where,
              "GGUFReader does not read back what was written: "
              + "; ".join(attr_diff(want, got_reader, "GGUFReader")[:6]))
    out, conv = os.path.join(tmp, "kv.pack.zt"), os.path.join(tmp, "kv.convert.zt")
    rc, _, err = pack(z, src, out)
    if not res.check(rc == 0, where, f"`ztfs pack` exited {rc}: {err!r:.200}"):
        return
    check_packed(z, res, where, out)
    tensors = gguf_tensors(src)
    problems = diff_tensors(tensors, one_part(zt_objects(out)))
    res.check(not problems, where, "pack's tensors: " + "; ".join(problems[:4]))
    with ztensor.open(out) as s:
        d = attr_diff(want, s.attributes, "pack")
    res.check(not d, where, "pack's file attributes differ from the KVs: " + "; ".join(d))
    try:
        ztensor.convert(src, conv)
    except Exception as e:  # noqa: BLE001 - the package's refusal is the finding
        res.fail(where, f"ztensor.convert raises {type(e).__name__}: {e}")
        return
    problems = diff_tensors(tensors, one_part(zt_objects(conv)))
    res.check(not problems, where, "convert's tensors: " + "; ".join(problems[:4]))
    with ztensor.open(conv) as s:
        dc = attr_diff(want, s.attributes, "convert")
    res.check(not dc, where, "convert's file attributes differ from the KVs: " + "; ".join(dc))
    with open(out, "rb") as f:
        a = f.read()
    with open(conv, "rb") as f:
        b = f.read()
    if a != b:
        ma, mb = read_raw(out).manifest, read_raw(conv).manifest
        keys = [k for k in ma if ma.get(k) != mb.get(k)] + [k for k in mb if k not in ma]
        res.fail(where, f"pack and convert differ: {len(a)} vs {len(b)} bytes, first "
                 f"difference at {first_diff(a, b)}; manifest fields differing: {keys}")
    else:
        res.ok()
    print(f"ok   gguf key-values: {len(want)} keys, {len(tensors)} tensors", flush=True)
