"""The container, read directly (only to get at what the package does not
expose: part digest strings, object attributes, blob placement).

Also the spec's names every other module shares: the magic, the zstd
encoding and the registered logical types.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import xxhash

from .cbor import cbor_decode


MAGIC = b"\x89ZT2\r\n\x1a\n"
ZSTD = "zt.zstd-seekable/1"


REGISTERED_LTYPES = {
    "bool",
    "f8_e4m3fn",
    "f8_e5m2",
    "f8_e4m3fnuz",
    "f8_e5m2fnuz",
    "f8_e8m0",
    "f4_e2m1",
    "complex64",
    "complex128",
}


@dataclasses.dataclass
class Raw:
    size: int
    manifest_offset: int
    manifest_bytes: bytes
    manifest: Any
    hash_ok: bool


def read_raw(path: str) -> Raw:
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 48 or data[:8] != MAGIC or data[-8:] != MAGIC:
        raise ValueError("not a zTensor v2 container")
    mo, ml, mh, _ver, _res = struct.unpack("<QQQII", data[-40:-8])
    if ml == 0:
        return Raw(len(data), 0, b"", None, mh == 0)
    if mo + ml > len(data) - 40:
        raise ValueError("manifest out of bounds")
    mb = data[mo : mo + ml]
    return Raw(
        len(data), mo, mb, cbor_decode(mb), xxhash.xxh3_64_intdigest(mb) == mh
    )


def xxh3_string(b: bytes) -> str:
    return "xxh3:%016x" % xxhash.xxh3_64_intdigest(b)
