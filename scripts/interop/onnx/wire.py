"""A few protobuf wire-format writers, for the bytes the protobuf package
will not write itself: typed fields unpacked (it always packs them), a
message split across two occurrences of its field (protobuf merges them),
a length prefix that runs past the end. Everything else is written by
onnx's helper and protobuf's own serializer.
"""

from __future__ import annotations

import struct


def varint(v: int) -> bytes:
    """A base-128 varint; a negative int64 as protobuf writes it (ten bytes)."""
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def field_varint(number: int, v: int) -> bytes:
    return tag(number, 0) + varint(v)


def field_len(number: int, payload: bytes) -> bytes:
    return tag(number, 2) + varint(len(payload)) + payload


def field_f32(number: int, v: float) -> bytes:
    return tag(number, 5) + struct.pack("<f", v)


def field_f64(number: int, v: float) -> bytes:
    return tag(number, 1) + struct.pack("<d", v)


def field_len_at(buf: bytes, number: int) -> tuple[int, int, int]:
    """The first top-level length-delimited field `number` of the message
    `buf`: (offset of its tag, offset of its payload, payload length).
    Only varint, 64-bit, 32-bit and length-delimited fields are expected."""
    i = 0
    while i < len(buf):
        start = i
        key, i = read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            _, i = read_varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = read_varint(buf, i)
            if num == number:
                return start, i, n
            i += n
        else:
            raise ValueError(f"wire type {wire} at {start}")
    raise KeyError(number)


def read_varint(buf: bytes, i: int) -> tuple[int, int]:
    v, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i
