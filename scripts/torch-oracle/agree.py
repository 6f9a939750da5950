"""Writes tests/data/torch/agree/: checkpoints whose pickles are written
opcode by opcode, one per construction where ztfs and
`torch.load(weights_only=True)` must agree (or differ on purpose), and
torch's verdict on each. Run once, by hand, with torch (see write.py):

    /tmp/tv/bin/python scripts/torch-oracle/agree.py tests/data/torch/agree

Each NAME.pt is a zip in torch.save's layout: `agree/data.pkl`,
`agree/data/0` (six float32: 1 to 6), `agree/data/1` (six int64: 1 to 6),
`agree/data/2` (six float32: 10 to 60). `expected.json` maps each NAME to
torch's verdict, `{"torch": "loads", "tensors": {NAME: sha256 of the
row-major bytes}}` or `{"torch": "refuses"}`, and where ztfs refuses what
torch loads, `"ztfs": "refuses"` with the reason (docs/pytorch.md). The
test (tests/torch_input.rs) checks ztfs against it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import sys
import zipfile

# Torch writes the pickle this way: protocol 2, these opcodes.
PROTO = b"\x80\x02"


def s(text: str) -> bytes:
    b = text.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def g(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def ints(*ns: int) -> bytes:
    return b"(" + b"".join(b"K" + bytes([n]) for n in ns) + b"t"


def pid(ty: str, key: str, numel: int, module: str = "torch") -> bytes:
    return b"(" + s("storage") + g(module, ty) + s(key) + s("cpu") + b"K" + bytes([numel]) + b"tQ"


OD = g("collections", "OrderedDict") + b")R"


def v2(ty="FloatStorage", key="0", shape=(6,), stride=(1,), offset=0, grad=False, extra=b"",
       module="torch", numel=6) -> bytes:
    return (g("torch._utils", "_rebuild_tensor_v2") + b"(" + pid(ty, key, numel, module)
            + b"K" + bytes([offset]) + ints(*shape) + ints(*stride)
            + (b"\x88" if grad else b"\x89") + OD + extra + b"tR")


def d(*items: tuple[str | int, bytes]) -> bytes:
    out = b"}("
    for k, v in items:
        out += (s(k) if isinstance(k, str) else b"K" + bytes([k])) + v
    return out + b"u"


def cases() -> dict[str, bytes]:
    t, other = v2(), v2(key="2")
    return {
        # Constructions torch accepts.
        "ordered-dict-of-pairs": g("collections", "OrderedDict") + b"(]" + s("w") + t + b"\x86atR",
        "parameter-reduce": d(("w", g("torch.nn.parameter", "Parameter") + t + b"\x85R")),
        "parameter-newobj": d(("w", g("torch.nn.parameter", "Parameter") + t + b"\x85\x81")),
        "empty-offset-past-storage": d(("w", v2(shape=(0,), offset=200))),
        "v2-untyped-storage": d(("w", v2(ty="UntypedStorage", module="torch.storage", numel=24))),
        "untyped-storage-wrong-size": d(("w", v2(ty="UntypedStorage", module="torch.storage"))),
        "neg-bit-false": d(("w", v2(extra=d(("neg", b"\x89"))))),
        "other-values": d(("w", t), ("n", b"\x8a\x09" + b"\x00" * 8 + b"\x01"),
                          ("c", g("builtins", "complex") + b"K\x01K\x02\x86R"),
                          ("dev", g("torch", "device") + s("cpu") + b"\x85R"),
                          ("s", g("__builtin__", "set") + b"](K\x01K\x02e\x85R"),
                          ("b", g("_codecs", "encode") + s("ab") + s("latin1") + b"\x86R"),
                          ("k", g("collections", "Counter") + b")R")),
        # What torch refuses.
        "int-requires-grad": d(("w", v2(ty="LongStorage", key="1", grad=True))),
        "plain-dict-build": d(("w", t)) + b"}b",
        # Torch loads another tensor's values, or two tensors under one
        # name: ztfs refuses (docs/pytorch.md).
        "build-on-tensor": d(("w", t + b"(" + pid("FloatStorage", "2", 6) + b"K\x00" + ints(6) + ints(1) + b"tb")),
        "state-sets-data": d(("w", g("torch._tensor", "_rebuild_from_type_v2") + b"(" + g("torch._utils", "_rebuild_tensor_v2")
                              + g("torch", "Tensor") + v2()[len(g("torch._utils", "_rebuild_tensor_v2")):-1]
                              + d(("data", other)) + b"tR")),
        "keys-1-and-str-1": d(("1", t), (1, other)),
    }


REFUSED_BY_ZTFS = {
    "build-on-tensor": "BUILD on a tensor: torch runs set_ and serves the other storage's values",
    "state-sets-data": "a state setting .data: torch serves the other tensor's values",
    "keys-1-and-str-1": "two keys naming one entry: torch has two tensors, ztfs one name",
}


def archive(pickle: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("agree/data.pkl", PROTO + pickle + b".")
        z.writestr("agree/byteorder", "little")
        z.writestr("agree/data/0", struct.pack("<6f", 1, 2, 3, 4, 5, 6))
        z.writestr("agree/data/1", struct.pack("<6q", 1, 2, 3, 4, 5, 6))
        z.writestr("agree/data/2", struct.pack("<6f", 10, 20, 30, 40, 50, 60))
        z.writestr("agree/version", "3\n")
    return out.getvalue()


def verdict(path: str) -> dict:
    import torch  # only here: writing needs none

    sys.path.insert(0, os.path.dirname(__file__))
    from write import flatten, row_major_bytes

    try:
        obj = torch.load(path, weights_only=True)
    except Exception as e:  # noqa: BLE001 - the refusal is the verdict
        return {"torch": "refuses", "why": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
    tensors: dict = {}
    flatten(obj, [], tensors)
    return {"torch": "loads", "tensors": {n: hashlib.sha256(row_major_bytes(t)).hexdigest()
                                          for n, t in tensors.items()}}


def main(outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    expected = {}
    for name, pickle in cases().items():
        path = os.path.join(outdir, f"{name}.pt")
        with open(path, "wb") as f:
            f.write(archive(pickle))
        v = verdict(path)
        if name in REFUSED_BY_ZTFS:
            v.update(ztfs="refuses", why_ztfs=REFUSED_BY_ZTFS[name])
        expected[name] = v
        print(name, v["torch"], v.get("ztfs", ""))
    with open(os.path.join(outdir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
