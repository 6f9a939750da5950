"""A multi-file model (spec §7), built around files the package writes:
the family, a renamed copy of it, and the package's single-file ingest of it
(`gen_sharded`), with the container assembly that needs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import time
from typing import Optional

import numpy as np
import xxhash
import ztensor

from ..cbor import cbor_encode
from ..container import MAGIC, ZSTD, read_raw
from .generate import RNG_SEED, Gen, obj, rand_bytes, write_tensors
from ..package import classify
from ..results import Results


# The package cannot write one: Writer takes (path, canonical, align, publish,
# append) and nothing else, a part dict without `data` is refused ("part has
# no data"), the numpy shim and convert write one file, and ingest copies
# into one file. Its compiled core has external parts (`Writer::link`), but
# the Python binding does not expose them. It reads families, though:
# ztensor.open resolves shards positionally (<stem>-<name>.zt) and eagerly.
#
# So the family is assembled here. Shards 00001 (non-canonical, 4 KiB,
# zstd-seekable parts, a blob shared by two tensors) and 00002 (canonical)
# are whole package-written files: any .zt file is a legal shard (§7.2).
# Shard 00003 is a data shard (no manifest) holding blobs copied from a
# package-written file. The root holds local blobs copied from another one
# (an encoded part among them) and a manifest whose part entries are copied
# from the files the blobs come from, plus a shard field; one object has
# parts in three files, one aliases a shard blob under another dtype.


def place_blobs(blobs: list) -> tuple[bytearray, list]:
    """The head of a container: magic, zero padding up to 4096, then each
    blob at the next 4096-aligned offset (a zero-length one at 4096)."""
    data = bytearray(MAGIC) + bytes(4096 - len(MAGIC))
    offs = []
    for b in blobs:
        if not b:
            offs.append(4096)
            continue
        data += bytes(-len(data) % 4096)
        offs.append(len(data))
        data += b
    return data, offs


def finish_container(data: bytearray, manifest: Optional[dict]) -> bytes:
    """Appends the manifest (4096-aligned, deterministic CBOR) and the footer:
    manifest offset, length, XXH3-64, version 2, reserved 0, magic. Without a
    manifest it is a data shard: offset, length and hash all 0 (§7.2)."""
    if manifest is None:
        return bytes(data) + struct.pack("<QQQII", 0, 0, 0, 2, 0) + MAGIC
    mb = cbor_encode(manifest)
    data += bytes(-len(data) % 4096)
    mo = len(data)
    data += mb
    return bytes(data) + struct.pack("<QQQII", mo, len(mb), xxhash.xxh3_64_intdigest(mb),
                                     2, 0) + MAGIC


class Heap:
    """Blobs copied from other files into one container, each source range
    once (parts that shared a blob there share it here too)."""

    def __init__(self):
        self.blobs: list = []
        self.index: dict = {}
        self.refs: list = []

    def take(self, src: str, src_data: bytes, part: dict) -> dict:
        """A copy of the part entry `part` of file `src`, its blob to be
        placed in this heap."""
        off, ln = part["blob"]
        key = (src, off, ln)
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.blobs)
            self.blobs.append(src_data[off : off + ln])
        entry = dict(part)
        self.refs.append((entry, i))
        return entry

    def place(self) -> bytearray:
        data, offs = place_blobs(self.blobs)
        for entry, i in self.refs:
            entry["blob"] = [offs[i], len(self.blobs[i])]
        return data


def file_digest(path: str, algo: str) -> str:
    with open(path, "rb") as f:
        data = f.read()
    if algo == "sha256":
        return "sha256:" + hashlib.sha256(data).hexdigest()
    return "xxh3:%016x" % xxhash.xxh3_64_intdigest(data)


def gen_sharded(tmp: str, log, res: Results) -> list[Gen]:
    """Writes the family (positional names), a renamed copy of it, and the
    package's single-file ingest of it; returns them as Gens (plus the
    package-written files it is made of). Package-side sanity checks (the
    package reads every root object as the bytes of its source object, and
    deep-verifies the family) are counted in `res`."""
    rng = np.random.default_rng(RNG_SEED + 7)
    mib = 1024 * 1024
    fam = os.path.join(tmp, "sharded")
    os.makedirs(fam, exist_ok=True)
    stem = "model"

    def shard_path(d, name):
        return os.path.join(d, f"{stem}-{name}.zt")

    out: list[Gen] = []
    t0 = time.monotonic()

    # The package-written pieces.
    semi = rng.integers(0, 16, size=5 * 512 * 1024, dtype=np.uint8).tobytes()
    tied = rand_bytes(rng, 16 * 16 * 4)
    s1 = shard_path(fam, "00001")
    write_tensors(s1, [
        ("s1.zstd.frames", "u8", None, [len(semi)], semi, ZSTD),
        ("s1.zstd.f32", "f32", None, [100, 33], rand_bytes(rng, 100 * 33 * 4), ZSTD),
        ("s1.raw.f16", "f16", None, [33], rand_bytes(rng, 66)),
        ("s1.tied.a", "f32", None, [16, 16], tied),
        ("s1.tied.b", "f32", None, [16, 16], tied),
        ("s1.unreferenced", "u8", None, [5], b"hello"),
        obj("s1.mixed", [16],
            {"codes": {"dtype": "u8", "data": semi[:4096], "encoding": ZSTD},
             "scales": {"dtype": "f16", "data": rand_bytes(rng, 32)}},
            layout="acme.mixed/1", attrs={"note": "an object in shard 00001"}),
    ], canonical=False, align=4096, attrs={"role": "shard 00001"})
    s2 = shard_path(fam, "00002")
    csr_values = np.array([1.0, 2.0, 3.0, 4.0], np.float32).tobytes()
    write_tensors(s2, [
        ("s2.bf16", "bf16", None, [64, 64], rand_bytes(rng, 64 * 64 * 2)),
        ("s2.bool", "u8", "bool", [100], bytes(rng.integers(0, 2, 100, dtype=np.uint8))),
        ("s2.scalar", "i64", None, [], rand_bytes(rng, 8)),
        ("s2.empty", "f32", None, [0], b""),
        ("s2.f4", "u8", "f4_e2m1", [5], b"\x21\x43\x05"),
        obj("s2.csr", [3, 4],
            {"values": {"dtype": "f32", "data": csr_values},
             "indices": {"dtype": "u32", "data": np.array([0, 3, 1, 2], np.uint32).tobytes()},
             "indptr": {"dtype": "u32", "data": np.array([0, 2, 2, 4], np.uint32).tobytes()}},
            layout="zt.sparse_csr/1"),
    ], canonical=True, order="sorted")
    src3 = os.path.join(tmp, "sharded-src3.zt")
    write_tensors(src3, [
        ("s3.zstd.1MiB+1", "u8", None, [mib + 1], semi[: mib + 1], ZSTD),
        ("s3.i32", "i32", None, [1000], rand_bytes(rng, 4000)),
        ("s3.c64", "f32", "complex64", [4], rand_bytes(rng, 32)),
    ], canonical=False, align=4096)
    lsrc = os.path.join(tmp, "sharded-local-src.zt")
    write_tensors(lsrc, [
        ("local.f32", "f32", None, [8, 8], rand_bytes(rng, 256)),
        ("local.zstd", "f32", None, [5000],
         np.repeat(np.arange(500, dtype=np.float32), 10).tobytes(), ZSTD),
        ("local.zero", "u8", None, [0], b""),
        ("local.bool", "u8", "bool", [3], b"\x01\x00\x01"),
        ("local.part", "u16", None, [4], rand_bytes(rng, 8)),
    ], canonical=False, align=4096, attrs={"role": "local source"})

    raws = {p: read_raw(p) for p in (s1, s2, src3, lsrc)}
    datas = {p: open(p, "rb").read() for p in (s1, s2, src3, lsrc)}

    def mobj(path, name):
        return raws[path].manifest["objects"][name]

    def copy_obj(path, name, shard=None, heap=None):
        """The object entry of `name` in `path`, every part pointing into
        `shard` (None: the root) or relocated into `heap`."""
        o = dict(mobj(path, name))
        parts = {}
        for pn, p in o["parts"].items():
            e = heap.take(path, datas[path], p) if heap is not None else dict(p)
            if shard is not None:
                e["shard"] = shard
            parts[pn] = e
        o["parts"] = parts
        return o

    # The data shard 00003: the blobs of src3, no manifest.
    heap3 = Heap()
    objects: dict = {}
    source_of: dict = {}  # root object -> (file the package reads it from, object)
    for name in raws[src3].manifest["objects"]:
        objects[name] = copy_obj(src3, name, "00003", heap3)
        source_of[name] = (src3, name)
    s3 = shard_path(fam, "00003")
    with open(s3, "wb") as f:
        f.write(finish_container(heap3.place(), None))

    for name in raws[s1].manifest["objects"]:
        if name != "s1.unreferenced":
            objects[name] = copy_obj(s1, name, "00001")
            source_of[name] = (s1, name)
    for name in raws[s2].manifest["objects"]:
        objects[name] = copy_obj(s2, name, "00002")
        source_of[name] = (s2, name)
    root_heap = Heap()
    for name in raws[lsrc].manifest["objects"]:
        if name != "local.part":
            objects[name] = copy_obj(lsrc, name, None, root_heap)
            source_of[name] = (lsrc, name)
    # A shard blob under a second name and dtype (tying across files).
    alias = dict(mobj(s1, "s1.raw.f16")["parts"]["data"], dtype="u8", shard="00001")
    objects["alias.s1.raw.as_u8"] = {"shape": [66], "layout": "dense",
                                     "parts": {"data": alias}}
    source_of["alias.s1.raw.as_u8"] = (s1, "s1.raw.f16")
    # One object with a part in the root, one in a full-model shard and one
    # in the data shard (the last shares its blob with s3.i32).
    s3_i32 = objects["s3.i32"]["parts"]["data"]
    objects["split.across-files"] = {
        "shape": [4], "layout": "acme.split/1", "attributes": {"files": 3},
        "parts": {
            "local": root_heap.take(lsrc, datas[lsrc], mobj(lsrc, "local.part")["parts"]["data"]),
            "remote": dict(mobj(s1, "s1.zstd.f32")["parts"]["data"], shard="00001"),
            "packed": dict(s3_i32),  # the blob of s3.i32, in the data shard
        },
    }
    split_sources = {"local": (lsrc, "local.part"), "remote": (s1, "s1.zstd.f32"),
                     "packed": (src3, "s3.i32")}
    shards = {
        "00001": {"size": os.path.getsize(s1), "digest": file_digest(s1, "sha256")},
        # xxh3 is the minimum the spec allows for a shard identity (§7.1)
        "00002": {"size": os.path.getsize(s2), "digest": file_digest(s2, "xxh3")},
        "00003": {"size": os.path.getsize(s3), "digest": file_digest(s3, "sha256")},
    }
    head = root_heap.place()
    manifest = {
        "attributes": {"family": "interop", "written by": "scripts/interop.py",
                       "shards": ["00001 (package)", "00002 (package, canonical)",
                                  "00003 (data shard)"]},
        "objects": objects,
        "shards": shards,
    }
    root = os.path.join(fam, f"{stem}.zt")
    with open(root, "wb") as f:
        f.write(finish_container(head, manifest))
    shard_files = {n: shard_path(fam, n) for n in shards}
    sizes = ", ".join("%s (%d bytes)" % (n, e["size"]) for n, e in shards.items())
    log(f"  wrote sharded/{stem}.zt ({os.path.getsize(root)} bytes, {len(objects)} objects) "
        f"and shards {sizes} "
        f"({time.monotonic() - t0:.2f}s)")

    # Package side: the root reads as the objects it was made of, and deep
    # verify (whole-shard digests) passes.
    where = "sharded/model.zt [package]"
    try:
        with ztensor.open(root) as src:
            files = [os.path.realpath(x) for x in src.files]
            res.check(all(os.path.realpath(p) in files for p in shard_files.values()), where,
                      f"the package's Source.files {files!r} does not list every shard")
            bad = []
            for name, (spath, sname) in source_of.items():
                with ztensor.open(spath) as s:
                    for pn in src[name].parts:
                        want = s[sname][pn].tobytes()
                        if src[name][pn].tobytes() != want:
                            bad.append(f"{name}/{pn}")
            for pn, (spath, sname) in split_sources.items():
                with ztensor.open(spath) as s:
                    if src["split.across-files"][pn].tobytes() != s[sname]["data"].tobytes():
                        bad.append(f"split.across-files/{pn}")
            res.check(not bad, where, f"the package reads these root parts as other bytes "
                                      f"than their source files hold: {bad}")
            checked, undigested = src.verify(deep=True)
            res.check(undigested == 0 and checked > 0, where,
                      f"package deep verify: {checked} checked, {undigested} undigested")
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        res.fail(where, f"the package cannot open the family: {type(e).__name__}: {e}")

    what = ("root with 5 local objects (zstd among them) and a shard table; 00001 a "
            "package file (zstd, tied), 00002 a canonical package file, 00003 a data "
            "shard; an object with parts in three files")
    out.append(Gen(f"sharded/{stem}.zt", root, "sharded", shard_files=shard_files, what=what))

    # The same family renamed: the shards are found by size and digest only.
    # A same-size copy of 00001 with one padding byte changed (a valid file,
    # another digest) sorts first, and a file of another size has the
    # positional name of 00002.
    ren = os.path.join(tmp, "sharded-renamed")
    os.makedirs(ren, exist_ok=True)
    new_names = {"00001": "weights-A.bin", "00002": "second.zt", "00003": "blobs.dat"}
    ren_files = {}
    for n, fn in new_names.items():
        ren_files[n] = os.path.join(ren, fn)
        shutil.copyfile(shard_files[n], ren_files[n])
    shutil.copyfile(root, os.path.join(ren, f"{stem}.zt"))
    decoy = bytearray(datas[s1])
    decoy[100] ^= 0x5A
    with open(os.path.join(ren, "a-decoy.zt"), "wb") as f:
        f.write(decoy)
    shutil.copyfile(src3, shard_path(ren, "00002"))
    try:
        with ztensor.open(os.path.join(ren, f"{stem}.zt")):
            pass
        res.note("note sharded-renamed/model.zt: the package opens the renamed family")
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        res.note(f"note sharded-renamed/model.zt: the package (positional resolution only) "
                 f"does not open it, as expected: {classify(e).message[:120]}")
    out.append(Gen(f"sharded-renamed/{stem}.zt", os.path.join(ren, f"{stem}.zt"), "sharded",
                   shard_files=ren_files, view_path=root,
                   what="the same family with the shards renamed (found by size and "
                        "digest), a same-size decoy and a wrong file under a positional name"))

    # The package flattens the family into one canonical file: same content.
    flat = os.path.join(tmp, "sharded-flat.zt")
    try:
        w = ztensor.Writer(flat)
        with ztensor.open(root) as src:
            w.ingest(src)
        w.finish()
        out.append(Gen("sharded-flat.zt", flat, "sharded",
                       what="Writer.ingest of the sharded model into one canonical file"))
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        res.fail("sharded-flat.zt", f"the package cannot ingest the family: "
                                    f"{type(e).__name__}: {e}")

    # The package-written pieces, each as a file of its own.
    out.append(Gen("sharded/model-00001.zt", s1, what="shard 00001 alone (package, zstd)"))
    out.append(Gen("sharded/model-00002.zt", s2, what="shard 00002 alone (package, canonical)"))
    out.append(Gen("sharded-src3.zt", src3, what="source of the data shard 00003 (package)"))
    out.append(Gen("sharded-local-src.zt", lsrc, what="source of the root's local blobs"))
    return out
