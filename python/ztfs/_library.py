"""Models read in-process: every format and source ztfs reads, as numpy
arrays, with no mount (no /dev/fuse, no daemon, no root).

    with ztfs.open("model.gguf") as m:
        w = m.get_tensor("token_embd.weight")
        rows = m.get_slice("output.weight")[0:128]

The Rust core does the reading (`ztfs._native`, the same code a mount
serves files with); this module makes arrays of its bytes.
"""

from __future__ import annotations

import atexit
import json
import mmap
import os
import threading
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import numpy as np

from . import _native
from ._run import Error, Refused

PathArg = Union[str, "os.PathLike[str]"]
#: What `Slice[...]` takes: an index, a slice, an ellipsis, or a tuple of them.
Index = Union[int, slice, "ellipsis", Tuple[Union[int, slice, "ellipsis"], ...]]

# safetensors' names of the dtypes, for `Slice.get_dtype` (drop-in).
_SAFETENSORS_NAMES = {
    "float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8",
    "uint64": "U64", "uint32": "U32", "uint16": "U16", "uint8": "U8", "bool": "BOOL",
    "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2", "float8_e8m0fnu": "F8_E8M0",
    "complex64": "C64",
}


def _dtype(name: str) -> np.dtype[Any]:
    """A dtype by its numpy descr (``<f4``) or its ml_dtypes name
    (``bfloat16``, ``float8_e4m3fn``)."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        dtype: np.dtype[Any] = np.dtype(getattr(ml_dtypes, name))
        return dtype


class Slice:
    """A tensor not read yet: `shape`, `dtype`, and `[...]` to read part of
    it. An index on the first dimension reads only those rows (by range,
    from a server too); the other dimensions are indexed in memory."""

    def __init__(self, model: "Model", name: str) -> None:
        self._model = model
        self.name = name
        self.dtype, shape = model._info(name)
        self.shape: Tuple[int, ...] = shape

    def get_shape(self) -> List[int]:
        """Its shape, as `safe_open`'s slices give it."""
        return list(self.shape)

    def get_dtype(self) -> str:
        """Its dtype by safetensors' name (``F32``, ``BF16``), as
        `safe_open`'s slices give it; numpy's name for one safetensors has
        no name for."""
        return _SAFETENSORS_NAMES.get(self.dtype.name, self.dtype.name)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __getitem__(self, key: Index) -> np.ndarray[Any, Any]:
        keys = key if isinstance(key, tuple) else (key,)
        if not self.shape or not keys or keys[0] is Ellipsis:
            return self._model.get_tensor(self.name)[key]
        first, rest = keys[0], keys[1:]
        rows = self.shape[0]
        if isinstance(first, slice):
            picked = range(*first.indices(rows))
            if not picked:
                return self._model._rows(self.name, self.dtype, self.shape, 0, 0)[(slice(0, 0), *rest)]
            lo, hi = min(picked[0], picked[-1]), max(picked[0], picked[-1]) + 1
            block = self._model._rows(self.name, self.dtype, self.shape, lo, hi)
            # From the first row picked, by the step, either way.
            return block[(slice(picked[0] - lo, None, first.step), *rest)]
        if isinstance(first, (int, np.integer)):
            i = int(first)
            if not -rows <= i < rows:
                raise IndexError(f"index {i} is out of bounds for axis 0 with size {rows}")
            i %= rows
            block = self._model._rows(self.name, self.dtype, self.shape, i, i + 1)
            return block[(0, *rest)]
        raise TypeError(f"a tensor is indexed by ints, slices and ..., not {type(first).__name__}")

    def __repr__(self) -> str:
        return f"<ztfs.Slice {self.name!r} {self.dtype} {self.shape}>"


class Model:
    """A model opened in-process (`ztfs.open`): its tensors as numpy arrays.
    A context manager; `close()` lets the model go (arrays already made
    stay valid: a zero-copy array keeps its file's map)."""

    def __init__(self, source: PathArg, *, cache_mib: int = 64, cache_dir: Optional[PathArg] = None,
                 cache_size: Union[int, str] = "10G", no_files: bool = False,
                 trust_unversioned: bool = False, dequantize: Optional[str] = "f32",
                 shard: Optional[Mapping[str, PathArg]] = None, trust_shards: bool = False,
                 verify: bool = False, shared_cache: Optional[str] = None) -> None:
        if shared_cache is not None:
            _native.use_shared_cache(shared_cache)
            _flush_at_exit()
        if cache_dir is not None:
            size = cache_size if isinstance(cache_size, int) else _native.parse_size(cache_size)
            _native.use_disk_cache(os.fspath(cache_dir), size)
        if trust_unversioned:
            _native.trust_unversioned(True)
        shards = [(k, os.fspath(v)) for k, v in (shard or {}).items()]
        self.source = os.fspath(source)
        self._native: Optional[_native.Model] = _native.Model(
            self.source, cache_mib=cache_mib, files=not no_files, dequantize=dequantize,
            shards=shards, trust_shards=trust_shards, verify=verify)
        self._tensors: Dict[str, Tuple[np.dtype[Any], Tuple[int, ...]]] = {
            name: (_dtype(dtype), tuple(shape)) for name, dtype, shape in self._native.tensors()
        }
        self._left_out: Dict[str, str] = dict(self._native.left_out())
        self.format: str = self._native.format_name()
        # A file's map, shared by the zero-copy arrays over it.
        self._maps: Dict[Tuple[int, int], mmap.mmap] = {}
        self._lock = threading.Lock()

    def _m(self) -> "_native.Model":
        m = self._native
        if m is None:
            raise Error("the model is closed", kind="usage")
        return m

    def _info(self, name: str) -> Tuple[np.dtype[Any], Tuple[int, ...]]:
        info = self._tensors.get(name)
        if info is not None:
            return info
        if name in self._left_out:
            raise Refused(f"{name!r} is not a tensor here: {self._left_out[name]}", kind="refused",
                          exit_code=1)
        raise KeyError(name)

    def keys(self) -> List[str]:
        """The names of its tensors, in the file's order."""
        return list(self._tensors)

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def left_out(self) -> Dict[str, str]:
        """The objects that are not tensors here, each with why (a packed
        float4 tensor, a layout with no dense form, a quantized tensor with
        ``dequantize=None``)."""
        return dict(self._left_out)

    def get_tensor(self, name: str) -> np.ndarray[Any, Any]:
        """Tensor `name`'s values in its dtype and shape. Stored as it is in
        a local file: a read-only array over the file's map (nothing read
        until touched). Otherwise decoded, computed or fetched into a new
        array."""
        dtype, shape = self._info(name)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count == 0:
            return np.zeros(shape, dtype)
        mapped = self._mapped(name, dtype, count)
        if mapped is not None:
            return mapped.reshape(shape)
        buf = self._m().read(name, 0, count * dtype.itemsize)
        return np.frombuffer(buf, dtype=dtype).reshape(shape)

    def __getitem__(self, name: str) -> np.ndarray[Any, Any]:
        return self.get_tensor(name)

    def get_slice(self, name: str) -> Slice:
        """Tensor `name` without reading it: `[...]` reads part of it."""
        return Slice(self, name)

    def _mapped(self, name: str, dtype: np.dtype[Any], count: int) -> Optional[np.ndarray[Any, Any]]:
        found = self._m().mapped(name)
        if found is None:
            return None
        fd, offset = found
        try:
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino)
            with self._lock:
                mm = self._maps.get(key)
                if mm is None:
                    mm = mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
                    self._maps[key] = mm
        finally:
            os.close(fd)
        return np.frombuffer(mm, dtype=dtype, count=count, offset=offset)

    def _rows(self, name: str, dtype: np.dtype[Any], shape: Tuple[int, ...], lo: int,
              hi: int) -> np.ndarray[Any, Any]:
        """Rows `[lo, hi)` of tensor `name`, read alone."""
        row = int(np.prod(shape[1:], dtype=np.int64))
        count = (hi - lo) * row
        if count == 0:
            return np.zeros((hi - lo, *shape[1:]), dtype)
        total = int(np.prod(shape, dtype=np.int64))
        whole = self._mapped(name, dtype, total)
        if whole is not None:
            return whole[lo * row:hi * row].reshape((hi - lo, *shape[1:]))
        buf = self._m().read(name, lo * row * dtype.itemsize, count * dtype.itemsize, exact=True)
        return np.frombuffer(buf, dtype=dtype).reshape((hi - lo, *shape[1:]))

    def metadata(self) -> Optional[Dict[str, str]]:
        """The format's metadata as text, as `safe_open` gives it: a
        safetensors file's ``__metadata__``, a zTensor file's attributes, a
        GGUF file's key-values (arrays, such as the token list, are in
        `manifest()`); None when it has none."""
        return self._m().metadata()

    def manifest(self) -> Any:
        """What the mount's ``manifest.json`` holds, as Python values."""
        return json.loads(self._m().manifest_json())

    def files(self) -> List[str]:
        """The other files of the model's folder or repository
        (``config.json``, the tokenizer's...), by their paths there."""
        return self._m().files()

    def read_file(self, path: str) -> bytes:
        """File `path` of the model's folder ([`files`]), whole."""
        if path not in self._m().files():
            raise FileNotFoundError(f"{path!r} is not a file of the model's folder")
        return self._m().read_file(path)

    def close(self) -> None:
        """Lets the model go; arrays already made stay valid."""
        self._native = None
        with self._lock:
            self._maps.clear()

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._native is None else f"{len(self._tensors)} tensors"
        return f"<ztfs.Model {self.source!r} ({self.format}, {state})>"


_flushing = False


def _flush_at_exit() -> None:
    """At the interpreter's exit, waits (at most 30 s) for the blocks
    queued for the shared cache tier to be written, as the command does."""
    global _flushing
    if not _flushing:
        _flushing = True
        atexit.register(_native.flush_shared_cache, 30.0)


def open(source: PathArg, **options: Any) -> Model:
    """Opens a model in-process: a file of any format ztfs reads (.zt,
    .hrry, .safetensors, .gguf, a PyTorch checkpoint, .npz), a folder, an
    index, a split GGUF's first file, or a URL (https://, s3://, hf://).
    Options: `cache_mib`, `cache_dir`, `cache_size`, `no_files`,
    `trust_unversioned`, `dequantize` ("f32", "f16", "bf16" or None),
    `shard`, `trust_shards`, `verify`, `shared_cache` ("s3://BUCKET/PREFIX",
    docs/fleet.md).

    Raises `Rejected` (with its `rule`) for a file its format refuses,
    `Refused` for one ztfs does not read, `FileNotFoundError` for a file
    that is not there, `Error` otherwise."""
    return Model(source, **options)


class safe_open:
    """`safetensors.safe_open` over every format ztfs reads: `keys()`,
    `get_tensor()`, `get_slice()`, `metadata()`. `framework="np"` gives
    numpy arrays; ``"pt"`` gives torch tensors (torch is not a dependency;
    arrays over a file's map are copied, as a torch tensor is writable)."""

    def __init__(self, filename: PathArg, framework: str = "np", device: str = "cpu",
                 **options: Any) -> None:
        if framework not in ("np", "numpy", "pt", "torch"):
            raise ValueError(f"framework={framework!r}: ztfs.safe_open gives np or pt")
        if device != "cpu":
            raise ValueError(f"device={device!r}: ztfs.safe_open reads to the cpu")
        self._torch = framework in ("pt", "torch")
        self._model = Model(filename, **options)

    def keys(self) -> List[str]:
        return self._model.keys()

    def offset_keys(self) -> List[str]:
        return self._model.keys()

    def metadata(self) -> Optional[Dict[str, str]]:
        return self._model.metadata()

    def get_tensor(self, name: str) -> Any:
        return self._out(self._model.get_tensor(name))

    def get_slice(self, name: str) -> Any:
        s = self._model.get_slice(name)
        return _TorchSlice(s) if self._torch else s

    def _out(self, a: np.ndarray[Any, Any]) -> Any:
        return _to_torch(a) if self._torch else a

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._model.close()


class _TorchSlice:
    def __init__(self, s: Slice) -> None:
        self._s = s

    def get_shape(self) -> List[int]:
        return self._s.get_shape()

    def get_dtype(self) -> str:
        return self._s.get_dtype()

    def __getitem__(self, key: Index) -> Any:
        return _to_torch(self._s[key])


# ml_dtypes' types by torch's, viewed through an integer of their width.
_TORCH_VIEWS = {
    "bfloat16": ("uint16", "bfloat16"), "float8_e4m3fn": ("uint8", "float8_e4m3fn"),
    "float8_e5m2": ("uint8", "float8_e5m2"), "float8_e4m3fnuz": ("uint8", "float8_e4m3fnuz"),
    "float8_e5m2fnuz": ("uint8", "float8_e5m2fnuz"), "float8_e8m0fnu": ("uint8", "float8_e8m0fnu"),
}


def _to_torch(a: np.ndarray[Any, Any]) -> Any:
    import torch

    if not a.flags.writeable:
        a = a.copy()
    view = _TORCH_VIEWS.get(a.dtype.name)
    if view is None:
        return torch.from_numpy(a)
    return torch.from_numpy(a.view(view[0])).view(getattr(torch, view[1]))
