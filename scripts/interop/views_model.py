"""A mounted model as the views checks see it: its object directories,
found by the true name in each meta.json, and what `ztfs cat` prints for a
part (asked once per part, kept for the .npy and safetensors checks alike).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Optional

from .mount import read_whole
from .results import Results, short
from .ztfs import Ztfs


@dataclasses.dataclass
class Obj:
    """One object directory: the true name, where it is, its meta.json."""

    name: str
    dir: str
    meta: dict


class Model:
    """The model file `path` mounted on `mnt`. `objects` maps each true
    name to its directory (names with '/' may nest, so the whole tree is
    walked); `cat` gives the bytes ztfs prints for a part."""

    def __init__(self, z: Ztfs, path: str, mnt: str, res: Results, where: str):
        self.z = z
        self.path = path
        self.mnt = mnt
        self.res = res
        self.where = where
        self.hurray = path.endswith(".hrry")
        self.objects: dict[str, Obj] = {}
        self._cat: dict = {}
        for d, _, files in os.walk(mnt):
            if d == mnt or "meta.json" not in files:
                continue
            try:
                meta = json.loads(read_whole(os.path.join(d, "meta.json")))
                name = meta["name"]
            except (OSError, ValueError, KeyError, TypeError) as e:
                res.fail(where, f"{os.path.relpath(d, mnt)!r}/meta.json unreadable: "
                                f"{type(e).__name__}: {e}")
                continue
            if name in self.objects:
                res.fail(where, f"two directories claim object {name[:60]!r}")
            self.objects[name] = Obj(name, d, meta)

    def cat(self, name: str, part: Optional[str]) -> Optional[bytes]:
        """`ztfs cat FILE NAME PART` (a Hurray tensor's data: `ztfs cat FILE
        NAME`). None when no argv can carry the name (U+0000) or cat fails;
        a failure is recorded, since the caller asks only for bytes the mount
        serves."""
        key = (name, part)
        if key not in self._cat:
            if "\0" in name or (part is not None and "\0" in part):
                self._cat[key] = None
            else:
                rc, out, err = self.z.run("cat", [self.path, name] + ([part] if part else []))
                ok = self.res.check(rc == 0, self.where,
                                    f"{name[:60]!r}/{part}: the mount serves it, but `ztfs cat` "
                                    f"exited {rc}: {short(err)}")
                self._cat[key] = out if ok else None
        return self._cat[key]
