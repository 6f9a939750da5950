#!/usr/bin/env python3
"""Writes starting seeds for the fuzz targets from the golden corpus.

Run once from the repository root (python3 fuzz/seeds.py DIR); what is
committed under fuzz/corpus/ is what `cargo fuzz cmin` kept of these plus
what fuzzing found. `container` needs none: scripts/fuzz.sh hands it the
corpus files themselves.

  manifest, profiles      the manifest bytes of each file
  data_rules, views       u32 LE manifest length, manifest, decoded parts in
                          manifest order (encoded parts as zeros), capped
  seek_table              the stored bytes of each zt.zstd-seekable/1 part
  names                   a few hand-written directories
"""
import hashlib, os, struct, sys
from pathlib import Path

PAYLOAD_CAP = 16 << 10  # parts past it read as zeros in the targets anyway


def item(b, i):
    """One CBOR item at b[i]: (value, next index). Maps are lists of pairs."""
    major, ai = b[i] >> 5, b[i] & 31
    i += 1
    if major == 7 and ai in (25, 26, 27):
        n = 1 << (ai - 24)
        return struct.unpack(">" + "efd"[ai - 25], b[i:i + n])[0], i + n
    if ai < 24:
        arg = ai
    else:
        n = 1 << (ai - 24)
        arg, i = int.from_bytes(b[i:i + n], "big"), i + n
    if major in (0, 1):
        return (arg if major == 0 else -1 - arg), i
    if major in (2, 3):
        s = b[i:i + arg]
        return (s if major == 2 else s.decode()), i + arg
    if major in (4, 5):
        out = []
        for _ in range(arg if major == 4 else 2 * arg):
            v, i = item(b, i)
            out.append(v)
        return (out if major == 4 else list(zip(out[::2], out[1::2]))), i
    return {20: False, 21: True, 22: None}.get(arg), i


def write(target, data):
    d = Path("fuzz/corpus") / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def parts_payload(b, manifest):
    """The decoded parts of the file in manifest order, seek tables aside."""
    root = dict((k, v) for k, v in item(manifest, 0)[0] if isinstance(k, str))
    payload = bytearray()
    for _, obj in root["objects"]:
        for _, part in dict(obj)["parts"]:
            p = dict(part)
            o, length = p["blob"]
            stored = b[o:o + length] if "shard" not in p else b""
            if p.get("encoding") == "zt.zstd-seekable/1":
                write("seek_table", stored)
                payload += bytes(min(p["decoded_length"], PAYLOAD_CAP))
            else:
                payload += stored
    return payload


def seeds(path):
    b = path.read_bytes()
    if len(b) < 48:
        return
    off, n = struct.unpack("<QQ", b[-40:-24])
    if not n or off + n > len(b) - 40:
        return
    manifest = b[off:off + n]
    write("manifest", manifest)
    write("profiles", manifest)
    try:
        payload = parts_payload(b, manifest)
    except Exception:
        return  # a rejected manifest: a seed for the parsers only
    write("data_rules", struct.pack("<I", n) + manifest + payload[:PAYLOAD_CAP])
    write("views", struct.pack("<I", n) + manifest + payload[:PAYLOAD_CAP])


for f in sorted(Path("corpus").rglob("*.zt")):
    seeds(f)
for names in [b"a\0b", b"\x01data\0data.raw\0.raw\0.json\0meta.json",
              b"\x00.\0..\0%\0%25", b"\xff" + b"x" * 300 + b"\0" + b"x" * 299 + b"y"]:
    write("names", names)
