"""Forward models whose bytes protobuf's serializer never writes, but
every protobuf parser (onnx.load among them) reads: tensors spliced into a
graph by hand (wire.py), so that typed fields are unpacked, or packed in
two runs, or mixed; fields out of order; a singular field twice (the last
wins); and a model whose graph comes in two occurrences of its field,
which protobuf merges into one graph (onnx sees both halves' tensors).
Each is checked here against what onnx reads before the suite uses it.
"""

from __future__ import annotations

import os
import struct

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

from . import oracle
from .wire import field_f32, field_f64, field_len, field_varint

def tensors() -> dict:
    """name -> (the bytes of a TensorProto, the values onnx must read)."""
    def head(name, dtype, dims):
        return b"".join(field_varint(1, d) for d in dims) + field_varint(2, dtype) \
            + field_len(8, name.encode())

    out = {
        "unpacked/float": (head("unpacked/float", T.FLOAT, [3])
                           + b"".join(field_f32(4, v) for v in (1.5, -2.0, 3.25)),
                           np.array([1.5, -2.0, 3.25], np.float32)),
        "unpacked/int64": (head("unpacked/int64", T.INT64, [3])
                           + b"".join(field_varint(7, v) for v in (-1, 2**40, 0)),
                           np.array([-1, 2**40, 0], np.int64)),
        "unpacked/double": (head("unpacked/double", T.DOUBLE, [2])
                            + field_f64(10, 0.1) + field_f64(10, -1e300),
                            np.array([0.1, -1e300], np.float64)),
        "unpacked/int8": (head("unpacked/int8", T.INT8, [3])
                          + b"".join(field_varint(5, v) for v in (-5, 100, -128)),
                          np.array([-5, 100, -128], np.int8)),
        "unpacked/uint32": (head("unpacked/uint32", T.UINT32, [2])
                            + field_varint(11, 7) + field_varint(11, 2**32 - 1),
                            np.array([7, 2**32 - 1], np.uint32)),
        "split/float": (head("split/float", T.FLOAT, [4]) + field_len(4, struct.pack("<2f", 1, 2))
                        + field_len(4, struct.pack("<2f", 3, 4)),
                        np.array([1, 2, 3, 4], np.float32)),
        "mixed/int64": (head("mixed/int64", T.INT64, [3])
                        + field_len(7, bytes([1, 2])) + field_varint(7, 3),
                        np.array([1, 2, 3], np.int64)),
        # raw_data first, name last, dims packed.
        "reordered/w": (field_len(9, np.arange(6, dtype=np.int16).tobytes())
                        + field_len(1, bytes([2, 3])) + field_varint(2, T.INT16)
                        + field_len(8, b"reordered/w"),
                        np.arange(6, dtype=np.int16).reshape(2, 3)),
        # data_type INT64 then FLOAT, raw_data twice: the last of each wins.
        "lastwins/w": (field_varint(1, 2) + field_varint(2, T.INT64) + field_len(8, b"lastwins/w")
                       + field_len(9, b"\xff" * 16) + field_varint(2, T.FLOAT)
                       + field_len(9, np.array([5, 6], np.float32).tobytes()),
                       np.array([5, 6], np.float32)),
    }
    return out


def base_model():
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                          [vi("x", T.FLOAT, [1])], [vi("y", T.FLOAT, [1])],
                          [numpy_helper.from_array(np.array([1, 2], np.float32), "base/w")])
    m = helper.make_model(g, producer_name="ztfs-interop-handmade")
    onnx.checker.check_model(m)
    return m


def write_handmade(outdir: str) -> list:
    m = base_model()
    graph = m.graph.SerializeToString()
    rest = onnx.ModelProto()
    rest.CopyFrom(m)
    rest.ClearField("graph")
    made = tensors()
    spliced = graph + b"".join(field_len(5, b) for b, _ in made.values())
    out = []
    d = os.path.join(outdir, "handmade")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "model.onnx")
    with open(p, "wb") as f:
        f.write(rest.SerializeToString() + field_len(7, spliced))
    want = {"base/w": np.array([1, 2], np.float32), **{n: v for n, (_, v) in made.items()}}
    out.append(("handmade", p, want))

    d = os.path.join(outdir, "merged")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "model.onnx")
    second = numpy_helper.from_array(np.array([7, 8, 9], np.int32), "merged/second")
    with open(p, "wb") as f:
        f.write(m.SerializeToString() + field_len(7, field_len(5, second.SerializeToString())))
    out.append(("merged", p, {"base/w": np.array([1, 2], np.float32),
                              "merged/second": np.array([7, 8, 9], np.int32)}))

    for label, p, want in out:  # the generator against onnx
        got = oracle.tensors(oracle.load(p))
        if set(got) != set(want):
            raise ValueError(f"{label}: onnx sees {sorted(got)}")
        for n, v in want.items():
            a = numpy_helper.to_array(got[n].proto)
            if a.dtype != v.dtype or a.shape != v.shape or a.tobytes() != v.tobytes():
                raise ValueError(f"{label}: onnx reads {n!r} as {a!r}")
    return [(label, p) for label, p, _ in out]
