"""Deterministic CBOR (spec §3.1, RFC 8949 §4.2.1 as the notes narrow it).

An encoder that must reproduce the manifests the package writes byte for
byte (the content digests this check computes rest on it), and a decoder
strict about well-formedness and lenient about determinism.
"""

from __future__ import annotations

import math
import struct
from typing import Any


def _head(major: int, n: int) -> bytes:
    if n < 24:
        return bytes([major << 5 | n])
    if n < 0x100:
        return bytes([major << 5 | 24, n])
    if n < 0x10000:
        return bytes([major << 5 | 25]) + struct.pack(">H", n)
    if n < 0x1_0000_0000:
        return bytes([major << 5 | 26]) + struct.pack(">I", n)
    if n < 0x1_0000_0000_0000_0000:
        return bytes([major << 5 | 27]) + struct.pack(">Q", n)
    raise ValueError(f"integer argument {n} does not fit in 64 bits")


def _float(x: float) -> bytes:
    """Shortest exact float: f16, then f32, then f64; the one NaN is f97e00."""
    if math.isnan(x):
        return b"\xf9\x7e\x00"
    bits64 = struct.pack(">d", x)
    try:
        h = struct.pack(">e", x)
        if struct.pack(">d", struct.unpack(">e", h)[0]) == bits64:
            return b"\xf9" + h
    except (OverflowError, struct.error):
        pass
    try:
        s = struct.pack(">f", x)
        if struct.pack(">d", struct.unpack(">f", s)[0]) == bits64:
            return b"\xfa" + s
    except (OverflowError, struct.error):
        pass
    return b"\xfb" + bits64


def cbor_encode(v: Any) -> bytes:
    if v is None:
        return b"\xf6"
    if v is True:
        return b"\xf5"
    if v is False:
        return b"\xf4"
    if isinstance(v, int):
        return _head(0, v) if v >= 0 else _head(1, -1 - v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, str):
        b = v.encode("utf-8")
        return _head(3, len(b)) + b
    if isinstance(v, (bytes, bytearray)):
        return _head(2, len(v)) + bytes(v)
    if isinstance(v, (list, tuple)):
        return _head(4, len(v)) + b"".join(cbor_encode(x) for x in v)
    if isinstance(v, dict):
        items = sorted((cbor_encode(k), cbor_encode(x)) for k, x in v.items())
        for (a, _), (b, _) in zip(items, items[1:]):
            if a == b:
                raise ValueError("duplicate map key")
        return _head(5, len(items)) + b"".join(k + x for k, x in items)
    raise TypeError(f"cannot encode {type(v).__name__} as CBOR")


class CborError(Exception):
    pass


class _HKey:
    """A map key that Python cannot hash (an array or a map), kept by its bytes."""

    def __init__(self, value, raw):
        self.value, self.raw = value, raw

    def __hash__(self):
        return hash(self.raw)

    def __eq__(self, other):
        return isinstance(other, _HKey) and other.raw == self.raw

    def __repr__(self):
        return f"<key {self.value!r}>"


def cbor_decode(data: bytes) -> Any:
    """Decodes one well-formed item spanning `data`. Lenient about
    determinism (the re-encoding comparison catches that); strict about
    well-formedness, so corpus rejects simply yield no facts."""

    def item(pos: int, depth: int):
        if depth > 64:
            raise CborError("too deep")
        if pos >= len(data):
            raise CborError("truncated")
        ib = data[pos]
        major, info = ib >> 5, ib & 31
        pos += 1
        if major == 7:
            if info == 20:
                return False, pos
            if info == 21:
                return True, pos
            if info == 22:
                return None, pos
            if info == 25:
                return struct.unpack(">e", data[pos : pos + 2])[0], pos + 2
            if info == 26:
                return struct.unpack(">f", data[pos : pos + 4])[0], pos + 4
            if info == 27:
                return struct.unpack(">d", data[pos : pos + 8])[0], pos + 8
            raise CborError(f"simple value {info}")
        if info < 24:
            n = info
        elif info in (24, 25, 26, 27):
            w = 1 << (info - 24)
            if pos + w > len(data):
                raise CborError("truncated head")
            n = int.from_bytes(data[pos : pos + w], "big")
            pos += w
        else:
            raise CborError(f"additional info {info}")
        if major == 0:
            return n, pos
        if major == 1:
            return -1 - n, pos
        if major in (2, 3):
            if pos + n > len(data):
                raise CborError("string past end")
            raw = data[pos : pos + n]
            if major == 3:
                try:
                    return raw.decode("utf-8"), pos + n
                except UnicodeDecodeError as e:
                    raise CborError(str(e))
            return bytes(raw), pos + n
        if major == 4:
            if n > len(data) - pos:
                raise CborError("array past end")
            out = []
            for _ in range(n):
                x, pos = item(pos, depth + 1)
                out.append(x)
            return out, pos
        if major == 5:
            if n > len(data) - pos:
                raise CborError("map past end")
            out = {}
            for _ in range(n):
                start = pos
                k, pos = item(pos, depth + 1)
                if isinstance(k, (list, dict)):
                    k = _HKey(k, bytes(data[start:pos]))
                v, pos = item(pos, depth + 1)
                out[k] = v
            return out, pos
        raise CborError("tag")

    value, end = item(0, 0)
    if end != len(data):
        raise CborError("trailing bytes")
    return value
