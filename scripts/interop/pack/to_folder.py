"""The pack suite's check of `ztfs pack MODEL --to-folder DIR`: a folder
with its other files packed to `.zt`, then written out again; every file
comes back byte for byte at its path, and `model.safetensors` holds, as the
safetensors package reads it, every tensor of the source with its dtype,
shape and bytes, and the source's `__metadata__` exactly (none when it had
none). Also from the folder itself, from a sharded checkpoint (one
`model.safetensors` then), and the refusal of a folder that is not empty.
"""

from __future__ import annotations

import json
import os

import numpy as np

from .checkpoint import write_checkpoint
from .common import diff_tensors, first_diff, pack, st_tensors
from .folder import FILES
from ..results import Results, short
from ..ztfs import Ztfs


def to_folder(z: Ztfs, src: str, out: str) -> tuple[int, bytes, bytes]:
    return z.run("pack", [src], ("--to-folder", out))


def written_files(d: str) -> dict:
    """Every file under `d`, by path, with its bytes."""
    out = {}
    for top, _, names in os.walk(d):
        for n in names:
            p = os.path.join(top, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, d)] = f.read()
    return out


def tensors_of(paths: list) -> dict:
    """Every tensor of the safetensors files `paths`, as their reader gives it."""
    out = {}
    for p in paths:
        out.update(st_tensors(p)[0])
    return out


def check_written(res: Results, where: str, out: str, files: dict, weights: list,
                  meta) -> None:
    """`out` holds `files` byte for byte, and a model.safetensors with the
    tensors of the safetensors files `weights` and `__metadata__` `meta`."""
    got = written_files(out)
    want_names = sorted([*files, "model.safetensors"])
    res.check(sorted(got) == want_names, where, f"written: {sorted(got)}, want {want_names}")
    for path, want in files.items():
        data = got.get(path)
        res.check(data == want, where, f"{path!r}: {None if data is None else len(data)} bytes, "
                  f"want {len(want)}; first difference at "
                  f"{None if data is None else first_diff(data, want)}")
    tensors, got_meta = st_tensors(os.path.join(out, "model.safetensors"))
    problems = diff_tensors(tensors_of(weights), tensors)
    res.check(not problems, where, "tensors: " + "; ".join(problems[:4]))
    res.check(got_meta == meta, where, f"__metadata__ {got_meta}, want {meta}")


def run_to_folder(z: Ztfs, res: Results, tmp: str) -> None:
    from safetensors.numpy import save_file

    rng = np.random.default_rng(11)
    cases = 0
    for label, meta in (("with metadata", {"format": "pt", "author": "me", "n": "3"}),
                        ("without metadata", None)):
        d = os.path.join(tmp, label.replace(" ", "-"))
        os.makedirs(os.path.join(d, "original"))
        weights = os.path.join(d, "model.safetensors")
        save_file({"embed.weight": rng.standard_normal((32, 8)).astype(np.float16),
                   "norm": np.ones(8, np.float32), "ids": np.arange(5, dtype=np.int64)},
                  weights, metadata=meta)
        for path, data in FILES.items():
            with open(os.path.join(d, path), "wb") as f:
                f.write(data)
        packed = d + ".zt"
        rc, _, err = pack(z, d, packed)
        where = f"pack --to-folder {label}"
        if not res.check(rc == 0, where, f"`ztfs pack` exited {rc}: {short(err)}"):
            continue
        for src, tag in ((packed, ".zt"), (d, "folder")):
            out = os.path.join(tmp, f"out-{label}-{tag}".replace(" ", "-"))
            rc, _, err = to_folder(z, src, out)
            if res.check(rc == 0, f"{where} of the {tag}", f"exited {rc}: {short(err)}"):
                check_written(res, f"{where} of the {tag}", out, FILES, [weights], meta)
                cases += 1
    # A sharded checkpoint comes back as one model.safetensors with every
    # tensor (the split is not kept: loaders take either).
    d = os.path.join(tmp, "sharded")
    os.makedirs(d)
    shards = write_checkpoint(d)
    packed = d + ".zt"
    rc, _, err = pack(z, d, packed)
    where = "pack --to-folder sharded"
    if res.check(rc == 0, where, f"`ztfs pack` exited {rc}: {short(err)}"):
        source = tensors_of(shards)
        out = os.path.join(tmp, "out-sharded")
        rc, _, err = to_folder(z, packed, out)
        if res.check(rc == 0, where, f"exited {rc}: {short(err)}"):
            got = written_files(out)
            res.check(sorted(got) == ["model.safetensors"], where, f"written: {sorted(got)}")
            tensors, _ = st_tensors(os.path.join(out, "model.safetensors"))
            problems = diff_tensors(source, tensors)
            res.check(not problems, where, "tensors: " + "; ".join(problems[:4]))
            cases += 1
        # With --shard-size, shards and their index as save_pretrained
        # writes them; every tensor in the file the index names.
        out_sh = os.path.join(tmp, "out-resharded")
        rc, _, err = z.run("pack", [packed], ("--to-folder", out_sh, "--shard-size", "2K"))
        if res.check(rc == 0, where, f"--shard-size 2K exited {rc}: {short(err)}"):
            got = sorted(written_files(out_sh))
            with open(os.path.join(out_sh, "model.safetensors.index.json")) as f:
                index = json.load(f)
            names = sorted(set(index["weight_map"].values()))
            n = len(names)
            want = [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
            res.check(n > 1 and names == want, where, f"the index names {names}")
            res.check(got == sorted([*names, "model.safetensors.index.json"]), where,
                      f"--shard-size 2K wrote {got}")
            tensors = {}
            for n in names:
                ts = st_tensors(os.path.join(out_sh, n))[0] if os.path.exists(os.path.join(out_sh, n)) else {}
                size = sum(len(t.data) for t in ts.values())
                res.check(size <= 2048 or len(ts) == 1, where, f"{n} holds {size} bytes of tensors")
                for t in ts:
                    res.check(index["weight_map"].get(t) == n, where,
                              f"the index puts {t!r} in {index['weight_map'].get(t)!r}, it is in {n}")
                tensors.update(ts)
            problems = diff_tensors(source, tensors)
            res.check(not problems, where, "resharded tensors: " + "; ".join(problems[:4]))
            cases += 1
        # A folder that is not empty is refused, and left as it was.
        rc, _, err = to_folder(z, packed, out)
        res.check(rc != 0 and b"not an empty folder" in err, where,
                  f"a second --to-folder into a full folder exited {rc}: {short(err)}")
        res.check(sorted(written_files(out)) == ["model.safetensors"], where,
                  "the refused --to-folder changed the folder")
        leftovers = [n for n in os.listdir(tmp) if n.startswith(".ztfs-to-folder-")]
        res.check(not leftovers, where, f"staging folders left behind: {leftovers}")
    print(f"ok   pack --to-folder: {cases} folders written back and read by safetensors",
          flush=True)
