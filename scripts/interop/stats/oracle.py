"""What numpy says of a tensor's values: the numbers `ztfs stats --json`
gives (docs/view.md), computed on the reference reader's array.

The values are `array.astype(np.float64)` flattened (a complex array's
real and imaginary parts, as `.view()` of its real type gives them); the
statistics are those of its finite values: min, max, np.mean, np.std (the
population std) and np.histogram(finite, bins, range=(min, max)), all in
float64.
"""

from __future__ import annotations


import numpy as np


def numbers(a: np.ndarray) -> np.ndarray:
    """The array's values as float64, flat (complex as two reals each)."""
    a = np.ascontiguousarray(a)
    if np.iscomplexobj(a):
        a = a.view(a.real.dtype)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    return a.astype(np.float64).ravel()


def expected(a: np.ndarray, bins: int = 64) -> dict:
    v = numbers(a)
    fin = v[np.isfinite(v)]
    out = {
        "count": int(v.size),
        "nan": int(np.isnan(v).sum()),
        "posinf": int(np.isposinf(v).sum()),
        "neginf": int(np.isneginf(v).sum()),
        "zero": int((v == 0).sum()),
    }
    if fin.size == 0:
        out.update(min=None, max=None, mean=None, std=None,
                   hist={"bins": bins, "range": None, "counts": [0] * bins})
        return out
    lo, hi = float(fin.min()), float(fin.max())
    try:
        counts, _ = np.histogram(fin, bins=bins, range=(lo, hi))
        counts = [int(c) for c in counts]
    except ValueError:  # "Too many bins for data range": numpy has none
        counts = None
    out.update(min=lo, max=hi, mean=float(np.mean(fin)), std=float(np.std(fin)),
               hist={"bins": bins, "range": [lo, hi], "counts": counts})
    return out


def close(got, want, scale: float, rel: float = 1e-12) -> bool:
    """`got` within `rel` of `want`, relative to the larger of |want| and
    the values' scale (the mean of |x|): a mean near zero of values near
    one cannot be closer across two orders of summation."""
    if want is None or got is None:
        return got is None and want is None
    return got == want or abs(got - want) <= rel * max(abs(want), scale)


def differences(got: dict, a: np.ndarray, bins: int = 64) -> list[str]:
    """How `got` (one tensor's `ztfs stats --json`) differs from numpy's
    numbers for array `a`: counts, min and max and the histogram exact;
    mean and std to 1e-12 (see close)."""
    want = expected(a, bins)
    v = numbers(a)
    fin = v[np.isfinite(v)]
    scale = float(np.mean(np.abs(fin))) if fin.size else 0.0
    bad = []
    for k in ("count", "nan", "posinf", "neginf", "zero", "min", "max"):
        if got.get(k) != want[k]:
            bad.append(f"{k} {got.get(k)!r}, numpy {want[k]!r}")
    for k in ("mean", "std"):
        g = got.get(k)
        g = float(g) if isinstance(g, str) else g  # "inf": past float64, as numpy's
        if not close(g, want[k], scale):
            bad.append(f"{k} {got.get(k)!r}, numpy {want[k]!r}")
    if got.get("hist") != want["hist"]:
        g, w = got.get("hist") or {}, want["hist"]
        where = [i for i, (x, y) in enumerate(zip(g.get("counts") or [], w["counts"] or []))
                 if x != y]
        bad.append(f"hist bins {g.get('bins')} range {g.get('range')} (numpy {w['range']}), "
                   f"counts differ at {where[:8]}")
    return bad
