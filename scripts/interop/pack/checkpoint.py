"""The pack suite's check of a Hugging Face sharded checkpoint: written with
the safetensors package (`save_file`, one file per shard) and an index as
transformers writes it, packed by `ztfs pack` from the folder and from the
index; both outputs must be byte for byte what the ztensor package writes
when it reads the files as one model (`Writer.ingest(ztensor.open(files))`:
its `convert` does not read an index), and pass its deep verify.
"""

from __future__ import annotations

import json
import os

import numpy as np
import ztensor

from .common import check_packed, diff_tensors, first_diff, one_part, pack, st_tensors, zt_objects
from ..results import Results, short
from ..ztfs import Ztfs


def write_checkpoint(d: str) -> list[str]:
    """Three shards and their index; returns the shard paths in name order."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(7)
    shards = {
        "model-00001-of-00003.safetensors": {"embed.weight": rng.standard_normal((64, 16)).astype(np.float16),
                                             "layers.0.norm": np.ones(16, np.float32)},
        "model-00002-of-00003.safetensors": {"layers.0.mlp": rng.integers(-9, 9, (16, 8), dtype=np.int8)},
        "model-00003-of-00003.safetensors": {"lm_head.weight": rng.standard_normal((64, 16)).astype(np.float16),
                                             "flags": np.array([True, False])},
    }
    weight_map, total = {}, 0
    for name, ts in shards.items():
        save_file(ts, os.path.join(d, name), metadata={"format": "pt", "shard": name})
        weight_map.update({t: name for t in ts})
        total += sum(a.nbytes for a in ts.values())
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    return [os.path.join(d, n) for n in sorted(shards)]


def run_checkpoint(z: Ztfs, res: Results, tmp: str) -> None:
    d = os.path.join(tmp, "checkpoint")
    os.makedirs(d, exist_ok=True)
    files = write_checkpoint(d)
    want_path = os.path.join(tmp, "ingest.zt")
    with ztensor.Writer(want_path) as w:
        w.ingest(ztensor.open(files))
    with open(want_path, "rb") as f:
        want = f.read()
    source = {}
    for path in files:
        source.update(st_tensors(path)[0])
    for label, src in (("folder", d), ("index", os.path.join(d, "model.safetensors.index.json"))):
        where = f"pack checkpoint {label}"
        out = os.path.join(tmp, f"{label}.zt")
        rc, _, err = pack(z, src, out)
        if not res.check(rc == 0, where, f"`ztfs pack` exited {rc}: {short(err)}"):
            continue
        check_packed(z, res, where, out)
        problems = diff_tensors(source, one_part(zt_objects(out)))
        res.check(not problems, where, "read back: " + "; ".join(problems[:4]))
        with open(out, "rb") as f:
            got = f.read()
        res.check(got == want, where, f"{len(got)} bytes, the package's ingest {len(want)}; "
                  f"first difference at {first_diff(got, want)}")
    print("ok   pack checkpoint: folder and index, as the package writes the files as one model",
          flush=True)
