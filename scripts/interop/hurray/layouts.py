"""The buffer of a Hurray layout, built from a numpy array by the layout's
address function (docs/spec/layouts/*.md), so the expected row-major bytes
of a generated tensor are the array's own. The spec's worked examples are
checked at import: an address function that disagrees with them stops the
run before any file is written.
"""

from __future__ import annotations

import itertools

import numpy as np


def col_major(a: np.ndarray) -> bytes:
    """column-major.md: the first dimension varies fastest."""
    return a.tobytes(order="F")


def strided(a: np.ndarray, strides: list) -> bytes:
    """strided.md with non-negative strides (byte_offset 0): element i at
    sum(i_k * strides[k]); a zero stride shares one element."""
    n = sum(s * (d - 1) for s, d in zip(strides, a.shape)) + 1
    buf = np.zeros(n, a.dtype)
    for idx in itertools.product(*map(range, a.shape)):
        buf[sum(i * s for i, s in zip(idx, strides))] = a[idx]
    return buf.tobytes()


def morton_code(idx, bits: list) -> int:
    """morton.md: bits interleaved round-robin from the LSB of dimension 0."""
    rank, code = len(bits), 0
    for b in range(max(bits)):
        for d in range(rank):
            if b < bits[d]:
                code |= ((idx[d] >> b) & 1) << (b * rank + d)
    return code


def morton(a: np.ndarray, bits: list) -> bytes:
    """morton.md: 2^sum(bits) elements; unused slots zero."""
    buf = np.zeros(1 << sum(bits), a.dtype)
    for idx in itertools.product(*map(range, a.shape)):
        buf[morton_code(idx, bits)] = a[idx]
    return buf.tobytes()


def _linear(idx, shape, order: str) -> int:
    dims = range(len(shape)) if order == "col_major" else reversed(range(len(shape)))
    off, mul = 0, 1
    for k in dims:
        off += idx[k] * mul
        mul *= shape[k]
    return off


def tiled_offset(idx, shape, tile, outer: str, inner: str) -> int:
    """tiled.md, Element Address: tile number by the outer layout over the
    tile grid, times the tile's elements, plus the intra-tile offset by the
    inner layout."""
    grid = [-(-s // t) for s, t in zip(shape, tile)]
    t_idx = [i // t for i, t in zip(idx, tile)]
    e_idx = [i % t for i, t in zip(idx, tile)]
    return _linear(t_idx, grid, outer) * int(np.prod(tile)) + _linear(e_idx, tile, inner)


def tiled(a: np.ndarray, tile: list, outer: str, inner: str) -> bytes:
    """tiled.md: whole tiles, boundary padding zero."""
    grid = [-(-s // t) for s, t in zip(a.shape, tile)]
    buf = np.zeros(int(np.prod(grid)) * int(np.prod(tile)), a.dtype)
    for idx in itertools.product(*map(range, a.shape)):
        buf[tiled_offset(idx, a.shape, tile, outer, inner)] = a[idx]
    return buf.tobytes()


# The spec's worked examples.
assert tiled_offset((3, 5), (6, 8), (2, 4), "row_major", "row_major") == 29  # tiled.md
assert morton_code((2, 3), [2, 2]) == 14  # morton.md
assert _linear((1, 2), (3, 4), "col_major") == 7  # column-major.md
