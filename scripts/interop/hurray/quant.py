"""Quantized tensors written by pyhurray, with the values a reader must
compute from them: the spec's formulas (hurray docs/spec/quantization/*.md)
applied in numpy, here, to the arrays each tensor was made from, never
to a reader's output.

- affine (per-tensor, per-channel, per-block): `scale * (q - zero_point)`,
  the difference exact (int64), cast to float32, times the float32 scale
  (an f16 or bf16 per-block scale widened first);
- MXFP over int8: `2^(e - 127) * q`.

Blocks: `b = outer * ceil(S / K) + i_axis // K`, `outer` the row-major
index over the other dimensions; per-block storage is padded to whole
blocks along the axis (zeros), the padding skipped. pyhurray has no
sub-byte or float8 dtypes, so NF4, int4/int2 and the float MXFP kinds are
covered by tests/hurray_quant.rs (values worked out by hand) instead.
"""

from __future__ import annotations

import struct

import hurray as hr
import ml_dtypes
import numpy as np


def affine(q: np.ndarray, scale: np.ndarray, zero: np.ndarray) -> bytes:
    """`scale * (q - zero)` as the spec computes it; float32 bytes."""
    diff = (q.astype(np.int64) - zero.astype(np.int64)).astype(np.float32)
    return (scale.astype(np.float32) * diff).astype("<f4").tobytes()


def per_block_index(shape, axis: int, block: int) -> np.ndarray:
    """Each element's block index, in the tensor's shape."""
    idx = np.indices(shape)
    per_axis = -(-shape[axis] // block)
    others = [d for d in range(len(shape)) if d != axis]
    outer = np.zeros(shape, dtype=np.int64)
    for d in others:
        outer = outer * shape[d] + idx[d]
    return outer * per_axis + idx[axis] // block


def padded(q: np.ndarray, axis: int, block: int) -> np.ndarray:
    """`q` with zeros to whole blocks along `axis` (the storage)."""
    pad = [(0, 0)] * q.ndim
    pad[axis] = (0, -q.shape[axis] % block)
    return np.pad(q, pad)


def cases(rng) -> list:
    """(name, tensor, expected float32 bytes) for each quantized tensor."""
    out = []
    # Per-tensor over each integer storage type pyhurray writes.
    for dt, ty, zero in ((np.int8, hr.int8, -3), (np.uint8, hr.uint8, 128),
                         (np.int16, hr.int16, -300), (np.uint16, hr.uint16, 40000),
                         (np.int32, hr.int32, -7), (np.uint32, hr.uint32, 2**31 - 1)):
        info = np.iinfo(dt)
        q = rng.integers(info.min, info.max, (3, 4), dtype=dt, endpoint=True)
        if dt == np.uint32:
            q[0, 0], q[0, 1] = info.max, 0
        scale = np.float32(0.0173)
        t = hr.Tensor(q.tobytes(), ty, list(q.shape), quantization=hr.PerTensorAffine(float(scale), zero))
        out.append((f"per-tensor/{np.dtype(dt).name}", t, affine(q, scale, np.int64(zero))))

    # Per-channel, symmetric, axis 0 of int8 [2, 4].
    q = rng.integers(-128, 127, (2, 4), dtype=np.int8, endpoint=True)
    s = np.array([0.02, 0.017], dtype=np.float32)
    t = hr.Tensor(q.tobytes(), hr.int8, [2, 4], aux_buffers=[s.tobytes()],
                  quantization=hr.PerChannelAffine.symmetric(axis=0, scale_buffer_index=1))
    out.append(("per-channel/symmetric", t, affine(q, s[:, None], np.int64(0))))

    # Per-channel, asymmetric, axis 1 of uint8 [3, 5].
    q = rng.integers(0, 255, (3, 5), dtype=np.uint8, endpoint=True)
    s = rng.uniform(0.001, 0.1, 5).astype(np.float32)
    z = rng.integers(0, 255, 5, dtype=np.int32, endpoint=True)
    t = hr.Tensor(q.tobytes(), hr.uint8, [3, 5], aux_buffers=[s.tobytes(), z.astype("<i4").tobytes()],
                  quantization=hr.PerChannelAffine.asymmetric(
                      axis=1, scale_buffer_index=1, zero_point_buffer_index=2))
    out.append(("per-channel/asymmetric", t, affine(q, s[None, :], z[None, :])))

    # Per-block, symmetric, axis 0 of int8 [5, 8] in blocks of 2 (the last
    # block padded), f16 scales.
    shape, axis, block = (5, 8), 0, 2
    q = rng.integers(-128, 127, shape, dtype=np.int8, endpoint=True)
    b = per_block_index(shape, axis, block)
    s = rng.uniform(0.01, 1.0, int(b.max()) + 1).astype(np.float16)
    t = hr.Tensor(padded(q, axis, block).tobytes(), hr.int8, list(shape), aux_buffers=[s.tobytes()],
                  quantization=hr.PerBlockAffine.symmetric(axis, block, 1, hr.float16))
    out.append(("per-block/f16-padded", t, affine(q, s.astype(np.float32)[b], np.int64(0))))

    # Per-block, asymmetric, axis 1 of uint8 [4, 6] in blocks of 4 (padded
    # to 8), bf16 scales.
    shape, axis, block = (4, 6), 1, 4
    q = rng.integers(0, 255, shape, dtype=np.uint8, endpoint=True)
    b = per_block_index(shape, axis, block)
    n = int(b.max()) + 1
    s = rng.uniform(0.01, 1.0, n).astype(ml_dtypes.bfloat16)
    z = rng.integers(0, 255, n, dtype=np.int32, endpoint=True)
    t = hr.Tensor(padded(q, axis, block).tobytes(), hr.uint8, list(shape),
                  aux_buffers=[s.tobytes(), z.astype("<i4").tobytes()],
                  quantization=hr.PerBlockAffine.asymmetric(axis, block, 1, 2, hr.bfloat16))
    out.append(("per-block/bf16-asymmetric", t, affine(q, s.astype(np.float32)[b], z[b])))

    # Per-block, symmetric, f32 scales, axis 1 of int8 [3, 64] in blocks of 32.
    shape, axis, block = (3, 64), 1, 32
    q = rng.integers(-128, 127, shape, dtype=np.int8, endpoint=True)
    b = per_block_index(shape, axis, block)
    s = rng.uniform(0.01, 1.0, int(b.max()) + 1).astype(np.float32)
    t = hr.Tensor(q.tobytes(), hr.int8, list(shape), aux_buffers=[s.tobytes()],
                  quantization=hr.PerBlockAffine.symmetric(axis, block, 1, hr.float32))
    out.append(("per-block/f32", t, affine(q, s[b], np.int64(0))))

    # MXINT8: axis 1 of int8 [2, 32] in blocks of 16; e8m0 scales.
    shape, axis, block = (2, 32), 1, 16
    q = rng.integers(-128, 127, shape, dtype=np.int8, endpoint=True)
    b = per_block_index(shape, axis, block)
    e = rng.integers(100, 150, int(b.max()) + 1, dtype=np.uint8)
    s = np.ldexp(np.float32(1), e.astype(np.int32) - 127).astype(np.float32)
    t = hr.Tensor(q.tobytes(), hr.int8, list(shape), aux_buffers=[e.tobytes()],
                  quantization=hr.MXFP(axis=axis, block_size=block, scale_buffer_index=1))
    out.append(("mxfp/int8", t, (s[b] * q.astype(np.float32)).astype("<f4").tobytes()))
    return out


def struct_check() -> None:
    """The oracle's own arithmetic on a case worked by hand."""
    got = affine(np.array([1, -2], dtype=np.int8), np.float32(0.5), np.int64(-3))
    assert got == struct.pack("<2f", 2.0, 0.5), got
