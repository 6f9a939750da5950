"""An HRRYFILE read directly, bytes in, facts out: header, trailer, index,
where each tensor's buffers lie, and the placement facts a strict reader
must tolerate in the reference writer's output (see
/work/shared/spec/HURRAY-NOTES.md, "Where the reference writer departs").

Independent of pyhurray on purpose: it is the second opinion the generated
sidecars are cross-checked with. It checks nothing a strict reader checks
beyond what it needs to find the bytes; it is not a validator.
"""

from __future__ import annotations

import dataclasses
import struct

HEADER_LEN = 64
TRAILER_LEN = 40
FILE_MAGIC = b"HRRYFILE"
TRAILER_MAGIC = b"HRRY"
HAS_KV_METADATA, SORTED_INDEX, HAS_INDEX_CRC32C = 1, 2, 4
LAYOUT_COMPOSITE = 0x0B


def _crc32c_table() -> list:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as the trailer's index_crc32c."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C


@dataclasses.dataclass
class Entry:
    name: bytes
    descriptor_offset: int
    descriptor_length: int
    data_offset: int
    data_length: int
    flags: int
    layout_tag: int = 0
    buffer_sizes: tuple = ()  # byte_size of each buffer handle

    def buffer_offsets(self, alignment: int) -> list:
        """Buffer 0 at data_offset, buffer i at the next alignment boundary
        after the end of buffer i-1 (file-format.md, Data Buffer Placement)."""
        out, off = [], self.data_offset
        for i, size in enumerate(self.buffer_sizes):
            if i:
                off = align_up(off, alignment)
            out.append(off)
            off += size
        return out


@dataclasses.dataclass
class Container:
    size: int
    major: int
    minor: int
    file_flags: int
    alignment: int
    first_descriptor_offset: int
    count_hint: int
    index_offset: int
    index_length: int
    kv_offset: int
    kv_length: int
    index_crc32c: int
    entries: list


def align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _layout_fields_len(data: bytes, p: int, layout: int, rank: int, depth: int = 0):
    """Bytes of the layout-specific fields at `p` (layouts/*.md), or None for
    a layout this reader does not size."""
    if layout in (0x01, 0x02):
        return 0
    if layout == 0x03:
        return 8 * rank
    if layout == 0x04 and depth < 8:
        outer, inner = data[p + 8 * rank], data[p + 8 * rank + 1]
        n = 8 * rank + 4 + (8 * rank if outer == 0x03 else 0) + (8 * rank if inner == 0x03 else 0)
        if inner == 0x04:
            rest = _layout_fields_len(data, p + n, 0x04, rank, depth + 1)
            return None if rest is None else n + rest
        return n
    if layout == 0x05:
        return 4 * rank
    if layout in (0x06, 0x07, 0x08, LAYOUT_COMPOSITE, 0x40):
        return 16 if layout != LAYOUT_COMPOSITE and layout != 0x40 else 8
    if layout == 0x09:
        return 8 + 4 * rank + 8
    if layout == 0x0A:
        return 32
    return None


def _descriptor_buffers(data: bytes, off: int) -> tuple[int, tuple]:
    """(layout tag, buffer sizes) of the descriptor at `off`; no sizes for a
    layout whose fields this reader does not size."""
    layout = data[off + 15]
    rank = struct.unpack_from("<I", data, off + 16)[0]
    p = off + 20 + 8 * rank + 8  # head, shape, byte_offset
    n = _layout_fields_len(data, p, layout, rank)
    if n is None:
        return layout, ()
    p += n
    count = data[p]
    sizes = tuple(struct.unpack_from("<Q", data, p + 1 + 16 * i)[0] for i in range(count))
    return layout, sizes


def parse(data: bytes) -> Container:
    """The header, trailer and index of an HRRYFILE (ValueError when they
    cannot be read)."""
    if len(data) < HEADER_LEN + TRAILER_LEN or data[:8] != FILE_MAGIC:
        raise ValueError("not an HRRYFILE")
    if data[-4:] != TRAILER_MAGIC:
        raise ValueError("no trailer magic")
    major, minor = data[8], data[9]
    flags, alignment, fdo, hint = struct.unpack_from("<IIQQ", data, 12)
    t = len(data) - TRAILER_LEN
    io, il, ko, kl, crc = struct.unpack_from("<QQQII", data, t)
    if io + il > t:
        raise ValueError(f"index [{io}, +{il}) runs past the trailer at {t}")
    (count,) = struct.unpack_from("<Q", data, io)
    p, entries = io + 8, []
    for _ in range(count):
        (nl,) = struct.unpack_from("<H", data, p)
        name = data[p + 2 : p + 2 + nl]
        p += 2 + nl
        do, dl, dao, dal, ef = struct.unpack_from("<QIQQI", data, p)
        p += 32
        layout, sizes = _descriptor_buffers(data, do)
        entries.append(Entry(name, do, dl, dao, dal, ef, layout, sizes))
    if p != io + il:
        raise ValueError(f"index entries end at {p}, index_length says {io + il}")
    return Container(len(data), major, minor, flags, alignment, fdo, hint,
                     io, il, ko, kl, crc, entries)


def facts(data: bytes) -> dict:
    """The placement facts of one file, as plain values for a JSON sidecar."""
    c = parse(data)
    by_offset = sorted(c.entries, key=lambda e: e.descriptor_offset)
    sections = sorted(x for x in (c.index_offset, c.kv_offset if c.kv_length else None)
                      if x is not None)
    out_entries = []
    for i, e in enumerate(by_offset):
        nxt = by_offset[i + 1].descriptor_offset if i + 1 < len(by_offset) else sections[0]
        desc_end = e.descriptor_offset + e.descriptor_length
        data_end = e.data_offset + e.data_length
        out_entries.append({
            "name": e.name.decode("utf-8", "surrogateescape")[:80],
            "layout_tag": e.layout_tag,
            "descriptor": [e.descriptor_offset, e.descriptor_length],
            "data": [e.data_offset, e.data_length],
            "buffer_sizes": list(e.buffer_sizes),
            # where the next thing begins, measured from this tensor's end
            "next_item": nxt,
            "gap_after_descriptor": e.data_offset - desc_end,
            "gap_after_data": nxt - max(data_end, desc_end),
            "data_offset_is_next_descriptor": e.data_length == 0 and e.data_offset == nxt,
            "padding_zero": not any(data[max(data_end, desc_end):nxt]),
        })
    index_end = c.index_offset + c.index_length
    return {
        "size": c.size,
        "version": [c.major, c.minor],
        "file_flags": c.file_flags,
        "data_buffer_alignment": c.alignment,
        "first_descriptor_offset": c.first_descriptor_offset,
        "tensor_count_hint": c.count_hint,
        "index": [c.index_offset, c.index_length],
        "kv": [c.kv_offset, c.kv_length],
        "index_crc32c": c.index_crc32c,
        "index_crc32c_computed": crc32c(data[c.index_offset:index_end]),
        "bytes_between_index_and_trailer": c.size - TRAILER_LEN - index_end,
        "entries": out_entries,
    }
