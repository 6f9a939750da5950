"""`ztfs pack` options on a generated safetensors file (a few MB written by
`safetensors.numpy.save_file`: a compressible ramp, incompressible noise,
two equal (tied) tensors, an empty tensor, a bool mask, a scalar).

For the default and each option set: the package's deep verify and `ztfs
check --verify` pass, the content digest is the one computed here, and
every tensor reads back through the package as the source holds it. The
content digest equals the default pack's whatever the layout (§6.4); with
`--digest sha256` the part digests, which the content value holds, are
sha256 ones, so there the value must equal the default's but for those
digests. From `ztfs manifest`: with `--zstd`, a part is
`zt.zstd-seekable/1` exactly when that made it smaller (the noise and the
empty tensor stay raw, the ramp and the mask are compressed), with one
frame per `--frame-size` bytes (the seek table's count); the tied tensors
share one blob; every blob sits at a multiple of `--align`; with
`--shard-size` the shards are the positional files beside the root, of the
size and digest the table gives. Packing again gives the same bytes, shards
included, and leaves no temporary file; the default pack is byte for byte
what ztensor.convert writes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import struct

import numpy as np
import xxhash
import ztensor

from .common import (check_packed, diff_tensors, files_of, first_diff, one_part, pack,
                          st_tensors, zt_objects, ztfs_digest)
from ..results import Results, short
from ..ztfs import Ztfs

SIZES = {"K": 1 << 10, "M": 1 << 20}
OPTION_SETS = {
    "default": (),
    "zstd": ("--zstd",),
    "zstd19-frame64k": ("--zstd=19", "--frame-size", "64K"),
    "sha256": ("--digest", "sha256"),
    "align4k": ("--align", "4K"),
    "shard1m": ("--shard-size", "1M"),
    "zstd-shard1m-align4k": ("--zstd", "--shard-size", "1M", "--align", "4K"),
    "everything": ("--zstd=19", "--frame-size", "64K", "--digest", "sha256",
                   "--shard-size", "1M", "--align", "4K"),
}
COMPRESSED = {"a.ramp", "e.mask"}
RAW = {"b.noise", "d.empty", "g.scalar"}
TIED = ("c.tied.first", "c.tied.second")


def write_source(path: str) -> dict:
    from safetensors.numpy import save_file

    rng = np.random.default_rng(5)
    tied = rng.standard_normal((512, 512)).astype(np.float16)
    ts = {
        "a.ramp": (np.arange(768 * 1024) % 251).astype(np.float32),
        "b.noise": rng.integers(0, 256, 1536 * 1024, dtype=np.uint8),
        TIED[0]: tied,
        TIED[1]: tied.copy(),
        "d.empty": np.zeros((0, 4), np.float32),
        "e.mask": rng.integers(0, 2, 100_000).astype(np.bool_),
        "g.scalar": np.array(1.5, np.float32),
    }
    save_file(ts, path, metadata={"format": "np", "note": "pack options"})
    return ts


def opt(flags: tuple, name: str, default: str):
    return flags[flags.index(name) + 1] if name in flags else default


def size_of(s: str) -> int:
    return int(s[:-1]) * SIZES[s[-1]] if s[-1] in SIZES else int(s)


def blob_bytes(out: str, part: dict) -> bytes:
    """A part's stored bytes: in the root, or in the positional shard it names."""
    path = out if "shard" not in part else out[:-3] + f"-{part['shard']}.zt"
    offset, length = part["blob"]
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


def check_layout(res: Results, where: str, out: str, flags: tuple, doc: dict) -> None:
    """What `ztfs manifest` says of the placement, encodings and shards."""
    align = size_of(opt(flags, "--align", "64K"))
    frame = size_of(opt(flags, "--frame-size", "1M"))
    parts = {n: o["parts"]["data"] for n, o in doc["objects"].items()}
    for n, p in parts.items():
        blob, enc = p["blob"], p.get("encoding")
        res.check(blob[0] % align == 0, where, f"{n}: blob at {blob[0]}, not a multiple of {align}")
        res.check(p["digest"].startswith(opt(flags, "--digest", "xxh3") + ":"), where,
                  f"{n}: digest {p['digest']}")
        if enc is None:
            continue
        res.check(enc == "zt.zstd-seekable/1" and blob[1] < p["decoded_length"], where,
                  f"{n}: encoding {enc}, stored {blob[1]} of {p['decoded_length']}")
        tail = blob_bytes(out, p)[-9:]
        frames, _desc, magic = struct.unpack("<IBI", tail)
        want = max(1, math.ceil(p["decoded_length"] / frame))
        res.check(magic == 0x8F92EAB1 and frames == want, where,
                  f"{n}: seek table magic {magic:#x}, {frames} frames, want {want} of {frame}")
    zstd = any(f.startswith("--zstd") for f in flags)
    for n in COMPRESSED | RAW:
        encoded = "encoding" in parts[n]
        res.check(encoded == (zstd and n in COMPRESSED), where,
                  f"{n}: {'compressed' if encoded else 'raw'} under {' '.join(flags) or 'defaults'}")
    place = {n: (p["blob"], p.get("shard")) for n, p in parts.items()}
    res.check(place[TIED[0]] == place[TIED[1]], where,
              f"tied tensors in two blobs: {place[TIED[0]]} and {place[TIED[1]]}")
    shards = doc.get("shards")
    if "--shard-size" not in flags:
        res.check(shards is None, where, f"a shard table without --shard-size: {shards}")
        return
    max_len = size_of(opt(flags, "--shard-size", "1M"))
    if not res.check(isinstance(shards, dict) and len(shards) > 1, where, f"shards {shards}"):
        return
    algo = opt(flags, "--digest", "xxh3")
    for name, s in shards.items():
        path = out[:-3] + f"-{name}.zt"
        if not res.check(os.path.isfile(path), where, f"no shard file {path}"):
            continue
        with open(path, "rb") as f:
            data = f.read()
        digest = ("sha256:" + hashlib.sha256(data).hexdigest() if algo == "sha256"
                  else "xxh3:%016x" % xxhash.xxh3_64_intdigest(data))
        res.check(len(data) == s["size"] and digest == s["digest"], where,
                  f"shard {name}: {len(data)} bytes, {digest}; the table: {s}")
        held = {tuple(p["blob"]) for p in parts.values() if p.get("shard") == name}
        res.check(len(data) <= max_len or len(held) == 1, where,
                  f"shard {name} of {len(data)} bytes (over {max_len}) holds {len(held)} blobs")
    res.check(all("shard" in p for p in parts.values()), where,
              "a blob left in the root despite --shard-size")


def without_digests(value: list) -> list:
    v = copy.deepcopy(value)
    for o in v[1].values():
        for p in o["parts"].values():
            p.pop("digest")
    return v


def check_convert(res: Results, where: str, src: str, out: str) -> None:
    """The default pack is byte for byte what ztensor.convert writes."""
    conv = out[:-3] + ".convert.zt"
    ztensor.convert(src, conv)
    with open(out, "rb") as f, open(conv, "rb") as g:
        a, b = f.read(), g.read()
    res.check(a == b, where, f"pack and ztensor.convert differ: {len(a)} vs {len(b)} bytes, "
              f"first difference at {first_diff(a, b)}")
    os.remove(conv)


def run_options(z: Ztfs, res: Results, tmp: str) -> None:
    src = os.path.join(tmp, "options.safetensors")
    write_source(src)
    want, _meta = st_tensors(src)
    base = (None, None)
    for label, flags in OPTION_SETS.items():
        where = f"pack options {label}"
        try:
            base = check_set(z, res, src, want, tmp, label, flags, base)
        except Exception as e:  # noqa: BLE001 - a harness error fails this set, not the rest
            res.fail(where, f"harness error: {type(e).__name__}: {e}")
    print(f"ok   pack options: {len(OPTION_SETS)} option sets, each packed twice", flush=True)


def check_set(z: Ztfs, res: Results, src: str, want: dict, tmp: str, label: str, flags: tuple,
              base: tuple) -> tuple:
    """Packs `src` twice with `flags` and checks the output; returns the
    default pack's (content value, content digest), `base` until then."""
    where = f"pack options {label}"
    base_value, base_digest = base
    outs = []
    for run in ("a", "b"):
        d = os.path.join(tmp, f"opt-{label}-{run}")
        os.makedirs(d, exist_ok=True)
        outs.append(os.path.join(d, "model.zt"))
        rc, _, err = pack(z, src, outs[-1], flags)
        if not res.check(rc == 0, where, f"`ztfs pack {' '.join(flags)}` exited {rc}: {short(err)}"):
            return base
    fa, fb = files_of(outs[0]), files_of(outs[1])
    res.check(fa == fb, where, f"two packs differ: files {sorted(fa)} vs {sorted(fb)}, "
              f"differing {[n for n in fa if fa.get(n) != fb.get(n)]}")
    res.check(not any(n.startswith(".") for n in fa), where, f"temporary files left: {sorted(fa)}")
    value = check_packed(z, res, where, outs[0])
    problems = diff_tensors(want, one_part(zt_objects(outs[0])))
    res.check(not problems, where, "read back: " + "; ".join(problems[:4]))
    rc, out, err = z.run("manifest", [outs[0]])
    if res.check(rc == 0, where, f"`ztfs manifest` exited {rc}: {short(err)}"):
        check_layout(res, where, outs[0], flags, json.loads(out))
    digest = ztfs_digest(z, outs[0])[0]
    if label == "default":
        check_convert(res, where, src, outs[0])
        return value, digest
    if "--digest" not in flags:
        res.check(digest == base_digest, where,
                  f"content digest {digest}, the default pack's {base_digest}")
    elif value is not None and base_value is not None:
        res.check(without_digests(value) == without_digests(base_value), where,
                  "content value differs from the default pack's beyond part digests")
    return base_value, base_digest
