"""What the onnx package says a model holds: the truth the suite compares
ztfs with. Every tensor of every graph (initializers of the main graph and
of each subgraph, each `Constant` node's `value` named by its output),
found with onnx's own protobuf classes; each one's values by
`onnx.numpy_helper.to_array(tensor, base_dir)`; the ops of all graphs.

The bytes ztfs must serve for a tensor (`expected`): to_array's array as
little-endian bytes for every fixed-width type, except the sub-byte types,
which ONNX stores packed (FLOAT4E2M1, INT4 and UINT4 two a byte, low nibble
first; INT2 and UINT2 four a byte; FLOAT6 a 6-bit stream): for those, the
packed bytes onnx stores (raw_data or the external range as they are; a
typed field packed the way onnx's helper packs raw_data), cross-checked
against to_array's unpacked values.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import sys
from typing import Optional

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto as T, external_data_helper, numpy_helper

assert sys.byteorder == "little", "the suite compares little-endian bytes"


def _types(*names: str) -> dict:
    """ONNX type name -> number, for the names the pinned onnx defines."""
    return {n: int(getattr(T, n)) for n in names if hasattr(T, n)}


# Every ONNX element type of fixed width that is at least a byte, or
# FLOAT4E2M1 (which zTensor registers, packed): ztfs serves each.
FIXED = _types("FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "BOOL",
               "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128",
               "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
               "FLOAT4E2M1", "FLOAT8E8M0")
# Sub-byte types zTensor has no type for: left out, or served as `data.raw`
# only (never as `data`).
PACKED = _types("UINT4", "INT4", "UINT2", "INT2", "FLOAT6E2M3", "FLOAT6E3M2")
BITS = {"UINT4": 4, "INT4": 4, "FLOAT4E2M1": 4, "UINT2": 2, "INT2": 2,
        "FLOAT6E2M3": 6, "FLOAT6E3M2": 6}
NAME_OF = {v: k for k, v in {**FIXED, **PACKED}.items()}


@dataclasses.dataclass
class OTensor:
    """One tensor as onnx sees it."""
    name: str
    proto: object  # onnx.TensorProto (SparseTensorProto for "sparse")
    kind: str  # "initializer", "constant" or "sparse"
    depth: int  # 0: the main graph

    @property
    def dims(self) -> list:
        p = self.proto.values if self.kind == "sparse" else self.proto
        return [int(d) for d in p.dims]

    @property
    def data_type(self) -> int:
        p = self.proto.values if self.kind == "sparse" else self.proto
        return int(p.data_type)

    @property
    def storage(self) -> str:
        p = self.proto
        if self.kind == "sparse":
            return "sparse"
        if external_data_helper.uses_external_data(p):
            return "external"
        return "raw" if p.HasField("raw_data") else "typed"


def walk(graph, depth: int = 0):
    """Every tensor of `graph` and its subgraphs, in file order per graph:
    initializers, sparse initializers (by their values' name), then the
    nodes' Constant values and their attributes' graphs."""
    for t in graph.initializer:
        yield OTensor(t.name, t, "initializer", depth)
    for s in graph.sparse_initializer:
        yield OTensor(s.values.name, s, "sparse", depth)
    for n in graph.node:
        for a in n.attribute:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and a.name == "value":
                yield OTensor(n.output[0], a.t, "constant", depth)
            if a.type == AttributeProto.GRAPH:
                yield from walk(a.g, depth + 1)
            elif a.type == AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from walk(g, depth + 1)


def ops(graph, out: Optional[collections.Counter] = None) -> collections.Counter:
    """Nodes of `graph` and all its subgraphs, counted by op type."""
    out = collections.Counter() if out is None else out
    for n in graph.node:
        out[n.op_type] += 1
        for a in n.attribute:
            if a.type == AttributeProto.GRAPH:
                ops(a.g, out)
            elif a.type == AttributeProto.GRAPHS:
                for g in a.graphs:
                    ops(g, out)
    return out


def load(path: str):
    """The model without its external data (which stays where it is: the
    suite reads each tensor's range itself, through to_array)."""
    return onnx.load(path, load_external_data=False)


def tensors(model) -> dict:
    """name -> OTensor; a name onnx sees twice raises (a generator bug)."""
    out = {}
    for t in walk(model.graph):
        if t.name in out:
            raise ValueError(f"{t.name!r} twice in the model")
        out[t.name] = t
    # The walk against onnx's own: its external-data helper's list of the
    # initializers of all graphs.
    inits = sum(1 for _ in external_data_helper._get_initializer_tensors(model))
    if inits != sum(t.kind == "initializer" for t in out.values()):
        raise ValueError(f"onnx finds {inits} initializers, the walk another number")
    return out


def stored_bytes(t: OTensor, base_dir: str) -> bytes:
    """The bytes onnx stores for a raw or external tensor."""
    p = t.proto
    if external_data_helper.uses_external_data(p):
        return external_data_helper._read_external_data_bytes(p, base_dir)
    return p.raw_data


def packed_bytes(t: OTensor, base_dir: str) -> bytes:
    """A sub-byte tensor's packed bytes as onnx's raw form holds them."""
    name = NAME_OF[t.data_type]
    values = numpy_helper.to_array(t.proto, base_dir)
    bits = values.view(np.uint8).reshape(-1)
    if BITS[name] == 4:
        repacked = numpy_helper._pack_4bitx2(bits)
    elif BITS[name] == 2:
        repacked = numpy_helper._pack_2bitx4(bits)
    else:
        repacked = numpy_helper._pack_6bit(bits)
    repacked = np.asarray(repacked, np.uint8).tobytes()
    if t.storage == "typed":
        return repacked
    stored = stored_bytes(t, base_dir)
    if stored != repacked:
        raise ValueError(f"{t.name!r}: onnx's packing of to_array is not its stored bytes")
    return stored


def expected(t: OTensor, base_dir: str) -> tuple[np.ndarray, bytes]:
    """(to_array's array, the bytes ztfs must serve as `data`, or for a
    PACKED type as `data.raw`)."""
    a = numpy_helper.to_array(t.proto, base_dir)
    if t.data_type in PACKED.values() or t.data_type == FIXED.get("FLOAT4E2M1"):
        return a, packed_bytes(t, base_dir)
    return a, numpy_helper.tobytes_little_endian(np.ascontiguousarray(a))


def verdict(path: str) -> str:
    """What onnx makes of a (hostile) file: load, check_model(full_check)
    and to_array of every tensor; a short text for the report."""
    try:
        m = onnx.load(path, load_external_data=False)
    except Exception as e:  # noqa: BLE001 - the verdict is the text
        return f"onnx.load raises {type(e).__name__}: {str(e)[:120]}"
    said = []
    try:
        onnx.checker.check_model(path, full_check=True)
        said.append("check_model passes")
    except Exception as e:  # noqa: BLE001
        said.append(f"check_model raises {type(e).__name__}: {str(e).splitlines()[0][:120]}")
    base = os.path.dirname(os.path.abspath(path))
    bad = []
    try:
        all_t = list(walk(m.graph))
    except Exception as e:  # noqa: BLE001
        return "; ".join(said + [f"walking raises {type(e).__name__}"])
    for t in all_t:
        if t.kind == "sparse":
            continue
        try:
            a = numpy_helper.to_array(t.proto, base)
            if any(d < 0 for d in t.dims):  # numpy's reshape takes -1 as "infer"
                said.append(f"to_array reads {t.name!r} of dims {t.dims} as shape {a.shape}")
        except Exception as e:  # noqa: BLE001
            bad.append(f"{t.name!r}: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
    n = sum(t.kind != "sparse" for t in all_t)
    said.append(f"to_array raises for {'; '.join(bad)}" if bad
                else f"to_array reads all {n} tensors")
    return "; ".join(said)
