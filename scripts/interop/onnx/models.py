"""The models of the forward suite, written by the onnx package itself
(helper.make_tensor, numpy_helper.from_array, onnx.save_model), each in a
folder of its own (external data files sit beside their model).

  types      every fixed-width element type (oracle.FIXED), per type an
             initializer `init/T` (2x3), a scalar `scalar.T`, an empty
             `empty:T` (0x3) and a Constant `/const/T/Constant_output_0`,
             in every storage form: raw_data, the typed fields
             (make_tensor(raw=False)), external data in one file (all
             tensors, Constants too: convert_attribute), one file per
             tensor, one file above a size threshold (the rest inline),
             one file at offsets aligned to 4096 (see save_aligned), and
             one file reached through a symlink inside the folder.
  subgraphs  initializers and Constants of If branches and a Loop body,
             an If nested in the Loop body (depth 2); raw and external.
  names      names as exporters write them and names the tree escapes.
  wide       typed fields holding values wider than the type (onnx's
             to_array cuts them as numpy's astype does).
  leftout    what ztfs must not serve as data: strings, INT4/UINT4/INT2/
             UINT2 and FLOAT6 (packed), sparse initializers.
  handmade, merged   protobuf written by hand (handmade.py).
"""

from __future__ import annotations

import math
import os

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as T, external_data_helper as edh, helper, numpy_helper

from . import oracle
from .handmade import write_handmade


def sample(tname: str, shape: list, rng) -> np.ndarray:
    """Values of ONNX type `tname` (its numpy dtype as onnx maps it) in
    range for it, so that make_tensor's saturating casts change nothing;
    FLOAT, DOUBLE and FLOAT16 start with NaN, -inf and -0.0."""
    code = {**oracle.FIXED, **oracle.PACKED}[tname]
    dt = helper.tensor_dtype_to_np_dtype(code)
    n = math.prod(shape)
    if tname == "BOOL":
        a = rng.random(n) < 0.5
    elif tname.startswith(("INT", "UINT")):
        info = ml_dtypes.iinfo(dt) if tname in oracle.PACKED else np.iinfo(dt)
        if int(info.max) >= 2**63:
            a = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
        else:
            a = rng.integers(int(info.min), int(info.max), n, dtype=np.int64, endpoint=True)
        a = a.astype(dt)
    elif tname.startswith("COMPLEX"):
        a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    elif tname == "FLOAT8E8M0":
        a = (2.0 ** rng.integers(-6, 7, n)).astype(np.float32).astype(dt)
    else:
        a = (rng.standard_normal(n) * 2).astype(np.float32).astype(dt)
        if tname in ("FLOAT", "DOUBLE", "FLOAT16") and n >= 3:
            a[:3] = [np.nan, -np.inf, -0.0]
    return a.reshape(shape)


def model(inits: list, nodes: list = (), name: str = "g", inputs=None, outputs=None):
    """A checked model: the tensors as initializers, the nodes, and an
    Identity x -> y so that a graph of only Constants still has an output."""
    inputs = inputs or [helper.make_tensor_value_info("x", T.FLOAT, [1])]
    outputs = outputs or [helper.make_tensor_value_info("y", T.FLOAT, [1])]
    nodes = [*nodes, helper.make_node("Identity", [inputs[0].name], [outputs[0].name])] \
        if outputs[0].name == "y" else list(nodes)
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, producer_name="ztfs-interop", producer_version="1")
    helper.set_model_props(m, {"source": "scripts/interop/onnx", "é": "ü"})
    onnx.checker.check_model(m)
    return m


def const(out: str, tensor) -> onnx.NodeProto:
    """A Constant node; its tensor keeps its own name (often empty, as
    exporters leave it): ztfs names it by the node's output."""
    return helper.make_node("Constant", [], [out], value=tensor)


def types_model(raw: bool, values: dict):
    inits, nodes = [], []
    for tname, code in oracle.FIXED.items():
        v = values[tname]
        inits.append(helper.make_tensor(f"init/{tname}", code, v["init"].shape, v["init"], raw))
        # Flat: make_tensor(raw=False) of a 0-d FLOAT8E8M0 array fails in
        # onnx 1.23.2 (to_float8e8m0 assigns into a numpy scalar).
        inits.append(helper.make_tensor(f"scalar.{tname}", code, [], v["scalar"].reshape(-1), raw))
        inits.append(helper.make_tensor(f"empty:{tname}", code, [0, 3], v["empty"], raw))
        t = helper.make_tensor("", code, v["const"].shape, v["const"], raw)
        nodes.append(const(f"/const/{tname}/Constant_output_0", t))
    return model(inits, nodes, "types")


def copy(m):
    out = onnx.ModelProto()
    out.CopyFrom(m)
    return out


def save_aligned(m, path: str, location: str, align: int = 4096):
    """External data in one file, each tensor at a multiple of `align`.
    onnx 1.23.2's save_model has no alignment option (no align_offset or
    align_threshold), but save_external_data honours an offset set beforehand,
    padding the gap with zeros (at most 64 KiB): so onnx writes the file."""
    edh.convert_model_to_external_data(m, True, location, 0, True)
    end = 0
    for t in edh._get_all_tensors(m):  # the order write_external_data_tensors uses
        if edh.uses_external_data(t) and t.HasField("raw_data"):
            at = -(-end // align) * align
            edh.set_external_data(t, location, offset=at)
            end = at + len(t.raw_data)
    onnx.save_model(m, path)


def folder(outdir: str, label: str) -> str:
    d = os.path.join(outdir, label)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, "model.onnx")


def write_types(outdir: str, rng) -> list:
    """(label, path) of the types model in every storage form."""
    values = {}
    for tname in oracle.FIXED:
        shape = [2, 4] if tname == "FLOAT4E2M1" else [2, 3]
        values[tname] = {"init": sample(tname, shape, rng), "scalar": sample(tname, [], rng),
                         "empty": sample(tname, [0, 3], rng), "const": sample(tname, [3], rng)}
    raw, typed = types_model(True, values), types_model(False, values)
    out = []
    for label, m, kw in (
        ("raw", raw, None),
        ("typed", typed, None),
        ("ext_one", raw, dict(all_tensors_to_one_file=True, location="weights.bin",
                              size_threshold=0, convert_attribute=True)),
        ("ext_many", raw, dict(all_tensors_to_one_file=False, size_threshold=0,
                               convert_attribute=True)),
        ("ext_threshold", raw, dict(all_tensors_to_one_file=True, location="model.onnx.data",
                                    size_threshold=50, convert_attribute=False)),
    ):
        p = folder(outdir, f"types_{label}")
        if kw:
            onnx.save_model(copy(m), p, save_as_external_data=True, **kw)
        else:
            onnx.save_model(m, p)
        out.append((f"types_{label}", p))
    p = folder(outdir, "types_ext_aligned")
    save_aligned(copy(raw), p, "aligned.bin")
    out.append(("types_ext_aligned", p))
    # The generator against onnx: every form reads back as the values
    # written (float8 and e8m0 went through make_tensor's casts unchanged).
    for label, p in out:
        got = oracle.tensors(oracle.load(p))
        base = os.path.dirname(p)
        for tname, v in values.items():
            a = numpy_helper.to_array(got[f"init/{tname}"].proto, base)
            if a.tobytes() != v["init"].tobytes() and tname != "FLOAT4E2M1":
                raise ValueError(f"{label}: init/{tname} reads back otherwise")
    return out + [symlinked(outdir, out[2][1])]


def symlinked(outdir: str, model_path: str) -> tuple:
    """The one-file external model again, its weights.bin a symlink to
    blobs/<name> inside the folder, as a Hugging Face cache snapshot links
    its files. ztfs follows a symlink that stays in the folder
    (docs/onnx.md); onnx refuses every symlink, so its values are read from
    the original folder: (label, path, the folder onnx reads)."""
    d = os.path.dirname(folder(outdir, "types_ext_symlink"))
    os.makedirs(os.path.join(d, "blobs"), exist_ok=True)
    src = os.path.dirname(model_path)
    with open(model_path, "rb") as f, open(os.path.join(d, "model.onnx"), "wb") as g:
        g.write(f.read())
    with open(os.path.join(src, "weights.bin"), "rb") as f, \
            open(os.path.join(d, "blobs", "5f3a0c"), "wb") as g:
        g.write(f.read())
    os.symlink("blobs/5f3a0c", os.path.join(d, "weights.bin"))
    return ("types_ext_symlink", os.path.join(d, "model.onnx"), src)


def subgraph_model(rng):
    """If (then: an initializer and a Constant; else: likewise) and Loop
    (body: an initializer, a Constant, a nested If with its own)."""
    f32 = lambda n: rng.standard_normal(n).astype(np.float32)  # noqa: E731
    init = numpy_helper.from_array
    vi = helper.make_tensor_value_info

    def branch(tag, op, a, b):
        return helper.make_graph(
            [const(f"{tag}/Constant_output_0", init(f32(3), "")),
             helper.make_node(op, [a, f"{tag}/Constant_output_0"], [f"{tag}/out"]),
             helper.make_node("Add", [f"{tag}/out", b], [f"{tag}/y"])],
            tag, [], [vi(f"{tag}/y", T.FLOAT, [3])], [init(f32(3), f"{tag}.weight")])

    then_g = branch("/if/then", "Add", "x", "x")
    else_g = branch("/if/else", "Mul", "x", "x")
    in_then = branch("/loop/body/if/then", "Sub", "/loop/body/t", "v_in")
    in_else = branch("/loop/body/if/else", "Div", "/loop/body/t", "v_in")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         const("/loop/body/Constant_output_0", init(np.array([2.0, 3.0, 4.0], np.float32), "")),
         helper.make_node("Add", ["v_in", "onnx::Add_77"], ["/loop/body/s"]),
         helper.make_node("Mul", ["/loop/body/s", "/loop/body/Constant_output_0"],
                          ["/loop/body/t"]),
         helper.make_node("If", ["cond_in"], ["v_out"], then_branch=in_then,
                          else_branch=in_else)],
        "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("v_in", T.FLOAT, [3])],
        [vi("cond_out", T.BOOL, []), vi("v_out", T.FLOAT, [3])], [init(f32(3), "onnx::Add_77")])
    nodes = [helper.make_node("If", ["cond"], ["if_out"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Loop", ["onnx::Loop_M", "cond", "x"], ["loop_out"], body=body)]
    return model([init(np.array(3, np.int64), "onnx::Loop_M")], nodes, "subgraphs",
                 [vi("cond", T.BOOL, []), vi("x", T.FLOAT, [3])],
                 [vi("if_out", T.FLOAT, [3]), vi("loop_out", T.FLOAT, [3])])


def write_subgraphs(outdir: str, rng) -> list:
    m = subgraph_model(rng)
    raw, ext = folder(outdir, "subgraphs"), folder(outdir, "subgraphs_ext")
    onnx.save_model(m, raw)
    onnx.save_model(copy(m), ext, save_as_external_data=True, location="subgraphs.data",
                    size_threshold=0, convert_attribute=True)
    return [("subgraphs", raw), ("subgraphs_ext", ext)]


# Names exporters write (torch.onnx: parameters by module path, folded
# constants as `onnx::Op_N`, Constant outputs by node path), and names the
# mount's tree must escape (docs/tree.md, Names).
EXPORTER_NAMES = ["model.embed_tokens.weight", "onnx::MatMul_123",
                  "encoder.layer.0.attention.self.query.bias", "/encoder/layer.0/Add_output_0"]
ODD_NAMES = [".hidden", "..", "a%2Fb", "100%", "é/ü", "manifest.json", "digest",
             "x.safetensors", "-starts-with-dash", "with space", "n" * 300]
CONST_NAMES = ["/encoder/layer.0/Constant_output_0", "/encoder/layer.0/attention/Constant_1_output_0",
               "onnx::Reshape_456"]


def write_names(outdir: str, rng) -> list:
    inits = [numpy_helper.from_array(rng.standard_normal((2, 2)).astype(np.float32), n)
             for n in EXPORTER_NAMES + ODD_NAMES]
    nodes = [const(n, numpy_helper.from_array(np.array([i, -1], np.int64), ""))
             for i, n in enumerate(CONST_NAMES)]
    p = folder(outdir, "names")
    onnx.save_model(model(inits, nodes, "names"), p)
    return [("names", p)]


def write_wide(outdir: str) -> list:
    """Typed fields holding values outside the type: int32_data for the
    narrow types and the 16-bit floats, uint64_data for UINT32. ONNX says
    nothing of them; onnx's to_array cuts them to the type's width."""
    def typed(name, code, field, vals):
        t = T(name=name, data_type=code, dims=[len(vals)])
        getattr(t, field).extend(vals)
        return t

    inits = [typed("wide/INT8", T.INT8, "int32_data", [300, -200, 127, -129]),
             typed("wide/UINT8", T.UINT8, "int32_data", [261, -1]),
             typed("wide/INT16", T.INT16, "int32_data", [70000, -40000]),
             typed("wide/UINT16", T.UINT16, "int32_data", [-1, 65543]),
             typed("wide/FLOAT16", T.FLOAT16, "int32_data", [0x3C00, 0x13C00, -1]),
             typed("wide/BFLOAT16", T.BFLOAT16, "int32_data", [0x13F80, 0x7FC0]),
             typed("wide/FLOAT8E4M3FN", T.FLOAT8E4M3FN, "int32_data", [0x1FE, 0x38]),
             typed("wide/UINT32", T.UINT32, "uint64_data", [2**32 + 5, 2**64 - 1])]
    p = folder(outdir, "wide")
    onnx.save_model(model(inits, [], "wide"), p)
    return [("wide", p)]


def write_leftout(outdir: str, rng) -> list:
    """Tensors with no fixed-width bytes zTensor has a type for: strings
    (initializer and Constant), the packed sub-byte types (raw and typed,
    odd counts so that padding bits occur), a sparse initializer and a
    Constant's sparse_value; and one plain tensor, which must be served."""
    inits = [helper.make_tensor("vocab", T.STRING, [3], [b"a", "é".encode(), b""]),
             numpy_helper.from_array(np.arange(4, dtype=np.float32), "plain")]
    for i, tname in enumerate(oracle.PACKED):
        n = 5 + i
        inits.append(helper.make_tensor(f"packed/{tname}/raw", oracle.PACKED[tname], [n],
                                        sample(tname, [n], rng), raw=True))
        inits.append(helper.make_tensor(f"packed/{tname}/typed", oracle.PACKED[tname], [3],
                                        sample(tname, [3], rng), raw=False))
    values = numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "sparse_w")
    indices = numpy_helper.from_array(np.array([1, 4], np.int64), "sparse_w.indices")
    sparse = helper.make_sparse_tensor(values, indices, [6])
    nodes = [const("/labels/Constant_output_0", helper.make_tensor("", T.STRING, [2], [b"x", b"y"])),
             helper.make_node("Constant", [], ["/sparse/Constant_output_0"],
                              sparse_value=helper.make_sparse_tensor(
                                  numpy_helper.from_array(np.array([7], np.int64), "sv"),
                                  numpy_helper.from_array(np.array([0], np.int64), "si"), [3]))]
    m = model(inits, nodes, "leftout")
    m.graph.sparse_initializer.append(sparse)
    onnx.checker.check_model(m)
    p = folder(outdir, "leftout")
    onnx.save_model(m, p)
    return [("leftout", p)]


def write_all(outdir: str, rng) -> list:
    """Every forward model: (label, path), or (label, path, the folder
    onnx reads its external data from) where that is another."""
    return (write_types(outdir, rng) + write_subgraphs(outdir, rng) + write_names(outdir, rng)
            + write_wide(outdir) + write_leftout(outdir, rng) + write_handmade(outdir))
