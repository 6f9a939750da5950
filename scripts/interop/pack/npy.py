"""The pack suite's .npy check: arrays written by `np.save` of every dtype
zTensor has a type for, packed together by `ztfs pack a.npy b.npy ...`,
read back through the ztensor package (shape, dtype, logical type, bytes);
and the arrays ztfs must refuse (bfloat16 saved as `<V2`, Fortran order,
big-endian, object arrays), each refused with a reason.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import ztensor

from .common import check_packed
from ..results import Results, short
from ..ztfs import Ztfs

# name -> (array, zTensor dtype, logical type)
ARRAYS = {
    "f64": (np.linspace(-1, 1, 7), "f64", None),
    "f32": (np.arange(24, dtype=np.float32).reshape(2, 3, 4), "f32", None),
    "f16": (np.array([0.5, -2, np.inf], np.float16), "f16", None),
    "i8": (np.array([-128, 0, 127], np.int8), "i8", None),
    "i16": (np.array([-3, 4], np.int16), "i16", None),
    "i32": (np.array([[1, -2], [3, -4]], np.int32), "i32", None),
    "i64": (np.array([-(2**62)], np.int64), "i64", None),
    "u8": (np.array([0, 255], np.uint8), "u8", None),
    "u16": (np.array([65535], np.uint16), "u16", None),
    "u32": (np.array([7, 8, 9], np.uint32), "u32", None),
    "u64": (np.array([2**63], np.uint64), "u64", None),
    "flags": (np.array([True, False, True]), "u8", "bool"),
    "c64": (np.array([1 + 2j, -3j], np.complex64), "f32", "complex64"),
    "c128": (np.array([[1 + 2j]], np.complex128), "f64", "complex128"),
    "scalar": (np.float32(2.5), "f32", None),
    "empty": (np.zeros((0, 3), np.float32), "f32", None),
}


def refused() -> dict:
    """name -> array ztfs pack must refuse, with what the refusal says."""
    return {
        "bf16-as-void": (np.arange(4).astype(ml_dtypes.bfloat16), "no zTensor type"),
        "fortran": (np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)), "Fortran"),
        "big-endian": (np.arange(3, dtype=">f4"), "big-endian"),
        "objects": (np.array([{"a": 1}, None], dtype=object), "no zTensor type"),
    }


def run_npy(z: Ztfs, res: Results, tmp: str) -> None:
    os.makedirs(tmp, exist_ok=True)
    paths = []
    for name, (a, _, _) in ARRAYS.items():
        paths.append(os.path.join(tmp, f"{name}.npy"))
        np.save(paths[-1], a)
    out = os.path.join(tmp, "arrays.zt")
    where = "pack npy"
    rc, _, err = z.run("pack", [], (*paths, "-o", out))
    if res.check(rc == 0, where, f"`ztfs pack` of {len(paths)} .npy files exited {rc}: {short(err)}"):
        check_packed(z, res, where, out)
        src = ztensor.open(out)
        res.check(sorted(src.keys()) == sorted(ARRAYS), where,
                  f"objects {sorted(src.keys())}, the files {sorted(ARRAYS)}")
        for name, (a, dtype, logical) in ARRAYS.items():
            if name not in src:
                continue
            t = src[name]
            got = (list(t.shape), t.dtype, t.logical, t.tobytes())
            want = (list(np.shape(a)), dtype, logical, np.ascontiguousarray(a).tobytes())
            res.check(got == want, where, f"{name}: {got[:3]} ({len(got[3])} bytes) vs "
                      f"{want[:3]} ({len(want[3])} bytes), equal bytes: {got[3] == want[3]}")
    for name, (a, says) in refused().items():
        path = os.path.join(tmp, f"{name}.npy")
        np.save(path, a, allow_pickle=True)
        rc, _, err = z.run("pack", [], (path, "-o", os.path.join(tmp, f"{name}.zt")))
        res.check(rc == 1 and says.encode() in err, f"pack npy {name}",
                  f"`ztfs pack` exited {rc} ({short(err)}); want a refusal saying {says!r}")
        res.check(not os.path.exists(os.path.join(tmp, f"{name}.zt")), f"pack npy {name}",
                  "a refused pack left its output")
    print(f"ok   pack npy: {len(ARRAYS)} arrays packed, {len(refused())} refused", flush=True)
