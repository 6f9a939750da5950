"""Hugging Face sharded safetensors checkpoints as input (part of --suite
safetensors): files `safetensors.numpy.save_file` writes, and an index
written as transformers' `save_pretrained` writes it
(`{"metadata": {"total_size": N}, "weight_map": {...}}`, sorted, indent 2),
read as one model by ztfs: every tensor identical through `ztfs cat` on the
index and on its folder, and through a mount (`data`, `np.load` of
`data.npy`); `ztfs manifest` is the index.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..mount import is_mounted, mounted
from ..results import Results, short
from ..ztfs import Ztfs

INDEX = "model.safetensors.index.json"


def shards() -> list[dict]:
    """Three files' tensors, dotted names as transformers writes them."""
    rng = np.random.default_rng(7)
    return [
        {"model.embed_tokens.weight": rng.standard_normal((8, 4)).astype(np.float32),
         "model.layers.0.self_attn.q_proj.weight": rng.standard_normal((4, 4)).astype(np.float16)},
        {"model.layers.0.mlp.up_proj.weight": rng.standard_normal((6, 4)).astype(np.float16),
         "model.layers.0.mlp.up_proj.bias": rng.integers(-9, 9, 6, dtype=np.int64),
         "model.norm.weight": np.ones(4, dtype=np.float32)},
        {"lm_head.weight": rng.standard_normal((8, 4)).astype(np.float64),
         "model.layers.0.mask": rng.integers(0, 2, 5).astype(np.bool_)},
    ]


def write_checkpoint(folder: str) -> dict:
    """Writes the files and the index; returns every tensor by name."""
    from safetensors.numpy import save_file

    parts = shards()
    weight_map, total, every = {}, 0, {}
    for i, ts in enumerate(parts):
        name = f"model-{i + 1:05d}-of-{len(parts):05d}.safetensors"
        save_file(ts, os.path.join(folder, name), metadata={"format": "pt"})
        for k, a in ts.items():
            weight_map[k] = name
            total += a.nbytes
            every[k] = a
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(folder, INDEX), "w") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return every


def check_mounted_tensors(res: Results, mnt: str, ts: dict, where: str) -> None:
    """Each tensor of `ts` through the mount on `mnt`: its `data` file's
    bytes, and `np.load` of its `data.npy` (dtype, shape, bytes)."""
    for name, a in ts.items():
        d = os.path.join(mnt, name)
        with open(os.path.join(d, "data"), "rb") as f:
            res.check(f.read() == a.tobytes(), f"{where} {name}", "data differs")
        got = np.load(os.path.join(d, "data.npy"))
        res.check(got.dtype == a.dtype and got.shape == a.shape
                  and got.tobytes() == a.tobytes(), f"{where} {name}",
                  f"np.load gives {got.dtype} {got.shape}, want {a.dtype} {a.shape}")


def check_sharded(z: Ztfs, res: Results, tmp: str) -> None:
    folder = os.path.join(tmp, "sharded")
    os.makedirs(folder, exist_ok=True)
    ts = write_checkpoint(folder)
    index = os.path.join(folder, INDEX)
    where = "sharded checkpoint"
    for src in (index, folder):
        rc, _, err = z.run("check", [src], ("--verify",))
        res.check(rc == 0, where, f"`ztfs check --verify {src}` exited {rc}: {short(err)}")
        for name, a in ts.items():
            rc, out, err = z.run("cat", [src, name])
            res.check(rc == 0 and out == a.tobytes(), f"{where} {name}",
                      f"`ztfs cat` of {src} exited {rc} or differs: {short(err)}")
    rc, out, err = z.run("manifest", [index])
    if res.check(rc == 0, where, f"`ztfs manifest` exited {rc}: {short(err)}"):
        with open(index) as f:
            res.check(json.loads(out) == json.load(f), where, "manifest is not the index")
    with mounted(z, index, res, where) as (rc, err, mnt):
        if not res.check(rc == 0 and is_mounted(mnt), where, f"mount exited {rc}: {short(err)}"):
            return
        check_mounted_tensors(res, mnt, ts, where)
    print(f"ok   sharded checkpoint: {len(ts)} tensors in 3 files, by index and by folder",
          flush=True)
