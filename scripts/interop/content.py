"""The content digest (spec §6.4) computed from the package's view of a
file, which has none of its own, plus the object attributes and part
digest strings only the manifest holds.
"""

from __future__ import annotations

import hashlib

import xxhash

from .cbor import cbor_encode
from .container import xxh3_string
from .results import Results


def same_value(a, b) -> bool:
    """Equality that tells 1 from 1.0 and True, -0.0 from 0.0, and NaN = NaN."""
    try:
        return cbor_encode(a) == cbor_encode(b)
    except (TypeError, ValueError):
        return False


def content_value(objs: dict, manifest: dict, res: Results, where: str):
    """The §6.4 value from the package's view, plus the attributes and digest
    strings only the manifest holds. None when a part has no digest."""
    mobjs = manifest.get("objects", {})
    out = {}
    for name, o in objs.items():
        mo = mobjs.get(name)
        if mo is None:
            res.fail(where, f"package lists {name!r}, the manifest does not")
            return None
        entry = {"shape": o.shape, "layout": o.layout}
        if "attributes" in mo:
            entry["attributes"] = mo["attributes"]
        parts = {}
        for pn, pp in o.parts.items():
            mp = mo.get("parts", {}).get(pn, {})
            stored = mp.get("digest")
            if stored is None:
                return None
            if stored.startswith("xxh3:"):
                res.check(stored == xxh3_string(pp.data), where,
                          f"{name!r}/{pn!r}: manifest digest {stored} is not the "
                          f"xxh3 of the package's decoded bytes ({xxh3_string(pp.data)})")
            elif stored.startswith("sha256:"):
                mine = "sha256:" + hashlib.sha256(pp.data).hexdigest()
                res.check(stored == mine, where,
                          f"{name!r}/{pn!r}: manifest digest {stored} is not the "
                          f"sha256 of the package's decoded bytes ({mine})")
            pe = {"dtype": pp.dtype, "digest": stored}
            if pp.logical is not None:
                pe["type"] = pp.logical
            parts[pn] = pe
        entry["parts"] = parts
        out[name] = entry
    return ["zt.content/1", out]


def content_digests(value) -> dict:
    enc = cbor_encode(value)
    return {
        "sha256": "sha256:" + hashlib.sha256(enc).hexdigest(),
        "xxh3": "xxh3:%016x" % xxhash.xxh3_64_intdigest(enc),
    }
