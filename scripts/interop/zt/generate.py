"""Generating files with the package: every single-file case the forward
direction checks (`gen_all`), each a `Gen`, and the writing helpers the
sharded model reuses.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import unicodedata
from typing import Optional

import numpy as np
import ztensor
import ztensor.numpy as ztnp

from ..container import ZSTD


@dataclasses.dataclass
class Gen:
    """One file the package wrote."""

    name: str
    path: str
    group: Optional[str] = None  # files of one group hold the same content
    reject_rule: Optional[str] = None  # set when the package wrote a broken file
    what: str = ""
    shared: tuple = ()  # (object, part) pairs that must share one blob reference
    # A multi-file model: shard name -> the file holding it (for the stored
    # bytes of its parts), and where the package reads the model when that is
    # not `path` (the package finds shards only positionally, so a renamed
    # family is read through the same family under its positional names).
    shard_files: dict = dataclasses.field(default_factory=dict)
    view_path: Optional[str] = None


RNG_SEED = 20240229

DTYPE_WIDTH = {
    "f64": 8, "f32": 4, "f16": 2, "bf16": 2,
    "i64": 8, "i32": 4, "i16": 2, "i8": 1,
    "u64": 8, "u32": 4, "u16": 2, "u8": 1,
}


def rand_bytes(rng, n: int) -> bytes:
    return rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()


# A dense tensor: (name, dtype, logical, shape, bytes); an object:
# (name, shape, parts{name: {dtype, data, logical?, encoding?}}, layout, attrs)


def write_tensors(path, items, *, canonical, align=None, attrs=None, order=None):
    """Writes `items` (dense tuples and object tuples) in the given order."""
    w = ztensor.Writer(path, canonical=canonical, align=align)
    try:
        if attrs is not None:
            w.set_attributes(attrs)
        seq = list(items)
        if order == "sorted":
            seq.sort(key=lambda it: it[0].encode("utf-8"))
        elif order == "reversed":
            seq.sort(key=lambda it: it[0].encode("utf-8"), reverse=True)
        for it in seq:
            if len(it) == 6:  # dense with encoding
                name, dtype, logical, shape, data, enc = it
                w.add(name, data, list(shape), dtype, logical=logical, encoding=enc)
            elif isinstance(it[2], dict):  # an object made with obj()
                name, shape, parts, layout, oattrs = it
                w.add_object(name, list(shape), parts, layout=layout, attributes=oattrs)
            else:
                name, dtype, logical, shape, data = it
                w.add(name, data, list(shape), dtype, logical=logical)
        w.finish()
    except BaseException:
        try:
            w.abandon()
        except BaseException:
            pass
        raise


def obj(name, shape, parts, layout="dense", attrs=None):
    return (name, list(shape), parts, layout, attrs)


RICH_ATTRS = {
    "format": "interop",
    "ints": [0, 1, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63,
             2**64 - 1, -1, -24, -25, -256, -257, -(2**32), -(2**63)],
    "floats": [0.0, -0.0, 1.0, 1.5, -2.5, 0.1, 1e300, 65504.0, 65520.0,
               5.960464477539063e-08, 1e-10, 3.4028234663852886e38, 100000.0,
               math.inf, -math.inf, math.nan],
    "text": ["", "ascii", "ünïcödé", "日本語", "😀", "a\u0000b"],
    "flags": [True, False, None],
    "empty": {"list": [], "map": {}},
    # key order is by encoded bytes: length first, then bytewise
    "order": {"b": 1, "aa": 2, "a": 3, "objects": 4, "attributes": 5, "z": 6},
    "nested": {"": "empty key below the first level", "a\u0000b": 1,
               "deep": {"er": {"still": [1, [2, [3, {"x": None}]]]}}},
    "long": "x" * 5000,
    "many": list(range(300)),
}


def deep_list(n):
    v = 0
    for _ in range(n):
        v = [v]
    return v


def dense_set(rng):
    """Every dtype, logical types, scalars, zero-size, rank 64."""
    items = []
    for dt, w in DTYPE_WIDTH.items():
        items.append((f"dense.{dt}", dt, None, [3, 5], rand_bytes(rng, 15 * w)))
        items.append((f"scalar.{dt}", dt, None, [], rand_bytes(rng, w)))
        items.append((f"zero.{dt}", dt, None, [4, 0, 3], b""))
    items += [
        ("a.empty-first", "f32", None, [0], b""),
        ("bool.mask", "u8", "bool", [17], bytes(rng.integers(0, 2, 17, dtype=np.uint8))),
        ("bool.scalar", "u8", "bool", [], b"\x01"),
        ("bool.zero", "u8", "bool", [0], b""),
        ("lt.f8_e4m3fn", "u8", "f8_e4m3fn", [9], rand_bytes(rng, 9)),
        ("lt.f8_e5m2", "u8", "f8_e5m2", [3, 3], rand_bytes(rng, 9)),
        ("lt.f8_e4m3fnuz", "u8", "f8_e4m3fnuz", [9], rand_bytes(rng, 9)),
        ("lt.f8_e5m2fnuz", "u8", "f8_e5m2fnuz", [9], rand_bytes(rng, 9)),
        ("lt.f8_e8m0", "u8", "f8_e8m0", [9], rand_bytes(rng, 9)),
        ("lt.f4_e2m1.odd", "u8", "f4_e2m1", [5], b"\x21\x43\x05"),
        ("lt.f4_e2m1.even", "u8", "f4_e2m1", [2, 3], b"\x21\x43\x65"),
        ("lt.complex64", "f32", "complex64", [3], rand_bytes(rng, 24)),
        ("lt.complex128", "f64", "complex128", [2], rand_bytes(rng, 32)),
        ("rank64", "f32", None, [1] * 63 + [2], rand_bytes(rng, 8)),
        # Zero-size with huge dimensions: the product is 0 and overflows
        # nothing when taken left to right (the package's order); a reader
        # that multiplies right to left would overflow on 4 * 2**63.
        ("zero.huge-dims", "u8", None, [0, 2**63, 4], b""),
        ("zero.max-dim", "u8", None, [2**64 - 1, 0], b""),
        ("big.f32", "f32", None, [256, 1030], rand_bytes(rng, 256 * 1030 * 4)),
        obj("obj.with-attrs", [2, 2],
            {"data": {"dtype": "f32", "data": rand_bytes(rng, 16)}},
            attrs={"role": "weight", "scale": 0.5, "ints": [1, -1, 2**40],
                   "nested": {"k": [1.5, {"z": None, "a": True}]},
                   "deep28": deep_list(28)}),
        obj("obj.float-attrs", [1],
            {"data": {"dtype": "u8", "data": b"\x07"}},
            attrs={"f": RICH_ATTRS["floats"], "i": RICH_ATTRS["ints"]}),
    ]
    return items


def gen_all(tmp: str, log) -> list[Gen]:
    rng = np.random.default_rng(RNG_SEED)
    out: list[Gen] = []

    def p(name):
        return os.path.join(tmp, name)

    def add(gen: Gen, fn):
        t0 = time.monotonic()
        fn(gen.path)
        log(f"  wrote {gen.name} ({os.path.getsize(gen.path)} bytes, "
            f"{time.monotonic() - t0:.2f}s): {gen.what}")
        out.append(gen)

    file_attrs = dict(RICH_ATTRS)
    file_attrs["deep30"] = deep_list(30)  # the deepest the package allows here

    # 1. Every dtype, canonical and at 4 KiB in reverse order: one content.
    dense = dense_set(rng)
    add(Gen("dtypes-canonical.zt", p("dtypes-canonical.zt"), "dtypes",
            what="canonical; all 12 dtypes, logical types, scalar, zero-size, "
                 "rank 64, attributes"),
        lambda path: write_tensors(path, dense, canonical=True,
                                   attrs=file_attrs, order="sorted"))
    add(Gen("dtypes-4k.zt", p("dtypes-4k.zt"), "dtypes",
            what="same content, non-canonical, align 4096, reverse order"),
        lambda path: write_tensors(path, dense, canonical=False, align=4096,
                                   attrs=file_attrs, order="reversed"))

    # 2. zstd-seekable parts, then the same content ingested canonically.
    semi = rng.integers(0, 16, size=5 * 512 * 1024, dtype=np.uint8).tobytes()
    mib = 1024 * 1024
    zitems = [
        ("z.big-3-frames", "u8", None, [len(semi)], semi, ZSTD),
        ("z.exactly-1MiB", "u8", None, [mib], semi[:mib], ZSTD),
        ("z.1MiB-plus-1", "u8", None, [mib + 1], semi[: mib + 1], ZSTD),
        ("z.random", "f32", None, [300, 257], rand_bytes(rng, 300 * 257 * 4), ZSTD),
        ("z.small", "f32", None, [10], rand_bytes(rng, 40), ZSTD),
        ("z.empty", "f32", None, [0], b"", ZSTD),
        ("z.scalar", "i64", None, [], rand_bytes(rng, 8), ZSTD),
        ("z.bool", "u8", "bool", [1000], bytes(rng.integers(0, 2, 1000, dtype=np.uint8)), ZSTD),
        ("z.bf16", "bf16", None, [64, 64], rand_bytes(rng, 64 * 64 * 2), ZSTD),
        ("raw.alongside", "f16", None, [33], rand_bytes(rng, 66)),
        obj("z.mixed", [16],
            {"codes": {"dtype": "u8", "data": semi[:4096], "encoding": ZSTD},
             "scales": {"dtype": "f16", "data": rand_bytes(rng, 32)}},
            layout="acme.mixed/1", attrs={"note": "one encoded, one raw part"}),
    ]
    zpath = p("zstd.zt")
    add(Gen("zstd.zt", zpath, "zstd",
            what="non-canonical, zt.zstd-seekable/1 parts: 3 frames, exactly "
                 "1 MiB, 1 MiB + 1, empty, bool, bf16, mixed raw/encoded"),
        lambda path: write_tensors(path, zitems, canonical=False, align=4096,
                                   attrs={"compressed": True}))

    def ingest(path):
        w = ztensor.Writer(path)
        with ztensor.open(zpath) as src:
            w.ingest(src)
        w.finish()

    add(Gen("zstd-ingested-canonical.zt", p("zstd-ingested-canonical.zt"), "zstd",
            what="Writer.ingest of zstd.zt into a canonical (raw) file"),
        ingest)

    # 3. Tied tensors: identical bytes under several names, dtypes and shapes.
    emb = rand_bytes(rng, 64 * 16 * 4)
    tied = [
        ("embed.weight", "f32", None, [64, 16], emb),
        ("lm_head.weight", "f32", None, [64, 16], emb),
        ("alias.as_u8", "u8", None, [len(emb)], emb),
        ("alias.as_bf16", "bf16", None, [64, 32], emb),
        ("other", "f32", None, [64, 16], rand_bytes(rng, len(emb))),
        ("zero.a", "f32", None, [0], b""),
        ("zero.b", "i8", None, [0, 5], b""),
        obj("pair", [64, 16],
            {"a": {"dtype": "f32", "data": emb}, "b": {"dtype": "f32", "data": emb},
             "c": {"dtype": "u32", "data": emb}},
            layout="acme.pair/1"),
    ]
    tied_refs = (("embed.weight", "data"), ("lm_head.weight", "data"),
                 ("alias.as_u8", "data"), ("alias.as_bf16", "data"), ("pair", "a"),
                 ("pair", "b"), ("pair", "c"))
    add(Gen("tied-canonical.zt", p("tied-canonical.zt"), "tied", shared=tied_refs,
            what="canonical; one blob shared by 7 parts of 5 objects, "
                 "two empty tensors"),
        lambda path: write_tensors(path, tied, canonical=True, order="sorted"))
    add(Gen("tied-4k.zt", p("tied-4k.zt"), "tied", shared=tied_refs,
            what="same, non-canonical at 4096"),
        lambda path: write_tensors(path, tied, canonical=False, align=4096))

    # 4. Many tensors.
    many = []
    shared = rand_bytes(rng, 64)
    kinds = ["f32", "bf16", "f16", "i8", "u8", "i32", "u64", "f64"]
    for i in range(500):
        dt = kinds[i % len(kinds)]
        w = DTYPE_WIDTH[dt]
        n = 1 + (i * 7) % 64
        data = shared[: n * w] if (i % 7 == 0 and n * w <= 64) else rand_bytes(rng, n * w)
        many.append((f"model.layers.{i // 10:02d}.block{i % 10}.w.{dt}", dt, None, [n], data))
    add(Gen("many-500.zt", p("many-500.zt"),
            what="canonical; 500 tensors with some shared bytes"),
        lambda path: write_tensors(path, many, canonical=True, order="sorted"))

    # 5. Names: path-like, long, unicode (NFC and NFD), control characters,
    #    names that look like options.
    odd_names = [
        ".", "..", "...", "/", "//", "/lead", "trail/", "a/b/c", "a/../b",
        "a.b.c", " lead space", "trail space ", "tab\tname", "new\nline",
        "cr\rname", "back\\slash", "quote\"s'", "*?[glob]", "%s%n", "$HOME",
        "日本語/テンソル", "\u00e9", "e\u0301", "\u202eRTL", "ünïcödé.weight",
        "\x01ctl", "\x7f", "-rf", "--help", "~", "a:b", "NUL", "x" * 1024,
        "😀" * 256, "é" * 512, "x" * 255 + "/" + "y" * 255,
    ]
    name_items = [(n, "u8", None, [1], bytes([i % 256])) for i, n in enumerate(odd_names)]
    name_items.append(
        obj("parts.odd", [2],
            {"data": {"dtype": "u8", "data": b"\x01\x02"},
             "a/b": {"dtype": "u8", "data": b"\x03"},
             "..": {"dtype": "u8", "data": b"\x04"},
             ".": {"dtype": "u8", "data": b"\x05"},
             "日本": {"dtype": "u8", "data": b"\x06"},
             "-p": {"dtype": "u8", "data": b"\x08"},
             "p" * 1024: {"dtype": "u8", "data": b"\x07"}},
            layout="acme.names/1",
            attrs={"a/b": 1, "..": 2, "e\u0301": 3, "k" * 1024: 4,
                   "nested": {"": 5, "a\u0000b": 6}}))
    add(Gen("names.zt", p("names.zt"),
            what=f"non-canonical; {len(odd_names)} odd object names, odd part "
                 "and attribute names"),
        lambda path: write_tensors(path, name_items, canonical=False, align=4096,
                                   attrs={"a/b": "slash key", "é": "nfc"}))
    nfc_items = [it for it in name_items
                 if it[0] != "parts.odd" and unicodedata.is_normalized("NFC", it[0])]
    add(Gen("names-canonical.zt", p("names-canonical.zt"),
            what="canonical; the NFC subset of the odd names"),
        lambda path: write_tensors(path, nfc_items, canonical=True, order="sorted"))

    # 6. Layouts: the one the package implements (CSR) and the registered
    #    ones it treats as unknown, all consistent with their profiles.
    csr_values = np.array([1.0, 2.0, 3.0, 4.0], np.float32).tobytes()
    layouts = [
        obj("csr", [3, 4],
            {"values": {"dtype": "f32", "data": csr_values},
             "indices": {"dtype": "u32", "data": np.array([0, 3, 1, 2], np.uint32).tobytes()},
             "indptr": {"dtype": "u32", "data": np.array([0, 2, 2, 4], np.uint32).tobytes()}},
            layout="zt.sparse_csr/1"),
        obj("csr64", [2, 2],
            {"values": {"dtype": "u8", "logical": "bool", "data": b"\x01"},
             "indices": {"dtype": "u64", "data": np.array([1], np.uint64).tobytes()},
             "indptr": {"dtype": "u64", "data": np.array([0, 0, 1], np.uint64).tobytes()}},
            layout="zt.sparse_csr/1"),
        obj("coo", [3, 4],
            {"values": {"dtype": "f32", "data": csr_values[:8]},
             "coords": {"dtype": "u32", "data": np.array([0, 2, 1, 3], np.uint32).tobytes()}},
            layout="zt.sparse_coo/1"),
        obj("quant", [4, 64],
            {"data": {"dtype": "u32", "data": rand_bytes(rng, 128)},
             "scales": {"dtype": "f16", "data": rand_bytes(rng, 16)}},
            layout="zt.quant_group/1",
            attrs={"bits": 4, "group_size": 32, "axis": 1,
                   "packing": {"word": "u32", "order": "lsb_first", "per_word": 8},
                   "scale_form": "f16_factors", "zero_point": {"form": "none"}}),
        obj("mx", [2, 64],
            {"data": {"dtype": "u8", "logical": "f4_e2m1", "data": rand_bytes(rng, 64)},
             "scales": {"dtype": "u8", "logical": "f8_e8m0", "data": rand_bytes(rng, 4)}},
            layout="zt.mx/1",
            attrs={"block_size": 32, "axis": 1, "scale_form": "e8m0_exponent"}),
        obj("gguf", [2, 64],
            {"data": {"dtype": "u8", "data": rand_bytes(rng, 136)}},
            layout="gguf.q8_0/1", attrs={"elems_per_block": 32, "block_bytes": 34}),
        obj("opaque", [7],
            {"blob": {"dtype": "u8", "data": rand_bytes(rng, 13)},
             "meta": {"dtype": "i16", "logical": "acme_type", "data": rand_bytes(rng, 6)}},
            layout="acme.opaque/3", attrs={"anything": [1, "two", 3.0]}),
    ]
    add(Gen("layouts-canonical.zt", p("layouts-canonical.zt"), "layouts",
            what="canonical; sparse_csr (u32, u64), sparse_coo, quant_group, "
                 "mx, gguf.q8_0, an unknown layout with an unknown logical type"),
        lambda path: write_tensors(path, layouts, canonical=True, order="sorted"))
    add(Gen("layouts-4k.zt", p("layouts-4k.zt"), "layouts",
            what="same, non-canonical"),
        lambda path: write_tensors(path, layouts, canonical=False, align=4096))

    # 7. Two generations by append; the first manifest stays, unreferenced.
    def generations(path):
        write_tensors(path, [("gen1.a", "f32", None, [4], rand_bytes(rng, 16)),
                             ("gen1.b", "u8", None, [3], b"abc")],
                      canonical=False, align=4096, attrs={"generation": 1})
        w = ztensor.Writer(path, canonical=False, align=4096, append=True)
        w.add("gen2.c", rand_bytes(rng, 10), [5], "i16")
        w.set_attributes({"generation": 2})
        w.finish()

    add(Gen("generations.zt", p("generations.zt"),
            what="two generations written with append=True"), generations)

    # 8. Streamed writes, multi-part, align 8192.
    def streamed(path):
        w = ztensor.Writer(path, canonical=False, align=8192)
        big = rand_bytes(rng, 3 * 100_000)
        with w.stream("streamed.dense", [100_000], {"data": {"dtype": "bf16", "nbytes": 200_000}}) as s:
            for i in range(0, 200_000, 65536):
                s.write(big[i : min(i + 65536, 200_000)])
        with w.stream("streamed.parts", [3, 2],
                      {"data": {"dtype": "i16", "nbytes": 12},
                       "aux": {"dtype": "u8", "nbytes": 3, "encoding": ZSTD}},
                      layout="acme.stream/1", attributes={"a": []}) as s:
            s.write(b"\x01\x02\x03")
            s.write(big[:12])
        w.finish()

    add(Gen("stream-8k.zt", p("stream-8k.zt"),
            what="Writer.stream in chunks, align 8192, multi-part"), streamed)

    # 9. The converter and the numpy shim.
    npz = p("src.npz")
    np.savez(npz, w=np.arange(12, dtype=np.int64).reshape(3, 4),
             h=np.linspace(0, 1, 7, dtype=np.float16), m=np.array([True, False]))
    add(Gen("convert-npz.zt", p("convert-npz.zt"),
            what="ztensor.convert from .npz (canonical)"),
        lambda path: ztensor.convert(npz, path))
    add(Gen("numpy-shim-zstd.zt", p("numpy-shim-zstd.zt"),
            what="ztensor.numpy.save_file(compression=True)"),
        lambda path: ztnp.save_file(
            {"x": np.arange(1000, dtype=np.float32), "m": np.ones(5, np.bool_),
             "s": np.float64(3.25).reshape(())}, path, compression=True))

    # 10. Empty files and placement extremes.
    add(Gen("empty-canonical.zt", p("empty-canonical.zt"),
            what="canonical, no objects"),
        lambda path: write_tensors(path, [], canonical=True))
    add(Gen("empty-with-attrs.zt", p("empty-with-attrs.zt"),
            what="no objects, file attributes"),
        lambda path: write_tensors(path, [], canonical=False, attrs={"only": "attributes"}))
    add(Gen("canon-empty-first.zt", p("canon-empty-first.zt"),
            what="canonical, empty tensor before a non-empty one (notes §2)"),
        lambda path: write_tensors(path, [("a", "f32", None, [0], b""),
                                          ("b", "f32", None, [1], b"\x00\x00\x80\x3f")],
                                   canonical=True))
    add(Gen("align-1m.zt", p("align-1m.zt"), what="non-canonical, align 1 MiB"),
        lambda path: write_tensors(path, [("a", "u8", None, [3], b"xyz"),
                                          ("b", "u16", None, [2], b"\x01\x02\x03\x04")],
                                   canonical=False, align=1 << 20))

    # 11. A file the package writes and then refuses itself: an empty
    #     first-level attribute key (spec §3.5). Both readers must reject it.
    def empty_key(path):
        w = ztensor.Writer(path, canonical=False, align=4096)
        w.set_attributes({"": 1})
        w.add("t", b"\x00", [1], "u8")
        w.finish()

    add(Gen("neg-empty-attribute-key.zt", p("neg-empty-attribute-key.zt"),
            reject_rule="Name",
            what="package writer emits an empty top-level attribute key"),
        empty_key)
    return out
