"""Mutations of package-written files: broken copies on which both readers
must agree on an error.
"""

from __future__ import annotations

import os
from typing import Optional

from ..container import ZSTD, read_raw
from .generate import Gen
from ..package import package_verdict
from ..results import Results, short
from ..ztfs import Ztfs, stderr_rule


def mutations(gens: list[Gen], tmp: str) -> list[tuple[str, str, str]]:
    """(name, path, what) for broken copies of generated files."""
    by = {g.name: g for g in gens}
    out = []

    def mutate(src_name, name, what, fn):
        g = by.get(src_name)
        if g is None:
            return
        data = bytearray(open(g.path, "rb").read())
        raw = read_raw(g.path)
        fn(data, raw)
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        out.append((name, path, what))

    def first_blob(raw, pred):
        for oname, o in sorted(raw.manifest["objects"].items()):
            for pn, p in sorted(o["parts"].items()):
                if pred(oname, pn, p):
                    return p["blob"]
        raise KeyError("no such part")

    def flip_data(data, raw):
        off, ln = first_blob(raw, lambda o, p, m: "encoding" not in m and m["blob"][1] > 0)
        data[off + ln // 2] ^= 0x01

    def bool_two(data, raw):
        off, _ = first_blob(raw, lambda o, p, m: m.get("type") == "bool" and m["blob"][1] > 0
                            and "encoding" not in m)
        data[off] = 2

    def zstd_byte(data, raw):
        off, ln = first_blob(raw, lambda o, p, m: m.get("encoding") == ZSTD and m["blob"][1] > 400)
        data[off + 200] ^= 0xFF

    def manifest_hash(data, raw):
        data[-24] ^= 0x01

    def version(data, raw):
        data[-16] = 3

    def truncate(data, raw):
        del data[-1]

    def bad_nibble(data, raw):
        off, ln = first_blob(raw, lambda o, p, m: m.get("type") == "f4_e2m1" and o.endswith(".odd"))
        data[off + ln - 1] |= 0x10

    mutate("dtypes-4k.zt", "mut-data-flip.zt", "one data byte flipped (digest mismatch)", flip_data)
    mutate("dtypes-4k.zt", "mut-bool-2.zt", "a bool byte set to 2", bool_two)
    mutate("dtypes-4k.zt", "mut-f4-odd-nibble.zt", "odd f4_e2m1 count with the final high nibble set",
           bad_nibble)
    mutate("zstd.zt", "mut-zstd-byte.zt", "a byte inside a zstd frame flipped", zstd_byte)
    mutate("tied-4k.zt", "mut-manifest-hash.zt", "footer manifest hash off by one bit", manifest_hash)
    mutate("tied-4k.zt", "mut-version-3.zt", "footer version 3", version)
    mutate("tied-4k.zt", "mut-truncated.zt", "last byte cut off", truncate)
    return out


def check_mutation(name: str, path: str, what: str, z: Optional[Ztfs], res: Results):
    where = name
    stage, prule, pmsg = package_verdict(path)
    if z is None:
        print(f"ok   {where}: {what}: package stops at {stage} ({prule})", flush=True)
        return
    rc, _, err = z.run("check", [path])
    rc_v, _, err_v = z.run("check", [path], ("--verify",))
    zrule = stderr_rule(err) or stderr_rule(err_v)
    zstage = "open" if rc == 1 else ("verify" if rc_v == 1 else "accepts")
    pstage = "verify" if stage == "read" else stage
    agree = (pstage == "accepts") == (zstage == "accepts")
    res.check(agree, where,
              f"{what}: package {'accepts' if pstage == 'accepts' else 'rejects at ' + stage}"
              f" ({prule}: {pmsg}); ztfs check exit {rc}, check --verify exit {rc_v} "
              f"({short(err or err_v)})")
    if agree and pstage != "accepts":
        if pstage != zstage:
            res.note(f"note {where}: package rejects at {stage}, ztfs at {zstage}")
        if prule and zrule and prule != zrule:
            res.note(f"note {where}: package says {prule}, ztfs says {zrule}")
    print(f"{'ok  ' if agree else 'FAIL'} {where}: {what}: package {stage}/{prule}, "
          f"ztfs {zstage}/{zrule}", flush=True)
