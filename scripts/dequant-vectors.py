#!/usr/bin/env python3
"""Test vectors for src/decode/dequant: blocks and gguf-py's dequantization of them.

Run with the project's venv (gguf-py 0.19.0, numpy 2):

    /work/main/.venv/bin/python scripts/dequant-vectors.py

For each type it writes tests/data/dequant/TYPE.bin (the blocks) and
TYPE.f32 (gguf.quants.dequantize of them, little-endian f32), and one
sizes.txt line "TYPE VALUES BYTES" from gguf's GGML_QUANT_SIZES. The first
FINITE blocks have their scale fields set to finite values, so the oracle
values are finite; the next RAW blocks are random bytes, where NaN and inf
scales appear (the first four have NaN and infinite scales forced, see
SPECIAL, so that every type sees them).
"""

import pathlib
import sys

import numpy as np
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

FINITE = 16
RAW = 16
OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "dequant"

# f16 scale fields: byte offsets of each little-endian f16 in a block.
F16_AT = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "TQ1_0": [52], "TQ2_0": [64],
    "IQ2_XXS": [0], "IQ2_XS": [0], "IQ2_S": [0], "IQ3_XXS": [0], "IQ3_S": [0],
    "IQ1_S": [0], "IQ4_NL": [0], "IQ4_XS": [0],
    # IQ1_M, MXFP4 and NVFP4 are special-cased in set_scale.
    "IQ1_M": [], "MXFP4": [], "NVFP4": [],
}

# f16 bit patterns forced into the first raw blocks, for a type's first
# and second f16 field (d and its min): NaNs with different payloads
# (signalling, quiet, either sign), infinities, and a NaN min under a
# finite d, so that NaN propagation through d·q + m is pinned down.
SPECIAL = [(0x7C01, 0x7D11), (0x7C00, 0xFC00), (0xFE05, 0x7E33), (0x3C00, 0xFE77)]


def finite_f16(rng):
    while True:
        h = int(rng.integers(0, 1 << 16))
        if (h >> 10) & 0x1F != 0x1F:
            return h


def put_f16(block, at, h):
    block[at] = h & 0xFF
    block[at + 1] = h >> 8


def put_iq1m_scale(block, h):
    # The f16 is spread over the top nibble of the four u16 at byte 48.
    for k in range(4):
        i = 48 + 2 * k + 1
        nib = (h >> (4 * k)) & 0xF
        block[i] = (block[i] & 0x0F) | (nib << 4)


def set_scales(name, block, hs):
    if name == "IQ1_M":
        put_iq1m_scale(block, hs[0])
    for at, h in zip(F16_AT[name], hs):
        put_f16(block, at, h)


def make_blocks(name, type_size, rng):
    blocks = rng.integers(0, 256, size=(FINITE + RAW, type_size), dtype=np.uint8)
    for b in range(FINITE):
        if name == "MXFP4":
            # e8m0 254 and 255 overflow the largest value to inf.
            blocks[b, 0] = rng.integers(0, 250)
        elif name == "NVFP4":
            pass  # ue4m3 scales are always finite in gguf-py
        else:
            if name == "IQ1_M":
                put_iq1m_scale(blocks[b], finite_f16(rng))
            for at in F16_AT[name]:
                put_f16(blocks[b], at, finite_f16(rng))
    for k, hs in enumerate(SPECIAL):
        set_scales(name, blocks[FINITE + k], hs)
    if name == "MXFP4":
        blocks[FINITE, 0] = 255
        blocks[FINITE + 1, 0] = 0
        blocks[FINITE + 2, 0] = 1
    if name == "NVFP4":
        blocks[FINITE, 0:4] = [0x7F, 0xFF, 0x00, 0x80]
    return blocks


def main():
    names = sys.argv[1:] or list(F16_AT)
    OUT.mkdir(parents=True, exist_ok=True)
    sizes = []
    for name in names:
        qtype = T[name]
        values, type_size = GGML_QUANT_SIZES[qtype]
        rng = np.random.default_rng(int(qtype))
        blocks = make_blocks(name, type_size, rng)
        with np.errstate(all="ignore"):
            out = quants.dequantize(blocks.reshape(-1), qtype)
        assert out.dtype == np.float32 and out.size == values * blocks.shape[0]
        finite = out[: FINITE * values]
        assert np.isfinite(finite).all(), name
        (OUT / f"{name.lower()}.bin").write_bytes(blocks.tobytes())
        (OUT / f"{name.lower()}.f32").write_bytes(out.astype("<f4").tobytes())
        sizes.append(f"{name.lower()} {values} {type_size}\n")
    if not sys.argv[1:]:
        (OUT / "sizes.txt").write_text("".join(sizes))


if __name__ == "__main__":
    main()
