"""A transformer-shaped model of about 100 MB (float32 embeddings, four
layers of MatMul weights, a tied-size lm_head), saved by onnx with its
weights external in one file as exporters write large models, then read
back whole through a mount: each tensor's data.npy equal to onnx's values.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

from . import oracle
from .manifest import as_map
from ..mount import MOUNT_STATS, mounted
from ..results import Results, short

VOCAB, HIDDEN, INTER, LAYERS = 12000, 512, 2048, 4


def write_big(outdir: str, rng) -> str:
    """OUTDIR/big/model.onnx and model.onnx.data; weights named as
    torch.onnx names them (module paths, and `onnx::MatMul_N` for the
    transposed Linear weights it folds)."""
    inits, nodes = [], []
    serial = iter(range(1000, 10**6))

    def weight(name, shape):
        a = rng.standard_normal(shape, dtype=np.float32)
        inits.append(numpy_helper.from_array(a, name))
        return name

    def node(op, ins, out):
        nodes.append(helper.make_node(op, ins, [out], name=out.rsplit("_output", 1)[0]))
        return out

    h = node("Gather", [weight("model.embed_tokens.weight", (VOCAB, HIDDEN)), "input_ids"],
             "/model/embed_tokens/Gather_output_0")
    for i in range(LAYERS):
        p = f"/model/layers.{i}"
        a = node("Mul", [h, weight(f"model.layers.{i}.input_layernorm.weight", (HIDDEN,))],
                 f"{p}/input_layernorm/Mul_output_0")
        qkv = [node("MatMul", [a, weight(f"onnx::MatMul_{next(serial)}", (HIDDEN, HIDDEN))],
                    f"{p}/self_attn/{x}_proj/MatMul_output_0") for x in "qkv"]
        s = node("Add", [node("Add", qkv[:2], f"{p}/self_attn/Add_output_0"), qkv[2]],
                 f"{p}/self_attn/Add_1_output_0")
        o = node("MatMul", [s, weight(f"onnx::MatMul_{next(serial)}", (HIDDEN, HIDDEN))],
                 f"{p}/self_attn/o_proj/MatMul_output_0")
        h = node("Add", [h, o], f"{p}/Add_output_0")
        up = node("MatMul", [h, weight(f"model.layers.{i}.mlp.up_proj.weight", (HIDDEN, INTER))],
                  f"{p}/mlp/up_proj/MatMul_output_0")
        act = node("Relu", [up], f"{p}/mlp/act_fn/Relu_output_0")
        down = node("MatMul", [act, weight(f"model.layers.{i}.mlp.down_proj.weight",
                                            (INTER, HIDDEN))], f"{p}/mlp/down_proj/MatMul_output_0")
        h = node("Add", [h, down], f"{p}/Add_1_output_0")
    nodes.append(helper.make_node("Constant", [], ["/model/Constant_output_0"],
                                  value=numpy_helper.from_array(np.array([1, -1, VOCAB], np.int64), "")))
    logits = node("MatMul", [h, weight(f"onnx::MatMul_{next(serial)}", (HIDDEN, VOCAB))],
                  "/lm_head/MatMul_output_0")
    nodes.append(helper.make_node("Reshape", [logits, "/model/Constant_output_0"], ["logits"]))
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "main_graph", [vi("input_ids", T.INT64, [1, "seq"])],
                          [vi("logits", T.FLOAT, [1, "seq", VOCAB])], inits)
    m = helper.make_model(g, producer_name="pytorch", producer_version="2.15.0",
                          opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(m)
    d = os.path.join(outdir, "big")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.onnx.data")
    return path


def check_big(path: str, z, res: Results):
    where = "onnx big"
    base = os.path.dirname(path)
    want = oracle.tensors(oracle.load(path))
    size = os.path.getsize(os.path.join(base, "model.onnx.data"))
    print(f"  big: {len(want)} tensors, {size / 1e6:.0f} MB external", flush=True)
    rc, _, err = z.run("check", [path])
    if not res.check(rc == 0, where, f"ztfs check: {short(err)}"):
        return
    rc, out, err = z.run("manifest", [path])
    man = as_map(json.loads(out).get("tensors")) if rc == 0 else {}
    res.check(set(man) == set(want), where, f"manifest names differ: missing "
              f"{sorted(set(want) - set(man))[:4]}, extra {sorted(set(man) - set(want))[:4]}")
    for n, t in want.items():
        res.check(man.get(n, {}).get("dims") == t.dims, where, f"{n!r}: manifest dims")
    t0 = time.monotonic()
    with mounted(z, path, res, where) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"ztfs mount: {short(err)}"):
            return
        dirs = {}
        for e in os.listdir(mnt):
            meta = os.path.join(mnt, e, "meta.json")
            if os.path.isfile(meta):
                with open(meta, "rb") as f:
                    dirs[json.load(f)["name"]] = e
        nbytes = 0
        for n, t in want.items():
            if n not in dirs:
                res.fail(where, f"{n!r}: no directory in the mount")
                continue
            a, exp = oracle.expected(t, base)
            got = np.load(os.path.join(mnt, dirs[n], "data.npy"))
            nbytes += got.nbytes
            res.check(got.dtype == a.dtype and got.shape == a.shape and got.tobytes() == exp,
                      where, f"{n!r}: data.npy {got.dtype}{got.shape} differs from onnx's "
                             f"{a.dtype}{a.shape}")
    MOUNT_STATS["mounts"] += 1
    MOUNT_STATS["bytes"] += nbytes
    MOUNT_STATS["seconds"] += time.monotonic() - t0
    print(f"  big: {nbytes / 1e6:.0f} MB read through the mount in "
          f"{time.monotonic() - t0:.1f}s", flush=True)
