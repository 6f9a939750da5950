"""The package side: what the PyPI ztensor package makes of a file.

Its view of a file that must read (`package_view`), where it stops on one
that may not (`package_verdict`), a full probe of a corpus file (`probe`),
and its exceptions sorted into rejected / refused / io / error (`classify`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import ztensor

from .ztfs import REJECT_RE


@dataclasses.dataclass
class PPart:
    dtype: str
    logical: Optional[str]
    data: bytes


@dataclasses.dataclass
class PObj:
    shape: list
    layout: str
    parts: dict  # name -> PPart


def package_view(path: str) -> tuple[dict, Any]:
    objs = {}
    with ztensor.open(path) as src:
        attrs = src.attributes
        for name in src.keys():
            t = src[name]
            parts = {}
            for pn in t.parts:
                tp = t[pn]
                parts[pn] = PPart(tp.dtype, tp.logical, tp.tobytes())
            objs[name] = PObj(list(t.shape), t.layout, parts)
    return objs, attrs


@dataclasses.dataclass
class Kind:
    kind: str  # rejected | refused | io | error
    rule: Optional[str]
    message: str


def classify(e: BaseException) -> Kind:
    msg = str(e) or type(e).__name__
    m = REJECT_RE.search(msg)
    if m:
        return Kind("rejected", m.group(1), msg)
    if msg.startswith("unsupported") or "unsupported" in msg[:40]:
        return Kind("refused", None, msg)
    if isinstance(e, OSError):
        return Kind("io", None, f"{type(e).__name__}: {msg}")
    return Kind("error", None, f"{type(e).__name__}: {msg}")


def package_verdict(path: str) -> tuple[str, Optional[str], str]:
    """('accepts'|'open'|'read'|'verify', rule, message): where the package
    stops, and why."""
    try:
        src = ztensor.open(path)
    except BaseException as e:  # noqa: BLE001
        k = classify(e)
        return "open", k.rule, k.message
    with src:
        for name in src.keys():
            t = src[name]
            for pn in t.parts:
                try:
                    t[pn].tobytes()
                except BaseException as e:  # noqa: BLE001
                    k = classify(e)
                    return "read", k.rule, f"{name!r}/{pn!r}: {k.message}"
        try:
            src.verify()
        except BaseException as e:  # noqa: BLE001
            k = classify(e)
            return "verify", k.rule, k.message
    return "accepts", None, ""


@dataclasses.dataclass
class Probe:
    opened: bool = False
    open_err: Optional[Kind] = None
    read_errs: dict = dataclasses.field(default_factory=dict)
    parts: dict = dataclasses.field(default_factory=dict)  # (obj, part) -> bytes
    names: list = dataclasses.field(default_factory=list)
    objs: dict = dataclasses.field(default_factory=dict)  # name -> PObj (parts read)
    verify: Optional[tuple] = None
    verify_err: Optional[Kind] = None


def probe(path: str) -> Probe:
    pr = Probe()
    try:
        src = ztensor.open(path)
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        pr.open_err = classify(e)
        return pr
    pr.opened = True
    with src:
        pr.names = list(src.keys())
        for name in pr.names:
            try:
                t = src[name]
                pnames = list(t.parts)
                pobj = pr.objs[name] = PObj(list(t.shape), t.layout, {})
            except BaseException as e:  # noqa: BLE001
                pr.read_errs[(name, None)] = classify(e)
                continue
            for pn in pnames:
                try:
                    tp = t[pn]
                    data = pr.parts[(name, pn)] = tp.tobytes()
                    pobj.parts[pn] = PPart(tp.dtype, tp.logical, data)
                except BaseException as e:  # noqa: BLE001
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    pr.read_errs[(name, pn)] = classify(e)
        try:
            pr.verify = tuple(src.verify())
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            pr.verify_err = classify(e)
    return pr
