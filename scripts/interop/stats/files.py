"""The files of the stats suite, each written by a reference package and
read back by it: {path: {tensor: the reader's array}}.

Every dtype a format holds, in tensors with NaNs, infinities, zeros of
both signs, all-equal values, one element, no element, subnormals, values
that cancel (a mean near zero), integers at their type's ends, and one
tensor of several 4 MiB pieces (read by several threads).
"""

from __future__ import annotations

import json
import os
import struct

import ml_dtypes
import numpy as np

FLOATS = [np.float64, np.float32, np.float16, ml_dtypes.bfloat16]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def float_cases(dt, rng) -> dict:
    """Float tensors of dtype `dt` by case."""
    info = ml_dtypes.finfo(dt)
    specials = np.array([1.5, np.nan, np.inf, -np.inf, 0.0, -0.0, -2.25, np.nan], dtype=dt)
    sub = np.array([info.smallest_subnormal, -info.smallest_subnormal, 0, info.tiny], dtype=dt)
    return {
        "normal": rng.standard_normal((64, 33)).astype(dt),
        "specials": specials,
        "equal": np.full((5, 7), 0.1, dtype=dt),
        "single": np.array([3.0], dtype=dt),
        "empty": np.zeros((0, 4), dtype=dt),
        "subnormal": sub,
        "allnan": np.full(6, np.nan, dtype=dt),
        "cancel": (rng.standard_normal(4001) * 1e3).astype(dt),
        "extremes": np.array([info.max, info.min, info.eps], dtype=dt),
    }


def int_cases(dt, rng) -> dict:
    i = np.iinfo(dt)
    return {
        "random": rng.integers(i.min, i.max, size=(20, 50), dtype=dt, endpoint=True),
        "ends": np.array([i.min, i.max, 0, 1], dtype=dt),
        "equal": np.full(9, i.max, dtype=dt),
    }


def all_cases(rng, floats=FLOATS, ints=INTS) -> dict:
    out = {}
    for dt in floats:
        for case, a in float_cases(dt, rng).items():
            out[f"{np.dtype(dt).name}.{case}"] = a
    for dt in ints:
        for case, a in int_cases(dt, rng).items():
            out[f"{np.dtype(dt).name}.{case}"] = a
    out["bool.mixed"] = rng.integers(0, 2, (7, 9)).astype(bool)
    # Several pieces of 4 MiB, read by several threads.
    out["float32.pieces"] = (rng.standard_normal(3 * (1 << 20) + 77) * 0.02).astype(np.float32)
    return out


def write_safetensors(path: str, rng) -> dict:
    from safetensors.numpy import load_file, save_file

    tensors = all_cases(rng)
    tensors["complex64.mixed"] = (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(
        np.complex64)
    save_file(tensors, path)
    return load_file(path)


def write_safetensors_f8(path: str, rng) -> dict:
    """float8 tensors, which safetensors' numpy API does not write: the
    header by hand (the format's three fields), the bytes ml_dtypes'."""
    types = {"F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
             "F8_E8M0": ml_dtypes.float8_e8m0fnu}
    header, body, out = {}, b"", {}
    for st, dt in types.items():
        bits = rng.integers(0, 256, 300, dtype=np.uint8)
        a = bits.view(dt)
        name = f"{np.dtype(dt).name}.all_bytes"
        header[name] = {"dtype": st, "shape": [300], "data_offsets": [len(body), len(body) + 300]}
        body += bits.tobytes()
        out[name] = a
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + body)
    return out


def write_npz(path: str, rng) -> dict:
    tensors = all_cases(rng, floats=[np.float64, np.float32, np.float16])
    tensors["complex128.mixed"] = rng.standard_normal(40) + 1j * rng.standard_normal(40)
    tensors["complex64.specials"] = np.array([1 + 2j, complex(np.nan, 1), complex(0, np.inf)],
                                             dtype=np.complex64)
    np.savez(path, **tensors)
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def write_zt(path: str, rng) -> dict:
    import ztensor.numpy as zn

    tensors = all_cases(rng, floats=[np.float64, np.float32, np.float16])
    zn.save_file(tensors, path)
    return zn.load_file(path)


def write_onnx(path: str, rng) -> dict:
    """The float8 kinds only ONNX and torch hold (fnuz), as initializers."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = []
    for tp in (TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2FNUZ):
        bits = rng.integers(0, 256, 256, dtype=np.uint8)
        name = f"{TensorProto.DataType.Name(tp).lower()}.all_bytes"
        inits.append(helper.make_tensor(name, tp, [256], bits.tobytes(), raw=True))
    graph = helper.make_graph([], "g", [], [], initializer=inits)
    onnx.save(helper.make_model(graph), path)
    m = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def write_gguf(path: str, rng) -> dict:
    """Quantized tensors by gguf-py's quantizers; the truth is its
    `quants.dequantize` (float32)."""
    import gguf
    from gguf import quants

    w = gguf.GGUFWriter(path, "llama")
    w.add_tensor("plain.f32", rng.standard_normal((4, 8)).astype(np.float32))
    for ty in (gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0,
               gguf.GGMLQuantizationType.Q5_1, gguf.GGMLQuantizationType.TQ2_0):
        v = rng.standard_normal((8, 256)).astype(np.float32)
        w.add_tensor(f"quant.{ty.name.lower()}", quants.quantize(v, ty), raw_dtype=ty)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return gguf_values(path)


def gguf_values(path: str, names=None) -> dict:
    """A GGUF file's tensors as gguf-py reads them, quantized ones
    dequantized, in numpy's order of the dims."""
    import gguf
    from gguf import quants

    r = gguf.GGUFReader(path)
    out = {}
    for t in r.tensors:
        if names is not None and t.name not in names:
            continue
        shape = tuple(int(d) for d in reversed(t.shape))
        if t.tensor_type in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            out[t.name] = np.asarray(t.data).reshape(shape)
        else:
            out[t.name] = quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
    return out


def write_all(outdir: str) -> dict:
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(44)
    files = {}
    for name, write in (("all.safetensors", write_safetensors), ("f8.safetensors", write_safetensors_f8),
                        ("all.npz", write_npz), ("all.zt", write_zt), ("fnuz.onnx", write_onnx),
                        ("quant.gguf", write_gguf)):
        path = os.path.join(outdir, name)
        files[path] = write(path, rng)
    return files
