"""`ztfs manifest` of an ONNX model against what onnx sees in it.

The manifest as ztfs prints it (docs/onnx.md; maps read leniently, see
as_map): a JSON object with
  "tensors"      name -> {"dims": [...], "data_type": ONNX number,
                 "source": "initializer" | "constant", "graph_depth",
                 "storage": "raw" | "typed" | "external" | "none" (a typed
                 tensor of no elements, no field), "offset" and "length"
                 (raw: in the .onnx; external: in "location")}
  "left_out"     name -> why (a non-empty text)
  "ir_version", "producer_name", "producer_version", "opset_import"
                 ([{"domain", "version"}]), "metadata_props" ({key: value}),
  "external_files" [locations],
  "graph"        {"inputs": [...], "outputs": [...], "nodes": count,
                 "ops": {op type: count}}, nodes of all graphs
A map may also come as a list of entries carrying "name" (or [name, value]
pairs), and inputs/outputs as names or entries with "name": both read.

Per tensor onnx sees: a fixed-width type (oracle.FIXED) is in "tensors"
with onnx's dims, data_type and storage; a string tensor, a sparse
initializer, or any tensor of a type ztfs has no use for is in "left_out"
and not in "tensors"; a packed sub-byte type (oracle.PACKED) is in one of
the two (check.py then checks `data` is refused). Nothing else is in
either, except the outputs of Constant nodes of no `value` (value_ints,
sparse_value, ...), which may be left out.
"""

from __future__ import annotations

import onnx
from onnx import external_data_helper as edh

from . import oracle
from ..results import Results


def as_map(x, key: str = "name") -> dict:
    """A JSON map, or a list of entries with `key`, or of [name, value]."""
    if isinstance(x, dict):
        return x
    out = {}
    for e in x or []:
        if isinstance(e, dict) and key in e:
            out[e[key]] = e
        elif isinstance(e, (list, tuple)) and len(e) == 2:
            out[e[0]] = e[1]
    return out


def names(x) -> list:
    return [e["name"] if isinstance(e, dict) else e for e in (x or [])]


def opsets(x) -> set:
    if isinstance(x, dict):
        return {(k, int(v)) for k, v in x.items()}
    out = set()
    for e in x or []:
        if isinstance(e, dict):
            out.add((e.get("domain", ""), int(e.get("version", 0))))
        elif isinstance(e, (list, tuple)) and len(e) == 2:
            out.add((e[0], int(e[1])))
    return out


def other_constants(graph) -> set:
    """Outputs of Constant nodes that hold no `value` tensor, all graphs."""
    out = set()
    for n in graph.node:
        attrs = {a.name for a in n.attribute}
        if n.op_type == "Constant" and "value" not in attrs:
            out.update(n.output)
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                out |= other_constants(g)
    return out


def check_entry(where: str, what: str, t, e: dict, file_bytes: bytes, res: Results):
    """One served tensor's entry: dims, type, source, depth, and where its
    bytes are (raw: that range of the file holds raw_data; external:
    onnx's location, offset, length)."""
    res.check(e.get("dims") == t.dims and e.get("data_type") == t.data_type, where,
              f"{what}: manifest dims {e.get('dims')} type {e.get('data_type')}, onnx "
              f"{t.dims} {t.data_type}")
    res.check(e.get("source") == t.kind and e.get("graph_depth") == t.depth, where,
              f"{what}: source {e.get('source')!r} depth {e.get('graph_depth')!r}, onnx "
              f"{t.kind!r} {t.depth}")
    # A typed tensor of no elements has no data field at all: "none".
    fieldless = t.storage == "typed" and 0 in t.dims and e.get("storage") == "none"
    res.check(e.get("storage") == t.storage or fieldless, where,
              f"{what}: storage {e.get('storage')!r}, onnx {t.storage!r}")
    if t.storage == "raw" and e.get("storage") == "raw":
        at, n = e.get("offset"), e.get("length")
        res.check(isinstance(at, int) and file_bytes[at: at + n] == t.proto.raw_data
                  and n == len(t.proto.raw_data), where,
                  f"{what}: manifest offset {at} length {n} is not where raw_data is")
    elif t.storage == "external":
        info = edh.ExternalDataInfo(t.proto)
        res.check((e.get("location"), e.get("offset", 0), e.get("length")) ==
                  (info.location, info.offset or 0, info.length), where,
                  f"{what}: external {e.get('location')!r} @ {e.get('offset')} "
                  f"+{e.get('length')}, onnx {info.location!r} @ {info.offset} +{info.length}")


def check_manifest(where: str, model, ots: dict, man: dict, res: Results,
                   file_bytes: bytes) -> tuple[dict, dict]:
    """Compares; returns (tensors, left_out) of the manifest as maps.
    `file_bytes`: the .onnx file, where raw_data ranges are checked."""
    tensors = as_map(man.get("tensors"))
    left = as_map(man.get("left_out"))
    res.check("tensors" in man, where, f"the manifest has no 'tensors' (keys {sorted(man)[:8]})")
    for name, t in ots.items():
        what = f"{name!r} ({oracle.NAME_OF.get(t.data_type, t.data_type)}, {t.kind})"
        if t.kind == "sparse" or t.data_type not in (*oracle.FIXED.values(),
                                                      *oracle.PACKED.values()):
            res.check(name in left and name not in tensors, where,
                      f"{what}: must be left out, not served (in tensors: {name in tensors}, "
                      f"in left_out: {name in left})")
        elif t.data_type in oracle.PACKED.values():
            res.check((name in left) != (name in tensors), where,
                      f"{what}: must be in exactly one of tensors and left_out")
        elif res.check(name in tensors and name not in left, where,
                       f"{what}: not in the manifest's tensors (left out: {left.get(name)!r})"):
            check_entry(where, what, t, tensors[name], file_bytes, res)
        if name in left:
            why = left[name]
            res.check(isinstance(why, str) and why.strip() != "", where,
                      f"{what}: left out with no reason ({why!r})")
            # The pinned onnx defines every type the models use (FLOAT6E2M3
            # and FLOAT6E3M2 came in onnx 1.20): a reason saying otherwise is wrong.
            res.check(not (isinstance(why, str) and "not define" in why
                           and t.data_type in oracle.NAME_OF), where,
                      f"{what}: left out as {why!r}, but onnx {onnx.__version__} defines "
                      f"{oracle.NAME_OF.get(t.data_type)} = {t.data_type}")
    extra = [n for n in tensors if n not in ots]
    res.check(not extra, where, f"tensors onnx does not see: {extra[:5]}")
    spare = other_constants(model.graph)
    extra = [n for n in left if n not in ots and n not in spare]
    res.check(not extra, where, f"left out names onnx does not see: {extra[:5]}")

    locations = {edh.ExternalDataInfo(t.proto).location for t in ots.values()
                 if t.kind != "sparse" and t.storage == "external"}
    res.check(set(man.get("external_files") or []) == locations, where,
              f"external_files {man.get('external_files')!r}, onnx {sorted(locations)}")
    res.check((man.get("ir_version"), man.get("producer_version")) ==
              (model.ir_version, model.producer_version), where,
              f"ir_version {man.get('ir_version')!r} producer_version "
              f"{man.get('producer_version')!r}")
    props = {p.key: p.value for p in model.metadata_props}
    res.check(as_map(man.get("metadata_props"), "key") == props, where,
              f"metadata_props {man.get('metadata_props')!r}, onnx {props}")
    res.check(opsets(man.get("opset_import")) == {(o.domain, o.version)
                                                  for o in model.opset_import}, where,
              f"opset_import {man.get('opset_import')!r}")
    res.check(man.get("producer_name") == model.producer_name, where,
              f"producer_name {man.get('producer_name')!r}, onnx {model.producer_name!r}")
    g = man.get("graph") or {}
    res.check(names(g.get("inputs")) == [i.name for i in model.graph.input], where,
              f"graph inputs {names(g.get('inputs'))[:5]}")
    res.check(names(g.get("outputs")) == [o.name for o in model.graph.output], where,
              f"graph outputs {names(g.get('outputs'))[:5]}")
    want_ops = dict(oracle.ops(model.graph))
    res.check(as_map(g.get("ops")) == want_ops and g.get("nodes") == sum(want_ops.values()),
              where, f"graph ops {g.get('ops')!r} nodes {g.get('nodes')!r}, onnx counts {want_ops}")
    return tensors, left

