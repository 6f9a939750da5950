"""The benchmark's big file as a Hurray container: one u8 tensor `big`,
row-major, its buffer at the same offset as the zTensor file's blob, so
both formats are read through the same `big/data` path and compared with
the same baselines. Python standard library only.
"""

import os
import struct


def crc32c(data):
    """CRC-32C (Castagnoli), bitwise; the index is a few dozen bytes."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def write_hurray(path, write_blob, n, data_offset):
    """Header, descriptor at 64, the buffer at `data_offset` (a power of two
    >= 4096, the file's data_buffer_alignment), the index, the trailer."""
    desc_len = 20 + 8 + 8 + 1 + 16
    desc = b"HRRY" + struct.pack("<BBIIBBI", 1, 0, desc_len, 0, 0x11, 0x01, 1)
    desc += struct.pack("<QQ", n, 0) + bytes([1]) + struct.pack("<QIBBBB", n, 64, 0, 0, 0, 0)
    assert len(desc) == desc_len
    header = b"HRRYFILE" + struct.pack("<BBHIIQQ", 1, 0, 0, 4, data_offset, 64, 1) + bytes(28)
    assert len(header) == 64
    name = b"big"
    index_offset = -(-(data_offset + n) // 8) * 8
    index = struct.pack("<QH", 1, len(name)) + name
    index += struct.pack("<QIQQI", 64, desc_len, data_offset, n, 0)
    trailer = struct.pack("<QQQII", index_offset, len(index), 0, 0, crc32c(index))
    trailer += bytes(4) + b"HRRY"
    with open(path, "wb") as f:
        f.write(header + desc + bytes(data_offset - 64 - desc_len))
        write_blob(f)
        f.write(bytes(index_offset - data_offset - n))
        f.write(index + trailer)
        f.flush()
        os.fsync(f.fileno())
