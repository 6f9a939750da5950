"""The pack suite (--suite pack): `ztfs pack` against the ztensor package.

  corpus.py     every valid corpus file packed, checked, compared with
                ztensor.convert (allowlists REFUSED, CONVERT_REFUSES)
  options.py    --zstd, --frame-size, --digest, --align, --shard-size on a
                generated safetensors file
  gguf.py       GGUF key-values of every type, pack and convert
  checkpoint.py  a Hugging Face sharded checkpoint (folder, index), as the
                package writes its files read as one model
  folder.py     a checkpoint folder with its other files: the package reads
                tensors and files back; --no-files is the package's ingest
  npy.py        np.save arrays of every dtype zTensor has, packed together;
                the ones ztfs refuses
  this module   the suite's order; edge cases (an empty __metadata__, one
                blob under three dtypes, empty tensors, a 20 MB part), each
                byte for byte convert's output, and names zTensor forbids
                (over 1024 bytes, U+0000), refused by both; and the mount check: a packed
                safetensors model (default and --zstd) mounted, its
                `model.safetensors` loaded with safe_open, every tensor the
                source's, byte for byte, and its __metadata__ kept
"""

from __future__ import annotations

import os

import numpy as np
import ztensor

from ..container import read_raw
from ..mount import is_mounted, mounted
from .common import (check_packed, diff_tensors, first_diff, one_part, pack, st_tensors,
                          zt_objects)
from .corpus import CONVERT_REFUSES, REFUSED, manifest_diff, run_corpus
from .checkpoint import run_checkpoint
from .folder import run_folder
from .to_folder import run_to_folder
from .gguf import run_gguf_kv
from .npy import run_npy
from .options import run_options, write_source
from ..results import Results, short
from ..ztfs import Ztfs


def check_mount(z: Ztfs, res: Results, tmp: str) -> None:
    from safetensors import safe_open

    src = os.path.join(tmp, "mount-src.safetensors")
    ts = write_source(src)
    _, meta = st_tensors(src)
    for label, flags in (("default", ()), ("zstd", ("--zstd",))):
        where = f"pack mount {label}"
        out = os.path.join(tmp, f"mount-{label}.zt")
        rc, _, err = pack(z, src, out, flags)
        if not res.check(rc == 0, where, f"`ztfs pack` exited {rc}: {short(err)}"):
            continue
        with mounted(z, out, res, where) as (rc, err, mnt):
            if not res.check(rc == 0 and is_mounted(mnt), where, f"mount exited {rc}: {short(err)}"):
                continue
            view = os.path.join(mnt, "model.safetensors")
            with safe_open(view, framework="numpy") as f:
                res.check(sorted(f.keys()) == sorted(ts), where,
                          f"model.safetensors holds {sorted(f.keys())}, the source {sorted(ts)}")
                md = f.metadata() or {}
                for k, v in (meta or {}).items():
                    res.check(k == "format" or md.get(k) == v, where,
                              f"__metadata__[{k!r}] is {md.get(k)!r}, the source's {v!r}")
                for name in f.keys():
                    a, b = f.get_tensor(name), ts.get(name)
                    res.check(b is not None and a.dtype == b.dtype and a.shape == b.shape
                              and a.tobytes() == b.tobytes(), where,
                              f"{name!r}: {a.dtype}{a.shape} vs the source's "
                              f"{getattr(b, 'dtype', None)}{getattr(b, 'shape', None)}, "
                              f"equal bytes: {b is not None and a.tobytes() == b.tobytes()}")
    print("ok   pack mount: model.safetensors of packed files (raw and zstd)", flush=True)


def edge_cases() -> dict:
    """Small safetensors files where two writers could part ways: name ->
    (tensors, __metadata__)."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2**31, 1000, dtype=np.int32)
    return {
        # An empty __metadata__ map: file attributes {} or none?
        "empty-metadata": ({"a": np.ones(3, np.float32)}, {}),
        # The same bytes under three dtypes: one blob (§6.3 rule 3).
        "same-bytes-three-dtypes": ({"a": x.view(np.float32), "b": x, "c": x.view(np.uint8)}, None),
        # Empty tensors of several shapes and dtypes, all at one offset.
        "empty-tensors": ({"e1": np.zeros(0, np.float32), "e2": np.zeros((0, 3), np.int64),
                           "e3": np.zeros((2, 0), np.uint8)}, None),
        # A part of 20 MB, streamed in many chunks.
        "large": ({"big": rng.standard_normal(5_000_000).astype(np.float32),
                   "small": np.zeros(5, np.int8)}, {"k": "v"}),
    }


def check_edges(z: Ztfs, res: Results, tmp: str) -> None:
    """Each edge case packed: the checks of every packed file, the source's
    tensors, and byte for byte ztensor.convert's output."""
    from safetensors.numpy import save_file

    for name, (ts, meta) in edge_cases().items():
        where = f"pack edge {name}"
        src, out = os.path.join(tmp, f"{name}.safetensors"), os.path.join(tmp, f"{name}.pack.zt")
        save_file(ts, src, metadata=meta)
        rc, _, err = pack(z, src, out)
        if not res.check(rc == 0, where, f"`ztfs pack` exited {rc}: {short(err)}"):
            continue
        check_packed(z, res, where, out)
        problems = diff_tensors(st_tensors(src)[0], one_part(zt_objects(out)))
        res.check(not problems, where, "read back: " + "; ".join(problems[:4]))
        conv = os.path.join(tmp, f"{name}.convert.zt")
        ztensor.convert(src, conv)
        with open(out, "rb") as f, open(conv, "rb") as g:
            a, b = f.read(), g.read()
        res.check(a == b, where, f"pack and ztensor.convert differ: {len(a)} vs {len(b)} bytes, "
                  f"first difference at {first_diff(a, b)}; manifests: "
                  f"{manifest_diff(read_raw(out).manifest, read_raw(conv).manifest)}")
    # Names safetensors allows and zTensor does not (§3.5): both writers refuse.
    for name, tensor in (("name-1100-bytes", "x" * 1100), ("name-nul", "a\x00b")):
        where = f"pack edge {name}"
        src = os.path.join(tmp, f"{name}.safetensors")
        save_file({tensor: np.ones(2, np.float32)}, src)
        rc, _, err = pack(z, src, os.path.join(tmp, f"{name}.pack.zt"))
        res.check(rc == 1 and b"cannot be written as zTensor" in err, where,
                  f"`ztfs pack` exited {rc} ({short(err)}); a name zTensor forbids must be refused")
        try:
            ztensor.convert(src, os.path.join(tmp, f"{name}.convert.zt"))
            res.fail(where, "ztensor.convert writes a name zTensor forbids")
        except ValueError as e:
            res.check("invalid name" in str(e), where, f"ztensor.convert: {e}")
    print(f"ok   pack edge cases: {len(edge_cases()) + 2} files", flush=True)


def run_pack(args, z: Ztfs, res: Results, tmpdir: str) -> None:
    if z is None:
        print("\n== pack: skipped (--package-only)")
        return
    tmp = os.path.join(tmpdir, "pack")
    os.makedirs(tmp, exist_ok=True)
    steps = [("options", lambda: run_options(z, res, os.path.join(tmp, "options"))),
             ("edge cases", lambda: check_edges(z, res, os.path.join(tmp, "edge"))),
             ("gguf key-values", lambda: run_gguf_kv(z, res, os.path.join(tmp, "gguf"))),
             (".npy files", lambda: run_npy(z, res, os.path.join(tmp, "npy"))),
             ("sharded checkpoint", lambda: run_checkpoint(z, res, os.path.join(tmp, "hf"))),
             ("folder with files", lambda: run_folder(z, res, os.path.join(tmp, "folder"))),
             ("--to-folder", lambda: run_to_folder(z, res, os.path.join(tmp, "to-folder"))),
             ("mount", lambda: check_mount(z, res, os.path.join(tmp, "mount")))]
    if not args.skip_corpus:
        steps.insert(0, ("corpus", lambda: run_corpus(args.corpus, z, res,
                                                      os.path.join(tmp, "corpus"))))
    for sub in ("corpus", "options", "edge", "gguf", "mount", "folder", "to-folder"):
        os.makedirs(os.path.join(tmp, sub), exist_ok=True)
    for label, step in steps:
        print(f"\n== pack: {label}", flush=True)
        try:
            step()
        except Exception as e:  # noqa: BLE001 - a harness error is a failure
            res.fail(f"pack {label}", f"harness error: {type(e).__name__}: {e}")
    print("== pack: refusals expected (REFUSED)")
    for k, (why, _) in sorted(REFUSED.items()):
        print(f"  {k}: {why}")
    print("== pack: files ztensor.convert refuses and ztfs packs (CONVERT_REFUSES)")
    for k, (why, _) in sorted(CONVERT_REFUSES.items()):
        print(f"  {k}: {why}")
