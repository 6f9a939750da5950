"""The GGUF suite: files written by gguf-py's `GGUFWriter` (PyPI `gguf`,
pinned in scripts/venv.sh) read by ztfs as `GGUFReader` reads them, and
the corpus's GGUF reject files through `GGUFReader`.

Forward, per written file: `ztfs check` accepts it; every tensor's
`ztfs cat` bytes equal `GGUFReader`'s tensor data bytes; `ztfs manifest`
lists the reader's fields (key, GGUF type, value; arrays, strings and
tokenizer tables included) in the same order, and its tensor infos (dims
as written, ggml type, absolute offset, byte length) equal the reader's;
then a mount, where each unquantized tensor's `data.npy` loads with numpy
to the reader's array (dtype and shape: the GGUF dims reversed) and each
quantized tensor's `data` is its block bytes.

Reverse: every file of corpus/gguf/reject must be refused by `GGUFReader`
too, except those in `READER_ACCEPTS`, where gguf-py checks less than the
spec (the reason is given there). Agreement is on refusal, not on the
reason: gguf-py names none, and several reject files (a tensor info with
no data behind it) also fail its reshape.
"""

from __future__ import annotations

import glob
import json
import os

import numpy as np

from ..mount import mounted
from ..results import Results, short

# Reject files gguf-py 0.19.0 reads without complaint, and why ztfs refuses them.
READER_ACCEPTS = {
    "alignment-4.gguf": "the spec says general.alignment is a multiple of 8; gguf-py and ggml "
                        "check only for a power of two",
    "data-misaligned.gguf": "gguf-py does not check that a tensor offset is aligned",
    "data-offset-overflow.gguf": "gguf-py adds the offset in numpy uint64 (it warns of the "
                                 "overflow) and reads the wrapped position",
    "data-overlap.gguf": "gguf-py does not check that tensors overlap",
    "kv-bool-2.gguf": "gguf-py reads any byte as a bool (the spec: anything but 0/1 is invalid)",
    "kv-bool-array-2.gguf": "the same, in an array",
    "kv-key-empty.gguf": "gguf-py accepts an empty key (ggml refuses it)",
    "kv-nested-too-deep.gguf": "gguf-py recurses into nested arrays without a bound "
                               "(ztfs: 8 levels; ggml: no nesting at all)",
    "kv-string-not-utf8.gguf": "gguf-py decodes string values only when asked (ReaderField.contents)",
}

# gguf-py's GGUFValueType names -> manifest.json's.
TYPE_NAMES = {
    "UINT8": "uint8", "INT8": "int8", "UINT16": "uint16", "INT16": "int16",
    "UINT32": "uint32", "INT32": "int32", "FLOAT32": "float32", "BOOL": "bool",
    "STRING": "string", "ARRAY": "array", "UINT64": "uint64", "INT64": "int64",
    "FLOAT64": "float64",
}


def write_files(outdir: str) -> list[str]:
    """A few files written by GGUFWriter: KVs of several types (arrays and
    strings too), F32/F16/Q8_0/Q4_0 tensors, default and non-default
    alignment, a tensor named ""."""
    import gguf

    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(7)
    paths = []
    for name, alignment in (("default.gguf", None), ("aligned-64.gguf", 64),
                            ("aligned-256.gguf", 256)):
        path = os.path.join(outdir, name)
        w = gguf.GGUFWriter(path, "llama")
        if alignment:
            w.add_custom_alignment(alignment)
        w.add_name(f"interop {name}")
        w.add_uint32("x.u32", 4_000_000_000)
        w.add_int32("x.i32", -7)
        w.add_uint64("x.u64", 2**60 + 1)
        w.add_int64("x.i64", -(2**62))
        w.add_float32("x.f32", 0.1)
        w.add_float64("x.f64", 1e300)
        w.add_bool("x.bool", True)
        w.add_string("x.str", "héllo \u2603")
        w.add_uint8("x.u8", 255)
        w.add_int16("x.i16", -300)
        w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "é", "", "tok"] * 40)
        w.add_array("tokenizer.ggml.scores", [float(i) / 3 for i in range(200)])
        w.add_array("tokenizer.ggml.token_type", [1, 2, 3, 6] * 50)
        w.add_tensor("token_embd.weight", rng.standard_normal((6, 8)).astype(np.float32))
        w.add_tensor("blk.0.attn_norm.weight", rng.standard_normal(8).astype(np.float16))
        w.add_tensor("blk.0.cube", rng.standard_normal((2, 3, 4)).astype(np.float32))
        q8 = rng.integers(0, 256, (3, 2 * 34), dtype=np.uint8)
        w.add_tensor("blk.0.ffn_up.weight", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        q4 = rng.integers(0, 256, (2, 18), dtype=np.uint8)
        w.add_tensor("blk.0.ffn_down.weight", q4, raw_dtype=gguf.GGMLQuantizationType.Q4_0)
        # Real weights quantized by gguf-py itself (its quantizers).
        from gguf import quants
        for ty in (gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0,
                   gguf.GGMLQuantizationType.Q5_1, gguf.GGMLQuantizationType.TQ2_0):
            v = rng.standard_normal((4, 256)).astype(np.float32)
            w.add_tensor(f"blk.1.{ty.name.lower()}.weight", quants.quantize(v, ty), raw_dtype=ty)
        if alignment == 64:
            # GGUFWriter writes an empty name (the spec forbids none); ztfs reads it.
            w.add_tensor("", rng.standard_normal(5).astype(np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        paths.append(path)
    return paths


def reader_kvs(r) -> list[dict]:
    """The reader's fields as manifest.json's `kv` list (pseudo-fields dropped)."""
    out = []
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        names = [TYPE_NAMES[t.name] for t in f.types]
        ty = names[0] if names[0] != "array" else f"array<{names[-1] if len(names) > 1 else 'uint8'}>"
        out.append({"key": f.name, "type": ty, "value": f.contents()})
    return out


def json_value(v):
    """A manifest value as Python: `{"$int": ...}` and `{"$float": ...}` unwrapped."""
    if isinstance(v, dict) and len(v) == 1:
        (k, x), = v.items()
        if k == "$int":
            return int(x)
        if k == "$float":
            return float(x)
    if isinstance(v, list):
        return [json_value(x) for x in v]
    return v


def object_dirs(mnt: str) -> dict:
    """A mount's object directories by object name (from each meta.json)."""
    dirs = {}
    for d in os.listdir(mnt):
        meta_path = os.path.join(mnt, d, "meta.json")
        if os.path.isfile(meta_path):
            with open(meta_path) as f:
                dirs[json.load(f)["name"]] = os.path.join(mnt, d)
    return dirs


def check_cat(z, path: str, t, res: Results, where: str):
    """`ztfs cat PATH TENSOR` gives reader tensor `t`'s bytes."""
    rc, data, err = z.run("cat", [path, t.name])
    res.check(rc == 0 and data == t.data.tobytes(), where,
              f"cat {t.name!r}: {short(err)} ({len(data)} bytes vs {t.data.nbytes})")


def check_values(z, path: str, t, res: Results, where: str):
    """`ztfs cat --values PATH TENSOR` of a quantized tensor is what
    gguf-py's `quants.dequantize` makes of its blocks, as little-endian f32
    bytes (bit for bit: NaNs of the same payload)."""
    from gguf import quants

    if t.tensor_type.name in ("F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64"):
        return
    want = quants.dequantize(t.data, t.tensor_type).astype("<f4").tobytes()
    rc, data, err = z.run("cat", [path, t.name], ("--values",))
    res.check(rc == 0 and data == want, where,
              f"cat --values {t.name!r}: {short(err)} ({len(data)} bytes vs {len(want)})")


def check_data(dirs: dict, t, res: Results, where: str):
    """A mount's `data` of reader tensor `t` (its directory in `dirs`) is
    the reader's bytes; returns the directory, None when there is none."""
    d = dirs.get(t.name)
    if not res.check(d is not None, where, f"no directory for {t.name!r}"):
        return None
    with open(os.path.join(d, "data"), "rb") as f:
        res.check(f.read() == t.data.tobytes(), where, f"{t.name!r}: data differs")
    return d


def check_forward(path: str, z, res: Results):
    import gguf

    where = os.path.basename(path)
    rc, out, err = z.run("check", [path])
    if not res.check(rc == 0, where, f"ztfs check: {short(err)}"):
        return
    r = gguf.GGUFReader(path)
    rc, out, err = z.run("manifest", [path])
    if not res.check(rc == 0, where, f"ztfs manifest: {short(err)}"):
        return
    doc = json.loads(out)
    got = [{"key": e["key"], "type": e["type"], "value": json_value(e["value"])} for e in doc["kv"]]
    want = reader_kvs(r)
    res.check(got == want, where, "manifest KVs differ from GGUFReader's fields: "
              + next((f"{g} != {w}" for g, w in zip(got, want) if g != w), "lengths"))
    res.check(doc["alignment"] == r.alignment and doc["data_offset"] == r.data_offset, where,
              f"alignment/data offset {doc['alignment']}/{doc['data_offset']} vs "
              f"{r.alignment}/{r.data_offset}")
    infos = {t["name"]: t for t in doc["tensors"]}
    for t in r.tensors:
        info = infos.get(t.name)
        if not res.check(info is not None, where, f"tensor {t.name!r} missing from manifest"):
            continue
        res.check(info["dims"] == t.shape.tolist() and info["type"] == t.tensor_type.name.lower()
                  and info["file_offset"] == t.data_offset and info["length"] == t.n_bytes,
                  where, f"tensor info {t.name!r}: {info} vs {t.shape.tolist()} "
                  f"{t.tensor_type.name} {t.data_offset} {t.n_bytes}")
        check_cat(z, path, t, res, where)
        check_values(z, path, t, res, where)
    with mounted(z, path, res, where) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"mount: {short(err)}"):
            return
        dirs = object_dirs(mnt)
        for t in r.tensors:
            d = check_data(dirs, t, res, where)
            if d and t.tensor_type.name in ("F32", "F16"):
                a = np.load(os.path.join(d, "data.npy"))
                res.check(a.dtype == t.data.dtype and a.shape == t.data.shape
                          and np.array_equal(a, t.data), where,
                          f"{t.name!r}: data.npy {a.dtype}{a.shape} vs the reader's "
                          f"{t.data.dtype}{t.data.shape}")


def check_rejects(corpus: str, res: Results):
    import warnings

    import gguf

    files = sorted(glob.glob(os.path.join(corpus, "gguf", "reject", "*.gguf")))
    res.check(bool(files), "gguf reverse", f"no reject files under {corpus}/gguf/reject")
    for path in files:
        name = os.path.basename(path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gguf.GGUFReader(path)
            refused = False
        except Exception:  # noqa: BLE001 - any refusal counts
            refused = True
        if name in READER_ACCEPTS:
            res.check(not refused, name, "GGUFReader now refuses it: drop it from READER_ACCEPTS")
        else:
            res.check(refused, name, "GGUFReader accepts a file ztfs rejects (not in READER_ACCEPTS)")


def run_gguf(args, z, res: Results, outdir: str):
    from importlib.metadata import version

    print(f"\n== gguf: writing files with gguf {version('gguf')} into {outdir}")
    paths = write_files(outdir)
    if args.only:
        paths = [p for p in paths if args.only in os.path.basename(p)]
    if z is not None:
        print("\n== gguf forward: GGUFWriter files through ztfs")
        for p in paths:
            try:
                check_forward(p, z, res)
            except Exception as e:  # noqa: BLE001 - a harness error is a failure
                res.fail(os.path.basename(p), f"harness error: {type(e).__name__}: {e}")
        if not args.only or "split" in args.only:
            from .split import run_split
            run_split(z, res, outdir)
        if not args.only or "values" in args.only:
            from .values import run_values
            run_values(z, res, outdir)
        if not args.only or "real" in args.only:
            from .real import run_real, run_real_packed
            run_real(z, res)
            run_real_packed(z, outdir, res)
        if not args.only or "transformers" in args.only:
            from .transformers import run_transformers
            try:
                run_transformers(z, outdir, res)
            except Exception as e:  # noqa: BLE001 - a harness error is a failure
                res.fail("gguf transformers", f"harness error: {type(e).__name__}: {e}")
    if not args.skip_corpus:
        print(f"\n== gguf reverse: {args.corpus}/gguf/reject through GGUFReader")
        check_rejects(args.corpus, res)
    print("== gguf: reject files gguf-py reads (ztfs refuses them)")
    for k, why in READER_ACCEPTS.items():
        print(f"  {k}: {why}")
