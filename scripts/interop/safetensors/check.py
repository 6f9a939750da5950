"""safetensors files as input (--suite safetensors): ztfs against the PyPI
safetensors package (0.8.0, the same Rust crate underneath), both ways.

Forward: files `safetensors.numpy.save_file` writes (every dtype numpy can
express, scalars, empty tensors, metadata) read identically through
`ztfs cat` and a mount (the `data` file, and `np.load` of `data.npy`),
and `ztfs manifest` is the file's header; a sharded checkpoint
(safetensors/sharded.py) read as one model. Reverse: every file of
corpus/safetensors/ that ztfs refuses, `safetensors.safe_open` refuses,
and every file ztfs opens, it opens, except the documented decisions in
KNOWN (docs/safetensors.md, "Decisions").
"""

from __future__ import annotations

import glob
import json
import os
import struct

import numpy as np

from ..mount import is_mounted, mounted
from ..results import Results, short
from .sharded import check_mounted_tensors, check_sharded
from ..ztfs import Ztfs

# Corpus files ztfs refuses on purpose though the package opens them.
KNOWN = {
    "json-leading-space.safetensors": "the header MUST begin with '{'; serde_json skips whitespace",
    "duplicate-tensor.safetensors": "duplicate keys are disallowed; the crate keeps the last",
    "duplicate-metadata-key.safetensors": "duplicate keys are disallowed; the crate keeps the last",
    "entry-array.safetensors": "serde's derive takes a struct written as an array",
    "entry-dtype-object.safetensors": "serde takes a unit variant written as {\"U8\": null}",
}

# Every numpy dtype safetensors.numpy writes, with shapes: scalars, empty
# tensors, several ranks.
DTYPES = ("bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64",
          "uint64", "float16", "float32", "float64", "complex64")


def tensors() -> dict:
    rng = np.random.default_rng(13)
    out = {}
    for i, d in enumerate(DTYPES):
        dt = np.dtype(d)
        for shape in ((), (0,), (3,), (2, 3), (2, 0, 4)):
            n = int(np.prod(shape, dtype=np.int64))
            if dt == np.bool_:
                a = rng.integers(0, 2, n).astype(np.bool_)
            elif dt.kind == "c":
                a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
            elif dt.kind == "f":
                a = rng.standard_normal(n).astype(dt)
            else:
                info = np.iinfo(dt)
                a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
            name = f"t{i:02d}.{d}.{'x'.join(map(str, shape)) or 'scalar'}"
            out[name] = a.reshape(shape)
    return out


def header_of(path: str) -> dict:
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))


def check_written(z: Ztfs, res: Results, tmp: str) -> None:
    from safetensors.numpy import save_file

    path = os.path.join(tmp, "written.safetensors")
    ts = tensors()
    save_file(ts, path, metadata={"format": "np", "note": "ünï \"q\""})
    where = "safetensors save_file"
    rc, out, err = z.run("check", [path], ("--verify",))
    res.check(rc == 0, where, f"`ztfs check --verify` exited {rc}: {short(err)}")
    rc, out, err = z.run("manifest", [path])
    if res.check(rc == 0, where, f"`ztfs manifest` exited {rc}: {short(err)}"):
        res.check(json.loads(out) == header_of(path), where, "manifest is not the header")
    for name, a in ts.items():
        want = a.tobytes()
        rc, out, err = z.run("cat", [path, name])
        res.check(rc == 0 and out == want, f"{where} {name}",
                  f"`ztfs cat` exited {rc} or differs: {short(err)}")
    with mounted(z, path, res, where) as (rc, err, mnt):
        if not res.check(rc == 0 and is_mounted(mnt), where, f"mount exited {rc}: {short(err)}"):
            return
        check_mounted_tensors(res, mnt, ts, where)
    print(f"ok   save_file: {len(ts)} tensors of {len(DTYPES)} dtypes", flush=True)


def package_opens(path: str) -> tuple[bool, str]:
    from safetensors import safe_open

    try:
        # Opening parses and validates the header (the crate's
        # deserialize); no tensor needs numpy to express its dtype.
        with safe_open(path, framework="numpy") as f:
            f.keys()
        return True, ""
    except Exception as e:  # noqa: BLE001 - any refusal counts
        return False, f"{type(e).__name__}: {e}"


def check_corpus(corpus: str, z: Ztfs, res: Results) -> None:
    files = sorted(glob.glob(os.path.join(corpus, "safetensors", "*", "*.safetensors")))
    if not res.check(bool(files), "safetensors corpus", f"no files under {corpus}/safetensors"):
        return
    used = []
    for path in files:
        name = os.path.basename(path)
        rc, _, err = z.run("check", [path])
        ours = rc == 0
        theirs, why = package_opens(path)
        if ours == theirs:
            res.ok()
        elif theirs and name in KNOWN:
            used.append(name)
            res.ok()
        else:
            res.fail(f"safetensors corpus {name}",
                     f"ztfs {'opens' if ours else 'refuses'} ({short(err, 100)}), "
                     f"the package {'opens' if theirs else 'refuses'} ({why[:100]})")
    for name in sorted(set(KNOWN) - set(used)):
        res.fail("safetensors known", f"{name}: listed as a difference, but there is none")
    print(f"ok   safetensors corpus: {len(files)} files, {len(used)} documented differences",
          flush=True)


def run_st_input(args, z: Ztfs, res: Results, tmpdir: str) -> None:
    if z is None:
        print("\n== safetensors input: skipped (--package-only)")
        return
    tmp = os.path.join(tmpdir, "st-input")
    os.makedirs(tmp, exist_ok=True)
    print("\n== safetensors input: files save_file writes, through ztfs")
    try:
        check_written(z, res, tmp)
    except Exception as e:  # noqa: BLE001 - a harness error is a failure
        res.fail("safetensors save_file", f"harness error: {type(e).__name__}: {e}")
    print("\n== safetensors input: a sharded checkpoint (save_file and an index), through ztfs")
    try:
        check_sharded(z, res, tmp)
    except Exception as e:  # noqa: BLE001 - a harness error is a failure
        res.fail("sharded checkpoint", f"harness error: {type(e).__name__}: {e}")
    print(f"\n== safetensors input: {args.corpus}/safetensors through the package")
    check_corpus(args.corpus, z, res)
