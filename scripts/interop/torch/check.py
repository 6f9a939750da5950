"""The PyTorch suite: `torch.save` archives read by ztfs as a second,
independent reader reads them (oracle.py: Python's unpickler with an
allowlist, zipfile, numpy), and hostile pickles refused without running.

Files: the files torch wrote, in tests/data/torch (with the per-tensor
sha256 torch computed; scripts/torch-oracle/write.py), and the files
writer.py makes in its own process (checked once against torch itself:
`torch.load(weights_only=True)` reads each to the same tensors)
(every dtype; views: a transpose, offset and step slices, tied weights, a
scalar, an empty tensor, a parameter; a nested training checkpoint).

Forward, per file: `ztfs check` accepts it; `ztfs manifest` lists the
oracle's tensors in its order with their dtype and shape; `ztfs cat` of
each is the oracle's row-major bytes and matches the sha256 list; a mount
serves each tensor's `data` (and `data.npy`, loaded by numpy, where numpy
has the dtype) and a `model.safetensors` read by the safetensors package;
`ztfs pack` gives a `.zt` whose tensors, read by the ztensor package, are
the oracle's.

Hostile: each file is refused by `ztfs check` and by `ztfs mount`, and the
file its payload would create does not exist afterwards. The payload is
shown live: picklescan flags every file whose pickle names a dangerous
global, and Python's unrestricted `pickle.loads` of `os-system.pt`'s
pickle, in a child process, does create the file.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import subprocess
import sys
import zipfile

import numpy as np

from ..mount import mounted
from ..pack.common import check_packed, pack, zt_objects
from ..results import Results, short
from . import oracle

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "..", "..", "..", "tests", "data", "torch")
# dtypes numpy loads from a .npy and safetensors' numpy API returns.
NUMPY_NATIVE = {"float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8",
                "bool", "complex64", "uint16"}


def write_files(outdir: str) -> None:
    """Runs writer.py in its own process (it installs stand-in torch modules)."""
    marker = os.path.join(outdir, "PWNED")
    subprocess.run([sys.executable, "-m", "interop.torch.writer", outdir, marker], check=True,
                   cwd=os.path.join(HERE, "..", ".."))


def check_forward(path: str, want: dict, z, res: Results, outdir: str):
    where = os.path.basename(path)
    got = oracle.load_any(path)
    sums = {n: hashlib.sha256(a.tobytes()).hexdigest() for n, (_, a) in got.items()}
    res.check(list(got) == list(want) and all(sums[n] == want[n]["sha256"] for n in got), where,
              "the oracle disagrees with the expected sums")
    rc, _, err = z.run("check", [path])
    if not res.check(rc == 0, where, f"ztfs check: {short(err)}"):
        return
    rc, out, err = z.run("manifest", [path])
    if not res.check(rc == 0, where, f"ztfs manifest: {short(err)}"):
        return
    doc = json.loads(out)["tensors"]
    res.check(list(doc) == list(got), where, f"manifest names {list(doc)[:5]} vs {list(got)[:5]}")
    for n, (dtype, arr) in got.items():
        e = doc.get(n, {})
        res.check(e.get("shape") == list(arr.shape), where, f"{n!r}: shape {e.get('shape')}")
        rc, data, err = z.run("cat", [path, n])
        res.check(rc == 0 and data == arr.tobytes(), where,
                  f"cat {n!r}: {short(err)} ({len(data)} bytes vs {arr.nbytes})")
    check_mount(path, got, z, res, where)
    check_pack(path, got, z, res, where, outdir)


def check_mount(path: str, got: dict, z, res: Results, where: str):
    from safetensors import safe_open

    with mounted(z, path, res, where) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"ztfs mount: {short(err)}"):
            return
        with safe_open(os.path.join(mnt, "model.safetensors"), "numpy") as st:
            names = set(st.keys())
            for n, (dtype, arr) in got.items():
                d = os.path.join(mnt, *n.split("."))
                if not os.path.isdir(d):
                    d = os.path.join(mnt, n)
                with open(os.path.join(d, "data"), "rb") as f:
                    res.check(f.read() == arr.tobytes(), where, f"{n!r}: data differs")
                if dtype not in NUMPY_NATIVE:
                    continue
                npy = np.load(os.path.join(d, "data.npy"))
                res.check(npy.dtype == arr.dtype and np.array_equal(npy, arr), where,
                          f"{n!r}: data.npy {npy.dtype}{npy.shape} differs")
                ok = n in names and np.array_equal(st.get_tensor(n), arr)
                res.check(ok, where, f"{n!r}: model.safetensors differs from the oracle")


def check_pack(path: str, got: dict, z, res: Results, where: str, outdir: str):
    out = os.path.join(outdir, os.path.basename(path) + f"-{abs(hash(path))}.zt")
    rc, _, err = pack(z, path, out)
    if not res.check(rc == 0, where, f"ztfs pack: {short(err)}"):
        return
    objs = zt_objects(out)
    # A packed file lists its objects in canonical (name) order.
    res.check(sorted(objs) == sorted(got), where, f"packed names {list(objs)[:5]}")
    for n, (_, arr) in got.items():
        o = objs.get(n)
        ok = o is not None and list(o.parts) == ["data"] and o.parts["data"].data == arr.tobytes()
        res.check(ok and list(o.shape) == list(arr.shape), where, f"{n!r}: the packed tensor differs")
    check_packed(z, res, where, out)


def check_hostile(outdir: str, z, res: Results):
    marker = os.path.join(outdir, "PWNED")
    files = sorted(glob.glob(os.path.join(outdir, "hostile", "*.pt")))
    res.check(len(files) >= 12, "torch hostile", f"only {len(files)} hostile files written")
    for path in files:
        where = "torch hostile " + os.path.basename(path)
        rc, _, err = z.run("check", [path])
        res.check(rc != 0 and err, where, f"ztfs check exited {rc}: {short(err)}")
        with mounted(z, path, res, where) as (rc, err, _):
            res.check(rc != 0, where, "ztfs mount accepted it")
        flag = path[:-3] + ".flag"
        if os.path.exists(flag) and open(flag).read().strip() == "global":
            scan = subprocess.run([sys.executable, "-m", "picklescan", "-p", path],
                                  capture_output=True, text=True)
            res.check("Dangerous globals: 0" not in scan.stdout and "FOUND" in scan.stdout, where,
                      f"picklescan does not flag it (exit {scan.returncode}): {scan.stdout[-300:]}")
        res.check(not os.path.exists(marker), where, "the payload ran: the marker exists")
    # The payload is live: unrestricted pickle runs it.
    with zipfile.ZipFile(os.path.join(outdir, "hostile", "os-system.pt")) as zf:
        pkl = zf.read("archive/data.pkl")
    subprocess.run([sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
                   input=pkl, capture_output=True, timeout=60)
    res.check(os.path.exists(marker), "torch hostile payload",
              "unrestricted pickle.loads did not create the marker: the hostile test proves nothing")


def run_torch(args, z, res: Results, outdir: str):
    print("\n== PyTorch checkpoints: ztfs against a second reader; hostile pickles")
    os.makedirs(outdir, exist_ok=True)
    write_files(outdir)
    # Files torch wrote, with the sums torch computed (tests/data/torch).
    cases = [(p, os.path.splitext(p)[0] + ".json")
             for p in sorted(glob.glob(os.path.join(REAL, "*.pt*")))
             if os.path.exists(os.path.splitext(p)[0] + ".json")]
    cases.append((os.path.join(REAL, "sharded", "pytorch_model.bin.index.json"),
                  os.path.join(REAL, "sharded.json")))
    cases += [(p, p[:-3] + ".json") for p in sorted(glob.glob(os.path.join(outdir, "valid", "*.pt")))]
    # A sharded checkpoint by its index and by its folder.
    sharded = os.path.join(outdir, "sharded")
    cases += [(os.path.join(sharded, "pytorch_model.bin.index.json"), os.path.join(outdir, "sharded.json")),
              (sharded, os.path.join(outdir, "sharded.json"))]
    for path, expected in cases:
        try:
            with open(expected) as f:
                check_forward(path, json.load(f), z, res, outdir)
        except Exception as e:  # noqa: BLE001 - a harness error is a failure
            res.fail(os.path.basename(path), f"harness error: {type(e).__name__}: {e}")
    try:
        from .quantized import run_quantized
        run_quantized(z, os.path.join(outdir, "quantized"), res)
    except Exception as e:  # noqa: BLE001 - a harness error is a failure
        res.fail("torch quantized", f"harness error: {type(e).__name__}: {e}")
    try:
        check_hostile(outdir, z, res)
    except Exception as e:  # noqa: BLE001
        res.fail("torch hostile", f"harness error: {type(e).__name__}: {e}")
