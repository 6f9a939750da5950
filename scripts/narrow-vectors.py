#!/usr/bin/env python3
"""Test vectors for src/decode/dequant/narrow.rs: f32 values and what numpy's
astype(float16) and ml_dtypes' bfloat16 make of them.

Run with the project's venv (numpy 2.4.6, ml_dtypes 0.7.0):

    .venv/bin/python scripts/narrow-vectors.py

Writes tests/data/dequant/narrow.f32 (the inputs, little-endian f32),
narrow.f16 and narrow.bf16 (the two libraries' answers, little-endian).
The inputs: the special values (zeros, infinities, NaNs with every kind
of payload and sign), every rounding boundary of both types (ties, the
last finite, the subnormal range) and random bit patterns.
"""

import pathlib

import ml_dtypes
import numpy as np

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "dequant"


def inputs():
    special = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
               0x7F800001, 0xFF800001, 0x7FA00000, 0x7F802000, 0x7F801FFF,
               0x7FFFFFFF, 0xFFFFFFFF, 0x00000001, 0x007FFFFF, 0x00800000,
               0x7F7FFFFF, 0xFF7FFFFF]
    edges = []
    # Around every f16 exponent's boundaries and the ties below them, and
    # the subnormal and overflow ranges.
    for e in range(-27, 17):
        for m in (0, 1, 0x1000, 0x0FFF, 0x1FFF, 0x2000, 0x3000, 0x7FE000, 0x7FF000, 0x7FEFFF, 0x7FFFFF):
            edges.append(((e + 127) << 23) | m)
    # bf16 ties: low 16 bits 0x8000, with even and odd bit 16.
    for hi in (0x3F80, 0x3F81, 0x7F7F, 0x0080, 0x0001, 0x4049):
        for lo in (0x7FFF, 0x8000, 0x8001, 0x0000, 0xFFFF):
            edges.append((hi << 16) | lo)
    edges = edges + [b | 0x80000000 for b in edges]
    rng = np.random.default_rng(40)
    rand = rng.integers(0, 1 << 32, size=4096, dtype=np.uint64).tolist()
    return np.array(special + edges + rand, dtype=np.uint32)


def main():
    bits = inputs()
    values = bits.view(np.float32)
    with np.errstate(all="ignore"):
        f16 = values.astype(np.float16).view(np.uint16)
    bf16 = values.astype(ml_dtypes.bfloat16).view(np.uint16)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "narrow.f32").write_bytes(bits.astype("<u4").tobytes())
    (OUT / "narrow.f16").write_bytes(f16.astype("<u2").tobytes())
    (OUT / "narrow.bf16").write_bytes(bf16.astype("<u2").tobytes())
    print(f"{len(bits)} values")


if __name__ == "__main__":
    main()
