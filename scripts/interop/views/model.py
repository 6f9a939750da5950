"""A mounted model as the views checks see it: its object directories,
found by the true name in each meta.json, and what `ztfs cat` prints for a
part (asked once per part, kept for the .npy and safetensors checks alike).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Optional

from ..mount import read_whole
from ..results import Results, short
from ..ztfs import Ztfs


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
        self._data: dict = {}
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

    def cat(self, name: str, part: Optional[str]) -> Optional[tuple[int, bytes, bytes]]:
        """`ztfs cat FILE NAME PART` (a Hurray tensor's data: `ztfs cat FILE
        NAME`): (exit status, stdout, stderr), or None when no argv can carry
        the name (U+0000)."""
        key = (name, part)
        if key not in self._cat:
            if "\0" in name or (part is not None and "\0" in part):
                self._cat[key] = None
            else:
                self._cat[key] = self.z.run("cat", [self.path, name] + ([part] if part else []))
        return self._cat[key]

    def data_of(self, o: Obj, file: str, part) -> tuple[Optional[bytes], str]:
        """The bytes of `file` in `o`'s directory, checked against `ztfs cat`
        of `part` (False: there is no cat form). (bytes, "") when both agree;
        (None, why) when the file fails to read and cat refuses too (exit
        1), or cannot be asked: then the views of it must fail as well. Any
        disagreement is recorded as a failure, and gives (None, "")."""
        key = (o.name, file, part)
        if key not in self._data:
            self._data[key] = self._data_of(o, file, part)
        return self._data[key]

    def _data_of(self, o: Obj, file: str, part) -> tuple[Optional[bytes], str]:
        where = f"{self.where} {o.name[:60]!r}/{file}"
        try:
            got: Optional[bytes] = read_whole(os.path.join(o.dir, file))
            why = ""
        except OSError as e:
            got, why = None, f"reading it fails ({e.strerror})"
        c = self.cat(o.name, part) if part is not False else None
        if c is None:
            return got, why
        rc, out, err = c
        if got is None:
            ok = self.res.check(rc == 1, where, f"{why}, yet `ztfs cat` exits {rc} "
                                                f"({len(out)} bytes): {short(err)}")
            return None, (f"{why}; `ztfs cat` refuses: {short(err, 100)}" if ok else "")
        if self.res.check(rc == 0 and out == got, where,
                          f"{len(got)} bytes; `ztfs cat` exits {rc} with {len(out)} "
                          f"bytes{' that differ' if rc == 0 else ''}: {short(err)}"):
            return got, ""
        return None, ""
