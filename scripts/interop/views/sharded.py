"""A sharded safetensors view, loaded as transformers loads a checkpoint:
`model.safetensors.index.json` (metadata.total_size, weight_map), then
each of `sorted(set(weight_map.values()))` with safe_open (`load_sharded`).

And the model whose header passes the real 100,000,000-byte limit
(`check_big`): written with the package (about 100,000 small f32 tensors,
names of 1,000 bytes; byte-identical parts share a blob, so the file stays
small), mounted without a flag, it must shard and load the same way.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from typing import Optional

import numpy as np
import ztensor
from safetensors import safe_open

from ..mount import is_mounted, mounted
from ..results import Results, short
from .safetensors import SINGLE, check_bytes, read_layout
from ..ztfs import Ztfs

INDEX = "model.safetensors.index.json"
SHARD_RE = re.compile(r"model-(\d{5})-of-(\d{5})\.safetensors")

BIG_TENSORS = 100_000
BIG_NAME_BYTES = 1000
BIG_BLOBS = 1009  # distinct tensor contents (a prime: neighbours never share one)
BIG_SAMPLE = 1000


def load_sharded(res: Results, where: str, mnt: str) -> Optional[tuple[dict, list]]:
    """The index and every shard it names: (table name -> (file, data
    start, entry), [(file, __metadata__)]), or None when unusable. Checks
    the shard names, that no model.safetensors sits beside them, that each
    shard holds exactly the names mapped to it, and total_size."""
    try:
        with open(os.path.join(mnt, INDEX), encoding="utf-8") as f:
            index = json.load(f)
        total, wmap = index["metadata"]["total_size"], index["weight_map"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        res.fail(where, f"{INDEX} unreadable: {type(e).__name__}: {e}")
        return None
    res.check(not os.path.lexists(os.path.join(mnt, SINGLE)), where,
              f"{SINGLE} exists beside {INDEX}")
    shards = sorted(set(wmap.values()))
    on_disk = sorted(e for e in os.listdir(mnt) if SHARD_RE.fullmatch(e))
    n = len(shards)
    res.check(shards == on_disk and shards == [f"model-{i:05d}-of-{n:05d}.safetensors"
                                               for i in range(1, n + 1)], where,
              f"weight_map names shards {shards[:3]}..., the root holds {on_disk[:3]}...")
    table, metas, size = {}, [], 0
    for s in shards:
        path = os.path.join(mnt, s)
        w = f"{where} {s}"
        lay = read_layout(res, w, path)
        if lay is None:
            continue
        start, header = lay
        mine = {k for k, v in wmap.items() if v == s}
        entries = {k: v for k, v in header.items() if k != "__metadata__"}
        with safe_open(path, framework="numpy") as st:
            keys = set(st.keys())
            metas.append((path, st.metadata()))
        res.check(keys == mine == set(entries), w,
                  f"holds {len(keys)} tensors (header {len(entries)}), weight_map maps "
                  f"{len(mine)} to it; e.g. {sorted(keys ^ mine)[:2]!r}")
        for k, v in entries.items():
            table[k] = (path, start, v)
            size += v["data_offsets"][1] - v["data_offsets"][0]
    res.check(total == size, where, f"metadata.total_size {total}, the shards hold {size} bytes")
    return table, metas


def write_big(path: str) -> tuple[list, dict]:
    """The big model; returns (names, name -> bytes)."""
    blobs = [np.array([k, -k - 0.25], dtype=np.float32).view(np.uint8) for k in range(BIG_BLOBS)]
    w = ztensor.Writer(path, canonical=False, align=4096)
    names, want = [], {}
    try:
        for i in range(BIG_TENSORS):
            name = f"{i:06d}." + "w" * (BIG_NAME_BYTES - 7)
            w.add(name, blobs[i % BIG_BLOBS], [2], "f32")
            names.append(name)
            want[name] = blobs[i % BIG_BLOBS].tobytes()
        w.finish()
    except BaseException:
        w.abandon()
        raise
    return names, want


def check_big(z: Ztfs, res: Results, tmp: str) -> str:
    """Writes, mounts and loads the big model; a summary line."""
    where = "views big model"
    t0 = time.monotonic()
    path = os.path.join(tmp, "views-big.zt")
    names, want = write_big(path)
    t_gen = time.monotonic() - t0
    try:
        with mounted(z, path, res, where) as (rc, err, mnt):
            if not res.check(rc == 0 and is_mounted(mnt), where,
                             f"`ztfs mount` exited {rc}: {short(err)}"):
                return "mount FAILED"
            got = load_sharded(res, where, mnt)
            if got is None:
                return "no sharded view"
            table, _ = got
            res.check(set(table) == set(names), where,
                      f"{len(table)} tensors in the shards, {len(names)} written; missing "
                      f"{[n[:10] for n in sorted(set(names) - set(table))[:3]]}")
            nshards = len({f for f, _, _ in table.values()})
            res.check(nshards >= 2, where,
                      f"{nshards} shard(s): a header over the limit must shard")
            sample = random.Random(BIG_TENSORS).sample(sorted(set(table) & set(names)),
                                                       min(BIG_SAMPLE, len(table)))
            check_bytes(res, where, table, lambda n: (want.get(n), ""), sample)
    finally:
        os.unlink(path)
    return (f"{BIG_TENSORS} tensors written in {t_gen:.1f}s, {nshards} shards, "
            f"checked in {time.monotonic() - t0 - t_gen:.1f}s")
