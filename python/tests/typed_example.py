"""A user's script, checked by `mypy --strict` against the installed
package (scripts/test-python.sh): the library's types as a user sees them."""

from __future__ import annotations

import sys
from typing import Dict, Optional

import numpy as np
import numpy.typing as npt

import ztfs


def load(path: str) -> Dict[str, npt.NDArray[np.generic]]:
    out: Dict[str, npt.NDArray[np.generic]] = {}
    with ztfs.open(path, cache_mib=32, dequantize="f32") as m:
        meta: Optional[Dict[str, str]] = m.metadata()
        print(m.format, len(m), meta)
        for name in m.keys():
            s: ztfs.Slice = m.get_slice(name)
            shape: list[int] = s.get_shape()
            out[name] = m.get_tensor(name) if not shape else s[0:1]
        for path_in_repo in m.files():
            data: bytes = m.read_file(path_in_repo)
            print(path_in_repo, len(data))
        reasons: Dict[str, str] = m.left_out()
        print(reasons)
    with ztfs.safe_open(path, framework="np") as f:
        for k in f.keys():
            print(k, f.get_tensor(k).shape)
    try:
        ztfs.open("/nonexistent")
    except ztfs.Rejected as e:
        rule: Optional[str] = e.rule
        print(rule)
    except (ztfs.Error, FileNotFoundError):
        pass
    return out


if __name__ == "__main__":
    load(sys.argv[1])
