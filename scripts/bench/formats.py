"""The benchmark's files: the big tensor and the many-object files of the
metadata section, in each container ztfs mounts. The big tensor's bytes
sit at BLOB_OFFSET whatever the container, so the bare server and native
reads use one offset and ztfs reads the tensor as `big/data`. Python
standard library only.

  zt           one raw u8 part, the blob at BLOB_OFFSET, the manifest at
               the next 64 KiB boundary; many objects share one blob
  hurray       one u8 tensor, row-major, its buffer at BLOB_OFFSET
               (bench/hurray.py)
  safetensors  one U8 tensor of shape [n], the .zt part's twin: the JSON
               header padded with spaces so the data starts at BLOB_OFFSET
               (the format lets whitespace pad the header)
  gguf         version 3, one F32 tensor of row-major shape [n/4096, 1024]
               (dims [1024, n/4096], fastest first; [n/4] when n is not a
               multiple of 4096) and one key-value, `general.alignment` =
               BLOB_OFFSET, so the data section starts there and the tensor
               at data offset 0 (as ggml's reader wants: each tensor
               directly after the previous one)

The many-object files are .zt files (make_many, beside gen_manifest) or,
for --format safetensors and gguf, files of that format (write_many).
"""

import json
import os
import struct
import subprocess

from . import hurray as bench_hurray

MAGIC = b"\x89ZT2\r\n\x1a\n"
BLOB_OFFSET = 65536
ALIGN = 65536
MIB = 1 << 20

# The file name's extension per --format.
EXT = {"zt": "zt", "hurray": "hrry", "safetensors": "safetensors", "gguf": "gguf"}


# ------------------------------------------------------------------ zTensor


def cbor_head(major, n):
    if n < 24:
        return bytes([major << 5 | n])
    for extra, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * width):
            return bytes([major << 5 | extra]) + n.to_bytes(width, "big")
    raise ValueError(n)


class Encoded(bytes):
    """A value already in CBOR."""


def cbor(v):
    """Deterministic CBOR (RFC 8949 §4.2.1) of ints, strings, lists, dicts."""
    if isinstance(v, Encoded):
        return bytes(v)
    if isinstance(v, int):
        return cbor_head(0, v)
    if isinstance(v, str):
        b = v.encode()
        return cbor_head(3, len(b)) + b
    if isinstance(v, list):
        return cbor_head(4, len(v)) + b"".join(cbor(x) for x in v)
    if isinstance(v, dict):
        items = sorted((cbor(k), cbor(x)) for k, x in v.items())
        return cbor_head(5, len(items)) + b"".join(k + x for k, x in items)
    raise TypeError(type(v))


def u8_object(offset, length):
    return {
        "parts": {"data": {"blob": [offset, length], "dtype": "u8"}},
        "shape": [length],
        "layout": "dense",
    }


def write_zt(path, write_blob, blob_len, manifest, xxh3):
    """Magic, zeros, the blob at BLOB_OFFSET, the manifest at the next 64 KiB
    boundary, the footer."""
    hashed = subprocess.run([xxh3], input=manifest, capture_output=True, check=True)
    digest = int(hashed.stdout)
    moff = -(-(BLOB_OFFSET + blob_len) // ALIGN) * ALIGN
    with open(path, "wb") as f:
        f.write(MAGIC + bytes(BLOB_OFFSET - len(MAGIC)))
        write_blob(f)
        f.write(bytes(moff - BLOB_OFFSET - blob_len))
        f.write(manifest)
        f.write(struct.pack("<QQQII", moff, len(manifest), digest, 2, 0) + MAGIC)
        f.flush()
        os.fsync(f.fileno())


def make_big(path, n, xxh3, fmt="zt"):
    """The big file: one tensor `big` of `n` bytes at BLOB_OFFSET in the
    container `fmt` (a key of EXT)."""
    chunk = bytes(i % 251 for i in range(MIB))

    def write_blob(f):
        left = n
        while left:
            k = min(left, MIB)
            f.write(chunk[:k])
            left -= k

    if fmt != "zt":
        WRITE_BIG[fmt](path, write_blob, n, BLOB_OFFSET)
        return
    manifest = cbor({"objects": {"big": u8_object(BLOB_OFFSET, n)}})
    write_zt(path, write_blob, n, manifest, xxh3)


def make_many(path, count, xxh3):
    """`count` objects t0000000.., all referencing one 64-byte blob (identical
    references are allowed, §2.4), so the file is little more than manifest."""
    width = max(7, len(str(count - 1)))
    value = cbor(u8_object(BLOB_OFFSET, 64))
    body = b"".join(cbor(f"t{i:0{width}d}") + value for i in range(count))
    objects = Encoded(cbor_head(5, count) + body)
    manifest = cbor({"objects": objects})
    write_zt(path, lambda f: f.write(bytes(range(64))), 64, manifest, xxh3)


def manifest_len(path):
    """The manifest's length from a .zt file's footer."""
    with open(path, "rb") as f:
        f.seek(-40, os.SEEK_END)
        return struct.unpack("<QQQII", f.read(32))[1]


# ------------------------------------------------- safetensors and GGUF

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
GGUF_UINT32 = 4  # gguf_type of a uint32 value
GGML_F32 = 0  # ggml_type of f32


def write_safetensors(path, write_blob, n, data_offset):
    """`N`, the header padded to `data_offset - 8` bytes, the tensor to the end."""
    header = json.dumps({"big": {"dtype": "U8", "shape": [n], "data_offsets": [0, n]}},
                        separators=(",", ":")).encode()
    pad = data_offset - 8 - len(header)
    if pad < 0:
        raise ValueError(f"safetensors header of {len(header)} bytes does not fit before "
                         f"{data_offset}")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", data_offset - 8) + header + b" " * pad)
        write_blob(f)
        f.flush()
        os.fsync(f.fileno())


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_tensor_info(name, dims, ggml_type, offset):
    return (gguf_string(name) + struct.pack("<I", len(dims))
            + b"".join(struct.pack("<Q", d) for d in dims)
            + struct.pack("<IQ", ggml_type, offset))


def gguf_shape(n):
    """Row-major shape of `n` bytes of f32: two dims where n allows."""
    if n % 4:
        raise ValueError(f"--format gguf needs a size that is a multiple of 4 (f32), not {n}")
    return [n // 4096, 1024] if n % 4096 == 0 else [n // 4]


def write_gguf(path, write_blob, n, data_offset):
    """Header, `general.alignment` = `data_offset`, one tensor info, zeros to
    `data_offset`, the tensor (data offset 0) to the end."""
    dims = list(reversed(gguf_shape(n)))
    head = GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, 1, 1)
    head += gguf_string("general.alignment") + struct.pack("<II", GGUF_UINT32, data_offset)
    head += gguf_tensor_info("big", dims, GGML_F32, 0)
    if len(head) > data_offset:
        raise ValueError(f"gguf header of {len(head)} bytes does not fit before {data_offset}")
    with open(path, "wb") as f:
        f.write(head + bytes(data_offset - len(head)))
        write_blob(f)
        f.flush()
        os.fsync(f.fileno())


# The big file's writer per --format other than zt: (path, write_blob, n, offset).
WRITE_BIG = {
    "hurray": bench_hurray.write_hurray,
    "safetensors": write_safetensors,
    "gguf": write_gguf,
}


def write_many(path, fmt, count):
    """`count` tensors t0000000.. of 64 bytes each (neither format lets two
    tensors share a range): U8 [64] in safetensors, F32 [16] in GGUF at the
    default alignment (32). Returns the header's length, the counterpart of
    a .zt file's manifest."""
    width = max(7, len(str(count - 1)))
    names = [f"t{i:0{width}d}" for i in range(count)]
    if fmt == "safetensors":
        header = ("{" + ",".join(
            f'"{name}":{{"dtype":"U8","shape":[64],"data_offsets":[{64 * i},{64 * i + 64}]}}'
            for i, name in enumerate(names)) + "}").encode()
        head = struct.pack("<Q", len(header)) + header
    elif fmt == "gguf":
        head = GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, count, 0)
        head += b"".join(gguf_tensor_info(name, [16], GGML_F32, 64 * i)
                         for i, name in enumerate(names))
        head += bytes(-len(head) % 32)
    else:
        raise ValueError(f"no many-object writer for {fmt}")
    with open(path, "wb") as f:
        f.write(head)
        f.write(bytes(range(64)) * count)
    return len(head)


def same_bytes(data_path, backing, offset, n, chunk=1 << 20):
    """None if `data_path` (a mount's big/data) is `n` bytes long and its
    first, middle and last `chunk` are the backing file's at `offset`;
    otherwise what differs."""
    size = os.path.getsize(data_path)
    if size != n:
        return f"{data_path} is {size} bytes, not {n}"
    with open(data_path, "rb") as a, open(backing, "rb") as b:
        for at in sorted({0, max(0, n // 2 - chunk // 2), max(0, n - chunk)}):
            k = min(chunk, n - at)
            if os.pread(a.fileno(), k, at) != os.pread(b.fileno(), k, offset + at):
                return f"{data_path} [{at}, +{k}) differs from {backing} at {offset + at}"
    return None
