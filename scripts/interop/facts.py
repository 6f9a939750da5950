"""Facts read from a corpus file itself (layouts, encodings, logical types,
digest algorithms, shard table, zstd seek-table quirks), for the allowlist's
predicates. Best effort: a file whose manifest does not parse yields none.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from typing import Any, Optional

from .cbor import CborError, cbor_decode
from .container import REGISTERED_LTYPES, ZSTD
from .package import Kind


@dataclasses.dataclass
class Facts:
    name: str
    layouts: set = dataclasses.field(default_factory=set)
    encodings: set = dataclasses.field(default_factory=set)
    unknown_encodings: set = dataclasses.field(default_factory=set)
    unknown_ltypes: set = dataclasses.field(default_factory=set)
    unknown_digest_algos: set = dataclasses.field(default_factory=set)
    has_shards: bool = False
    missing_shards: list = dataclasses.field(default_factory=list)
    zstd_quirks: set = dataclasses.field(default_factory=set)
    parsed: bool = False
    package_error: Optional["Kind"] = None  # the package error being compared
    manifest: Any = None
    encoded_parts: set = dataclasses.field(default_factory=set)  # (object, part)


def zstd_quirks(stored: bytes) -> set:
    """What about a zt.zstd-seekable/1 blob the package and the profile treat
    differently (notes §2). Best effort: malformed input gives 'malformed'."""
    q = set()
    n = len(stored)
    if n < 17 or stored[-4:] != b"\xb1\xea\x92\x8f":
        return {"malformed"}
    desc = stored[-5]
    nframes = struct.unpack("<I", stored[-9:-5])[0]
    if desc & 0x03:
        q.add("descriptor-low-bits")
    if desc & 0x80:
        q.add("seek-checksum-column")
    e = 12 if desc & 0x80 else 8
    start = n - 17 - nframes * e
    if start < 0:
        return q | {"malformed"}
    entries = []
    for i in range(nframes):
        o = start + 8 + i * e
        c, d = struct.unpack("<II", stored[o : o + 8])
        entries.append((c, d))
    if len(entries) > 1:
        if entries[-1][1] > entries[0][1]:
            q.add("last-frame-larger")
        if any(d != entries[0][1] for _, d in entries[:-1]):
            q.add("unequal-frames")
    pos = 0
    for c, _ in entries:
        flen = zstd_frame_length(stored, pos)
        if flen is None:
            q.add("malformed")
            break
        if not stored[pos + 4] & 0x04:
            q.add("no-frame-checksum")
        if flen < c:
            q.add("multi-frame-entry")
        pos += c
    return q


def zstd_frame_length(b: bytes, pos: int) -> Optional[int]:
    if b[pos : pos + 4] != b"\x28\xb5\x2f\xfd" or pos + 5 > len(b):
        return None
    fhd = b[pos + 4]
    single = (fhd >> 5) & 1
    fcs = {0: 1 if single else 0, 1: 2, 2: 4, 3: 8}[fhd >> 6]
    did = [0, 1, 2, 4][fhd & 3]
    p = pos + 5 + (0 if single else 1) + did + fcs
    while True:
        if p + 3 > len(b):
            return None
        h = int.from_bytes(b[p : p + 3], "little")
        last, btype, size = h & 1, (h >> 1) & 3, h >> 3
        if btype == 3:
            return None
        p += 3 + (1 if btype == 1 else size)
        if last:
            break
    if fhd & 0x04:
        p += 4
    return p - pos if p <= len(b) else None


def corpus_facts(path: str, name: str) -> Facts:
    f = Facts(name)
    try:
        data = open(path, "rb").read()
        if len(data) < 48:
            return f
        mo, ml, _, _, _ = struct.unpack("<QQQII", data[-40:-8])
        if ml == 0 or mo + ml > len(data):
            return f
        m = cbor_decode(data[mo : mo + ml])
    except (CborError, OSError, struct.error, ValueError, IndexError):
        return f
    if not isinstance(m, dict):
        return f
    f.parsed = True
    f.manifest = m
    shards = m.get("shards")
    if isinstance(shards, dict):
        f.has_shards = True
        stem = os.path.splitext(path)[0]
        for sn in shards:
            if isinstance(sn, str) and not os.path.exists(f"{stem}-{sn}.zt"):
                f.missing_shards.append(sn)
    objs = m.get("objects")
    if not isinstance(objs, dict):
        return f
    for oname, o in objs.items():
        if not isinstance(o, dict):
            continue
        if isinstance(o.get("layout"), str):
            f.layouts.add(o["layout"])
        parts = o.get("parts")
        if not isinstance(parts, dict):
            continue
        for pname, p in parts.items():
            if not isinstance(p, dict):
                continue
            enc = p.get("encoding")
            if enc is not None:
                f.encoded_parts.add((oname, pname))
            if isinstance(enc, str):
                f.encodings.add(enc)
                if enc != ZSTD:
                    f.unknown_encodings.add(enc)
            lt = p.get("type")
            if isinstance(lt, str) and lt not in REGISTERED_LTYPES:
                f.unknown_ltypes.add(lt)
            dg = p.get("digest")
            if isinstance(dg, str) and ":" in dg and dg.split(":")[0] not in ("xxh3", "sha256"):
                f.unknown_digest_algos.add(dg.split(":")[0])
            blob = p.get("blob")
            if (enc == ZSTD and "shard" not in p and isinstance(blob, list) and len(blob) == 2
                    and all(isinstance(x, int) for x in blob)
                    and blob[0] + blob[1] <= len(data)):
                try:
                    f.zstd_quirks |= zstd_quirks(data[blob[0] : blob[0] + blob[1]])
                except (IndexError, struct.error, KeyError):
                    f.zstd_quirks.add("malformed")
    return f
