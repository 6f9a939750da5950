"""A second reader of `torch.save` archives, for the interop suite:
Python's own unpickler (the C `pickle` module) with `find_class`
answering only the globals a state dict needs and `persistent_load`
reading each storage from the zip with `zipfile`; tensors rebuilt with
numpy's `as_strided`. It shares nothing with ztfs' reader but the format,
and it runs nothing outside its allowlist either (`find_class` raises).

`load(path)` returns {name: (dtype name, row-major array)}, names joined
as ztfs joins them (dict keys and list indices with `.`).
"""

from __future__ import annotations

import collections
import io
import pickle
import zipfile

import numpy as np

# torch storage class -> (numpy dtype, torch dtype name)
STORAGES = {
    "FloatStorage": ("<f4", "float32"), "DoubleStorage": ("<f8", "float64"),
    "HalfStorage": ("<f2", "float16"), "BFloat16Storage": ("<u2", "bfloat16"),
    "LongStorage": ("<i8", "int64"), "IntStorage": ("<i4", "int32"),
    "ShortStorage": ("<i2", "int16"), "CharStorage": ("i1", "int8"),
    "ByteStorage": ("u1", "uint8"), "BoolStorage": ("?", "bool"),
    "ComplexFloatStorage": ("<c8", "complex64"),
}
DTYPES = {name: np_dt for np_dt, name in STORAGES.values()}
DTYPES.update({"uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "float8_e4m3fn": "u1",
               "float8_e5m2": "u1"})


class _Dtype(str):
    """A torch dtype global, by name."""


class _Storage(str):
    """A storage class global, by name."""


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, zf: zipfile.ZipFile, prefix: str):
        super().__init__(io.BytesIO(data))
        self.zf, self.prefix, self.loaded = zf, prefix, {}

    def find_class(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor_v3",
                                                 "_rebuild_parameter"):
            return getattr(self, name)
        if (module == "torch" and name in STORAGES) or \
                (module, name) == ("torch.storage", "UntypedStorage"):
            return _Storage(name)
        if module == "torch" and name in DTYPES:
            return _Dtype(name)
        raise pickle.UnpicklingError(f"global {module}.{name} refused")

    def persistent_load(self, pid):
        tag, cls, key, _location, _numel = pid
        assert tag == "storage", tag
        if key not in self.loaded:
            self.loaded[key] = self.zf.read(f"{self.prefix}/data/{key}")
        return (str(cls), self.loaded[key])

    @staticmethod
    def _rebuild(storage, offset, size, stride, dtype_name, meta=None):
        np_dt = np.dtype(DTYPES[dtype_name])
        flat = np.frombuffer(storage[1], dtype=np_dt)
        if not size or 0 not in size:
            view = np.lib.stride_tricks.as_strided(
                flat[offset:], shape=tuple(size), strides=[s * np_dt.itemsize for s in stride])
        else:
            view = np.zeros(tuple(size), np_dt)
        values = np.array(view, order="C", copy=True)
        # Torch's math bits: the values torch.load gives are the stored ones
        # conjugated, then negated (a key present sets its bit).
        meta = meta or {}
        if "conj" in meta and values.dtype.kind == "c":
            values = np.conj(values)
        if "neg" in meta:
            # bfloat16 is held as its bits here: its sign is the top one.
            values = values ^ np.uint16(0x8000) if dtype_name == "bfloat16" else -values
        return ("tensor", dtype_name, values)

    def _rebuild_tensor_v2(self, storage, offset, size, stride, _grad, _hooks, meta=None):
        return self._rebuild(storage, offset, size, stride, STORAGES[storage[0]][1], meta)

    def _rebuild_tensor_v3(self, storage, offset, size, stride, _grad, _hooks, dtype, meta=None):
        return self._rebuild(storage, offset, size, stride, str(dtype), meta)

    def _rebuild_parameter(self, data, _grad, _hooks):
        return data


def _flatten(value, path, out):
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "tensor":
        out[".".join(path) or "tensor"] = (value[1], value[2])
    elif isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, path + [str(k)], out)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _flatten(v, path + [str(i)], out)


def load(path: str) -> dict:
    with zipfile.ZipFile(path) as zf:
        pkl = next(n for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1)
        prefix = pkl.split("/")[0]
        value = _Unpickler(zf.read(pkl), zf, prefix).load()
    out: dict = {}
    _flatten(value, [], out)
    return out


def load_any(path: str) -> dict:
    """`load` of a checkpoint file, or of a sharded checkpoint by its
    transformers index (or its folder): the files' tensors in `weight_map`
    order."""
    import json
    import os

    if os.path.isdir(path):
        path = os.path.join(path, "pytorch_model.bin.index.json")
    if not path.endswith(".index.json"):
        return load(path)
    with open(path) as f:
        weight_map = json.load(f)["weight_map"]
    tensors: dict = {}
    for name in dict.fromkeys(weight_map.values()):
        tensors.update(load(os.path.join(os.path.dirname(path), name)))
    return {n: tensors[n] for n in weight_map}
