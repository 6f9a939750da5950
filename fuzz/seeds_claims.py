#!/usr/bin/env python3
"""Writes the seeds of the `claims` fuzz target into fuzz/corpus/claims/.

The target reads an input as a 1 TiB file: its first half at the start,
its second half at the end, zeros between. Each seed is a header at the
start and a trailer or footer at the end that claim huge counts or lengths,
one per class of issue 22 item 1 (tests/claims.rs, tests/gguf_input.rs).

  python3 fuzz/seeds_claims.py
"""
import struct
from pathlib import Path

OUT = Path(__file__).parent / "corpus" / "claims"


def split(head, tail):
    """The input whose halves are `head` and `tail`, padded to one length
    (the head with zeros after it, the tail with zeros before it)."""
    n = max(len(head), len(tail))
    return head + bytes(n - len(head)) + bytes(n - len(tail)) + tail


def hurray(flags, index, kv, at_4096):
    h = b"HRRYFILE" + bytes([1, 0, 0, 0]) + struct.pack("<IIQQ", flags, 4096, 64, 0)
    h = h.ljust(64, b"\0").ljust(4096, b"\0") + at_4096
    t = struct.pack("<QQQII", index[0], index[1], kv[0], kv[1], 0) + bytes(4) + b"HRRY"
    return split(h, t)


def gguf(tensors, kvs, rest=b""):
    return split(b"GGUF" + struct.pack("<IQQ", 3, tensors, kvs) + rest, b"")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    array = struct.pack("<Q", 1) + b"a" + struct.pack("<IIQ", 9, 8, 1 << 36)
    zt_magic = bytes([0x89, 0x5A, 0x54, 0x32, 0x0D, 0x0A, 0x1A, 0x0A])
    # A footer claiming a manifest of the cap, 1 GiB, before it.
    size = 1 << 40
    footer = struct.pack("<QQQQ", size - (1 << 31), 1 << 30, 0, 2) + zt_magic
    seeds = {
        "hurray-index-2-40": hurray(0, (4096, 1 << 39), (0, 0), struct.pack("<Q", 1 << 40)),
        "hurray-kv-2-32": hurray(1, (4096, 8), (8192, 2**32 - 16),
                                 struct.pack("<Q", 0).ljust(4096, b"\0") + struct.pack("<I", 2**32 - 1)),
        "gguf-kv-2-36": gguf(0, 1 << 36),
        "gguf-tensors-2-35": gguf(1 << 35, 0),
        "gguf-array-2-36": gguf(0, 1, array),
        "zt-manifest-1-gib": split(zt_magic, footer),
        "safetensors-header-100-mb": split(struct.pack("<Q", 100_000_000) + b"{", b""),
    }
    for name, data in seeds.items():
        (OUT / name).write_bytes(data)


if __name__ == "__main__":
    main()
