"""Writes checkpoints in the layout `torch.save` writes, without torch:
`python -m interop.torch.writer OUTDIR` (its own process, because it puts
stand-in `torch` modules in `sys.modules` so that Python's own pickler
writes the globals torch's would: `torch._utils._rebuild_tensor_v2`,
`torch.FloatStorage`, `torch.storage.UntypedStorage`,
`collections.OrderedDict`).

The archive is what torch 2.x writes: members `ARCHIVE/data.pkl`
(protocol 2), `ARCHIVE/byteorder`, `ARCHIVE/data/KEY` (stored, 64-byte
aligned through the local header's extra field), `ARCHIVE/version`,
`ARCHIVE/.data/serialization_id`. A tensor pickles as torch's does:
`_rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
OrderedDict())`, the storage as the persistent id `('storage',
torch.XStorage, key, 'cpu', numel)`; a dtype without a typed storage
(float8, uint16) as `_rebuild_tensor_v3` of an untyped storage.

Writes OUTDIR/valid/*.pt (each with OUTDIR/valid/NAME.json: every tensor's
dtype, shape and sha256 of its row-major bytes, from numpy) and
OUTDIR/hostile/*.pt, whose pickles would run code, or exhaust a naive
reader, if loaded by torch.load without weights_only.
"""

from __future__ import annotations

import collections
import hashlib
import io
import json
import os
import pickle
import struct
import sys
import types
import zipfile

import numpy as np

# dtype name -> (numpy dtype, storage class or None for v3, torch dtype name)
DTYPES = {
    "float32": ("<f4", "FloatStorage", "float32"),
    "float64": ("<f8", "DoubleStorage", "float64"),
    "float16": ("<f2", "HalfStorage", "float16"),
    "bfloat16": ("<u2", "BFloat16Storage", "bfloat16"),
    "int64": ("<i8", "LongStorage", "int64"),
    "int32": ("<i4", "IntStorage", "int32"),
    "int16": ("<i2", "ShortStorage", "int16"),
    "int8": ("i1", "CharStorage", "int8"),
    "uint8": ("u1", "ByteStorage", "uint8"),
    "bool": ("?", "BoolStorage", "bool"),
    "complex64": ("<c8", "ComplexFloatStorage", "complex64"),
    "uint16": ("<u2", None, "uint16"),
    "float8_e4m3fn": ("u1", None, "float8_e4m3fn"),
}


def _stand_ins():
    """Modules named as torch's, holding functions and classes of the same
    names, so that pickle writes `GLOBAL torch._utils _rebuild_tensor_v2`."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")
    torch._utils = utils
    for name in ("_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_parameter"):
        f = lambda *a: None  # noqa: E731 - never called: only its name is written
        f.__name__ = f.__qualname__ = name
        f.__module__ = "torch._utils"
        setattr(utils, name, f)
    for _, storage, dtype in DTYPES.values():
        if storage:
            cls = type(storage, (), {"__module__": "torch"})
            setattr(torch, storage, cls)
        setattr(torch, dtype, _Named("torch", dtype))
    storage = types.ModuleType("torch.storage")
    storage.UntypedStorage = type("UntypedStorage", (), {"__module__": "torch.storage"})
    torch.storage = storage
    sys.modules["torch"] = torch
    sys.modules["torch._utils"] = utils
    sys.modules["torch.storage"] = storage
    return torch, utils


class _Named:
    """An object pickled as the global `module.name` (a torch dtype)."""

    def __init__(self, module, name):
        self.__module__, self.name = module, name

    def __reduce__(self):
        return self.name


class Storage:
    def __init__(self, key, dtype, data: bytes, untyped=False):
        self.key, self.dtype, self.data, self.untyped = key, dtype, data, untyped


class Tensor:
    """A tensor as torch pickles it: a view of a storage."""

    def __init__(self, storage, offset, shape, stride, parameter=False):
        self.storage, self.offset, self.shape, self.stride = storage, offset, shape, stride
        self.parameter = parameter

    def __reduce__(self):
        torch = sys.modules["torch"]
        u = torch._utils
        hooks = collections.OrderedDict()
        if self.storage.untyped:
            dt = getattr(torch, DTYPES[self.storage.dtype][2])
            args = (self.storage, self.offset, tuple(self.shape), tuple(self.stride), False, hooks, dt)
            f = u._rebuild_tensor_v3
        else:
            args = (self.storage, self.offset, tuple(self.shape), tuple(self.stride), False, hooks)
            f = u._rebuild_tensor_v2
        if self.parameter:
            plain = Tensor(self.storage, self.offset, self.shape, self.stride)
            return (u._rebuild_parameter, (plain, True, collections.OrderedDict()))
        return (f, args)


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            torch = sys.modules["torch"]
            width = np.dtype(DTYPES[obj.dtype][0]).itemsize
            if obj.untyped:
                return ("storage", torch.storage.UntypedStorage, obj.key, "cpu", len(obj.data))
            cls = getattr(torch, DTYPES[obj.dtype][1])
            return ("storage", cls, obj.key, "cpu", len(obj.data) // width)
        return None


def pickled(obj, protocol=2) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, protocol=protocol).dump(obj)
    return buf.getvalue()


def storages_of(obj, out):
    if isinstance(obj, Tensor):
        out[obj.storage.key] = obj.storage
    elif isinstance(obj, dict):
        for v in obj.values():
            storages_of(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            storages_of(v, out)
    return out


def write_archive(path, pkl: bytes, storages: dict, archive="archive", extra=(), compress=()):
    """The zip torch writes: data.pkl, byteorder, data/KEY aligned to 64, version."""
    with open(path, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
        def add(name, data, align=64):
            info = zipfile.ZipInfo(f"{archive}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            if name in compress:
                info.compress_type = zipfile.ZIP_DEFLATED
            at = f.tell() + 30 + len(info.filename.encode())
            pad = (-(at + 4)) % align
            info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # "FB", as torch's writer
            z.writestr(info, data)
        add("data.pkl", pkl)
        add("byteorder", b"little")
        for key, s in storages.items():
            add(f"data/{key}", s.data)
        for name, data in extra:
            add(name, data)
        add("version", b"3\n")
        add(".data/serialization_id", b"1234567890")


def save(path, obj, **kw):
    write_archive(path, pickled(obj), storages_of(obj, {}), **kw)


def expected(tensors: dict) -> dict:
    out = {}
    for name, (dtype, arr) in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        out[name] = {"dtype": dtype, "shape": list(arr.shape), "sha256": hashlib.sha256(b).hexdigest()}
    return out


def valid_cases(rng):
    """(name, object to pickle, {tensor name: (dtype, row-major array)})."""
    cases = []
    keys = iter(range(10_000))

    def tensor(dtype, arr, untyped=False):
        arr = np.ascontiguousarray(arr.astype(DTYPES[dtype][0]))
        s = Storage(str(next(keys)), dtype, arr.tobytes(), untyped=untyped)
        stride = [int(x) // arr.itemsize for x in arr.strides]
        return Tensor(s, 0, list(arr.shape), stride), arr

    # Every dtype, a state dict as model.state_dict() gives.
    sd, want = collections.OrderedDict(), {}
    for dtype, (np_dt, storage, _) in DTYPES.items():
        shape = (3, 5)
        if dtype == "bool":
            arr = rng.integers(0, 2, shape).astype(bool)
        elif dtype.startswith("float") or dtype.startswith("complex"):
            arr = rng.standard_normal(shape)
        else:
            arr = rng.integers(0, 100, shape)
        if dtype in ("bfloat16", "float8_e4m3fn"):
            arr = rng.integers(0, 255, shape)
        t, a = tensor(dtype, arr, untyped=storage is None)
        sd[f"layer.{dtype}"] = t
        want[f"layer.{dtype}"] = (dtype, a)
    cases.append(("dtypes", sd, want))

    # Views: a transpose, a slice with an offset, a step slice, a tied
    # weight (two names, one storage), a scalar, an empty tensor, a parameter.
    base = rng.standard_normal((4, 6)).astype("<f4")
    s = Storage("w", "float32", base.tobytes())
    sd, want = collections.OrderedDict(), {}
    sd["weight"] = Tensor(s, 0, [4, 6], [6, 1])
    want["weight"] = ("float32", base)
    sd["weight_t"] = Tensor(s, 0, [6, 4], [1, 6])
    want["weight_t"] = ("float32", base.T)
    sd["rows_1_3"] = Tensor(s, 6, [2, 6], [6, 1])
    want["rows_1_3"] = ("float32", base[1:3])
    sd["every_other_col"] = Tensor(s, 1, [4, 3], [6, 2])
    want["every_other_col"] = ("float32", base[:, 1::2])
    sd["tied"] = Tensor(s, 0, [4, 6], [6, 1])
    want["tied"] = ("float32", base)
    sd["scalar"] = Tensor(s, 5, [], [])
    want["scalar"] = ("float32", base.reshape(-1)[5:6].reshape(()))
    sd["empty"] = Tensor(s, 0, [0, 6], [6, 1])
    want["empty"] = ("float32", base[:0])
    sd["param"] = Tensor(s, 12, [6], [1], parameter=True)
    want["param"] = ("float32", base[2])
    cases.append(("views", sd, want))

    # A training checkpoint: the state dict nested, with other values.
    t, a = tensor("float16", rng.standard_normal((2, 2)))
    ckpt = {"epoch": 7, "state_dict": collections.OrderedDict(fc=t), "config": "x", "lr": [0.1, 0.2],
            "layers": [tensor("int64", np.arange(3))[0]]}
    want = {"state_dict.fc": ("float16", a), "layers.0": ("int64", np.arange(3))}
    cases.append(("nested", ckpt, want))
    return cases


def hostile_pickles(marker: str):
    """(name, data.pkl bytes, what picklescan should say): each would run
    code (or cost a naive reader its memory) under torch.load without
    weights_only. `marker` is the file the code would create."""
    cmd = f"touch {marker}"

    class System:
        def __reduce__(self):
            return (os.system, (cmd,))

    class Eval:
        def __reduce__(self):
            return (eval, (f"open({marker!r}, 'w').write('x')",))

    class Exec:
        def __reduce__(self):
            return (exec, (f"open({marker!r}, 'w').write('x')",))

    import subprocess

    class Popen:
        def __reduce__(self):
            return (subprocess.Popen, (["touch", marker],))

    out = []
    for name, obj in (("os-system", System()), ("builtins-eval", Eval()),
                      ("builtins-exec", Exec()), ("subprocess-popen", Popen())):
        body = collections.OrderedDict(weight=obj)
        out.append((name, pickled(body), True))
    # A global hidden behind an allowed one: _rebuild_tensor_v2 of os.system's result.
    out.append(("global-in-args", pickled(collections.OrderedDict(w=[System()])), True))
    # Opcode floods, memo bombs, recursion: no code, but a naive reader's end.
    out.append(("mark-flood", b"\x80\x02" + b"(" * 100_000 + b".", False))
    bomb = bytearray(b"\x80\x02]q\x00")  # a list, memo 0
    for _ in range(40):  # each step: a list of the previous one twice
        bomb += b"(h\x00h\x00lq\x00"
    bomb += b"."
    out.append(("memo-bomb", bytes(bomb), False))
    rec = b"\x80\x02}q\x00X\x01\x00\x00\x00ah\x00s."  # d = {}; d['a'] = d
    out.append(("recursion", rec, False))
    out.append(("inst-opcode", b"\x80\x02(ios\nsystem\nX\x04\x00\x00\x00trueq\x00.", True))
    return out


def write_sharded(outdir: str, rng) -> None:
    """A transformers sharded checkpoint: two files and
    `pytorch_model.bin.index.json`, a strided view in the second file;
    the expected tensors (in weight_map order) in `sharded.json`."""
    d = os.path.join(outdir, "sharded")
    os.makedirs(d, exist_ok=True)
    a = rng.standard_normal((3, 4)).astype("<f4")
    b = rng.standard_normal((4, 5)).astype("<f2")
    sa, sb = Storage("0", "float32", a.tobytes()), Storage("0", "float16", b.tobytes())
    files = {
        "pytorch_model-00001-of-00002.bin": collections.OrderedDict(
            {"embed.weight": Tensor(sa, 0, [3, 4], [4, 1])}),
        "pytorch_model-00002-of-00002.bin": collections.OrderedDict(
            {"head.weight": Tensor(sb, 0, [4, 5], [5, 1]),
             "head.weight_t": Tensor(sb, 0, [5, 4], [1, 5])}),
    }
    weight_map = {}
    for name, sd in files.items():
        save(os.path.join(d, name), sd)
        weight_map.update({k: name for k in sd})
    with open(os.path.join(d, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": a.nbytes + b.nbytes}, "weight_map": weight_map}, f)
    want = {"embed.weight": ("float32", a), "head.weight": ("float16", b),
            "head.weight_t": ("float16", b.T)}
    with open(os.path.join(outdir, "sharded.json"), "w") as f:
        json.dump(expected(want), f, indent=1)


def main(outdir: str, marker: str) -> None:
    _stand_ins()
    rng = np.random.default_rng(5)
    os.makedirs(os.path.join(outdir, "valid"), exist_ok=True)
    os.makedirs(os.path.join(outdir, "hostile"), exist_ok=True)
    for name, obj, want in valid_cases(rng):
        path = os.path.join(outdir, "valid", f"{name}.pt")
        save(path, obj)
        with open(path[:-3] + ".json", "w") as f:
            json.dump(expected(want), f, indent=1)
    write_sharded(outdir, rng)
    for name, pkl, flagged in hostile_pickles(marker):
        path = os.path.join(outdir, "hostile", f"{name}.pt")
        write_archive(path, pkl, {})
        with open(path[:-3] + ".flag", "w") as f:
            f.write("global\n" if flagged else "shape\n")
    # Refused by name: TorchScript, a compressed member, the legacy format.
    write_archive(os.path.join(outdir, "hostile", "torchscript.pt"), pickled([]), {},
                  extra=[("constants.pkl", pickled(())), ("code/__torch__.py", b"def f(): pass\n")])
    s = Storage("0", "float32", np.arange(4, dtype="<f4").tobytes())
    write_archive(os.path.join(outdir, "hostile", "deflated.pt"),
                  pickled(collections.OrderedDict(w=Tensor(s, 0, [4], [1]))), {"0": s},
                  compress=("data/0",))
    with open(os.path.join(outdir, "hostile", "legacy.pt"), "wb") as f:
        magic = 0x1950A86A20F9469CFC6C
        f.write(pickle.dumps(magic, protocol=2) + pickle.dumps(1001, protocol=2))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
