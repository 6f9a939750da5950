"""The ONNX suite: models written by the PyPI onnx package, and the real
models of the silero-vad wheel, read by ztfs as onnx reads them; onnx's
`numpy_helper.to_array(tensor, base_dir)` is the truth for every value.

Forward, per model (models.py, silero.py): `ztfs check` accepts it; `ztfs
manifest` lists every tensor onnx sees with its dims, type and storage,
leaves out what has no fixed-width bytes, and gives the opsets, producer,
graph inputs, outputs and op counts of all graphs (manifest.py); `ztfs
cat` of each tensor is to_array's bytes (the packed bytes for the sub-byte
types, oracle.py); a mount serves each tensor's `data` (read by preads,
mmap and whole), a `data.npy` numpy loads as to_array's dtype, shape and
values, and a `model.safetensors` the safetensors package reads alike;
`ztfs pack` gives a .zt whose tensors the ztensor package reads as the
same bytes and shape. What ztfs leaves out is never served: a packed
sub-byte tensor it lists has no `data`, and its `data.raw` is onnx's
packed bytes. A ~100 MB transformer with external weights is read whole
through a mount (big.py). Hostile files must be refused naming the rule,
and onnx's own verdict on each is printed (hostile.py).

Modules: oracle.py (what onnx sees: tensors of all graphs, values, ops),
models.py (the onnx-written models), handmade.py and wire.py (protobuf
written by hand: unpacked and split typed fields, a graph in two parts),
silero.py (the wheel's files), big.py, hostile.py, manifest.py, and this
file (cat, mount, pack, and the run). With --package-only the models are
written and read back by onnx alone, and onnx's verdicts printed.
"""

from __future__ import annotations

import collections
import json
import os
import time

import numpy as np
import onnx

from . import big, hostile, models, oracle
from .manifest import check_manifest
from .silero import silero_files
from ..mount import MOUNT_STATS, mounted, read_part_file, read_whole
from ..pack.common import check_packed, pack, st_tensors, zt_objects
from ..results import Results, short

# .npy of these is |V2 / |V1 (or the ml_dtypes type under --npy-dtypes ml):
# compared by bytes, shape and width.
ML_TYPES = {"BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
            "FLOAT8E8M0"}
RESERVED_ROOT = ("manifest.json", "digest")


def escaped(name: str) -> str:
    """docs/tree.md, Names, rule 1: '%', '/', control characters and a
    leading '.' as %XX of their UTF-8 bytes."""
    out = []
    for i, ch in enumerate(name):
        if ch in "%/" or ord(ch) < 0x20 or ord(ch) == 0x7F or (i == 0 and ch == "."):
            out.append("".join(f"%{b:02X}" for b in ch.encode()))
        else:
            out.append(ch)
    return "".join(out)


def npy_matches(got: np.ndarray, a: np.ndarray, want: bytes, tname: str) -> bool:
    if tname == "FLOAT4E2M1":  # |u1, the packed bytes (docs/tree.md)
        return got.dtype == np.uint8 and got.shape == (len(want),) and got.tobytes() == want
    if tname in ML_TYPES:
        return (got.dtype.itemsize == a.dtype.itemsize and (got.dtype.kind == "V" or
                got.dtype == a.dtype) and got.shape == a.shape and got.tobytes() == want)
    return got.dtype == a.dtype and got.shape == a.shape and got.tobytes() == want


def in_safetensors(t) -> bool:
    """Whether model.safetensors must hold the tensor (docs/tree.md: no C128;
    F4 needs whole bytes)."""
    tname = oracle.NAME_OF[t.data_type]
    if tname == "COMPLEX128" or t.data_type in oracle.PACKED.values():
        return False
    return not (tname == "FLOAT4E2M1" and int(np.prod(t.dims)) % 2)


def check_model(label: str, path: str, z, res: Results, outdir: str, base: str = None):
    """`base`: the folder onnx reads external data from, if not the model's."""
    where = f"onnx {label}"
    m = oracle.load(path)
    base = base or os.path.dirname(os.path.abspath(path))
    ots = oracle.tensors(m)
    exp = {n: oracle.expected(t, base) for n, t in ots.items()
           if t.kind != "sparse" and t.data_type in oracle.NAME_OF}
    rc, _, err = z.run("check", [path])
    if not res.check(rc == 0, where, f"ztfs check exited {rc}: {short(err)}"):
        return
    rc, out, err = z.run("manifest", [path])
    if not res.check(rc == 0, where, f"ztfs manifest exited {rc}: {short(err)}"):
        return
    with open(path, "rb") as f:
        tensors, left = check_manifest(where, m, ots, json.loads(out), res, f.read())
    served = {n: ots[n] for n in tensors if n in ots}
    kinds = collections.Counter(t.storage for t in ots.values())
    print(f"  {label}: {len(ots)} tensors {dict(kinds)}, {len(left)} left out", flush=True)

    for name, t in ots.items():
        rc, data, err = z.run("cat", [path, name])
        if name in served and t.data_type in oracle.FIXED.values():
            res.check(rc == 0 and data == exp[name][1], where,
                      f"cat {name!r}: exit {rc}, {len(data)} bytes, onnx has "
                      f"{len(exp[name][1])}: {short(err)}")
        elif name in served:
            res.check(rc != 0 or data == exp[name][1], where,
                      f"cat {name!r} ({oracle.NAME_OF[t.data_type]}) gave bytes that are not "
                      f"onnx's packed bytes")
        else:
            res.check(rc != 0 and not data, where, f"cat {name!r}, left out, exited {rc} "
                                                   f"with {len(data)} bytes")
    check_mount(where, path, served, exp, z, res)
    check_pack(where, label, path, served, exp, left, z, res, outdir)


def check_mount(where: str, path: str, served: dict, exp: dict, z, res: Results):
    t0 = time.monotonic()
    with mounted(z, path, res, where) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"ztfs mount exited {rc}: {short(err)}"):
            return
        dirs = {}
        for e in os.listdir(mnt):
            if os.path.isfile(os.path.join(mnt, e, "meta.json")):
                dirs[json.loads(read_whole(os.path.join(mnt, e, "meta.json")))["name"]] = e
        res.check(set(dirs) == set(served), where,
                  f"object directories: missing {sorted(set(served) - set(dirs))[:4]}, "
                  f"extra {sorted(set(dirs) - set(served))[:4]}")
        st_path = os.path.join(mnt, "model.safetensors")
        st = st_tensors(st_path)[0] if os.path.exists(st_path) else {}
        for name, t in served.items():
            if name not in dirs:
                continue
            tname = oracle.NAME_OF[t.data_type]
            a, want = exp[name]
            d = os.path.join(mnt, dirs[name])
            e = escaped(name)
            if len(e) <= 251 and name not in RESERVED_ROOT and not name.endswith(
                    (".json", ".safetensors")):
                res.check(dirs[name] == e, where, f"{name!r} is at {dirs[name]!r}, not {e!r}")
            if t.data_type in oracle.PACKED.values():
                res.check(not os.path.exists(os.path.join(d, "data")) and
                          not os.path.exists(os.path.join(d, "data.npy")), where,
                          f"{name!r} ({tname}): served as `data`, which zTensor has no type for")
                raw = os.path.join(d, "data.raw")
                res.check(os.path.exists(raw) and read_whole(raw) == want, where,
                          f"{name!r} ({tname}): data.raw is not onnx's packed bytes")
                res.check(name not in st, where, f"{name!r} ({tname}) is in model.safetensors")
                continue
            for ok, what in read_part_file(os.path.join(d, "data"), want, f"{where}\0{name}"):
                res.check(ok, where, f"{name!r} data: {what}")
            try:
                got = np.load(os.path.join(d, "data.npy"))
                res.check(npy_matches(got, a, want, tname), where,
                          f"{name!r} ({tname}): data.npy {got.dtype}{got.shape}, onnx "
                          f"{a.dtype}{a.shape}, bytes equal: {got.tobytes() == want}")
            except (OSError, ValueError) as e:
                res.fail(where, f"{name!r} ({tname}): data.npy: {type(e).__name__}: {e}")
            if in_safetensors(t):
                s = st.get(name)
                res.check(s is not None and s.shape == t.dims and s.data == want, where,
                          f"{name!r} ({tname}): model.safetensors has "
                          + (f"{s.dtype}{s.shape}, {len(s.data)} bytes" if s else "no such tensor"))
            else:
                res.check(name not in st, where, f"{name!r} ({tname}) is in model.safetensors")
    MOUNT_STATS["mounts"] += 1
    MOUNT_STATS["seconds"] += time.monotonic() - t0


def check_pack(where: str, label: str, path: str, served: dict, exp: dict, left: dict, z,
               res: Results, outdir: str):
    """`ztfs pack`; refusing a model whose tensors are not all packable is
    fine (said so), packing wrong bytes or dropping a tensor is not."""
    out = os.path.join(outdir, label.replace("/", "_") + ".zt")
    rc, _, err = pack(z, path, out)
    packable = {n for n, t in served.items() if t.data_type in oracle.FIXED.values()}
    whole = not left and packable == set(served)
    if rc != 0:
        if whole:
            res.fail(where, f"ztfs pack exited {rc}: {short(err)}")
        else:
            print(f"  {label}: ztfs pack refuses it ({short(err, 100)})", flush=True)
        return
    objs = zt_objects(out)
    res.check(set(objs) == packable, where, f"packed objects: missing "
              f"{sorted(packable - set(objs))[:4]}, extra {sorted(set(objs) - packable)[:4]}")
    for n in sorted(packable & set(objs)):
        o, (a, want) = objs[n], exp[n]
        part = o.parts.get("data")
        res.check(part is not None and part.data == want and list(o.shape) == served[n].dims,
                  where, f"{n!r}: the packed tensor is not onnx's ({list(o.shape)}, "
                         f"{len(part.data) if part else None} bytes)")
    check_packed(z, res, where, out)


def run_onnx(args, z, res: Results, outdir: str):
    from importlib.metadata import version

    print(f"\n== onnx: models written by onnx {onnx.__version__} (protobuf "
          f"{version('protobuf')}) and silero-vad's, through ztfs")
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(42)
    t0 = time.monotonic()
    cases = []
    try:
        cases = models.write_all(os.path.join(outdir, "models"), rng)
    except Exception as e:  # noqa: BLE001 - a harness error is a failure
        res.fail("onnx", f"writing the models with onnx failed: {type(e).__name__}: {e}")
    silero = silero_files()
    res.check(bool(silero), "onnx silero", "silero-vad is not installed (a pin of venv.sh)")
    cases += silero
    big_path = None
    if not args.only or args.only in "big":
        try:
            big_path = big.write_big(outdir, rng)
        except Exception as e:  # noqa: BLE001
            res.fail("onnx big", f"writing the model failed: {type(e).__name__}: {e}")
    hostiles = []
    try:
        hostiles = hostile.hostile(os.path.join(outdir, "hostile"), rng)
    except Exception as e:  # noqa: BLE001
        res.fail("onnx refused", f"writing the hostile files failed: {type(e).__name__}: {e}")
    if args.only:
        cases = [c for c in cases if args.only in c[0]]
        hostiles = [h for h in hostiles if args.only in h.label]
    print(f"  wrote {len(cases)} models, {len(hostiles)} hostile files in "
          f"{time.monotonic() - t0:.1f}s", flush=True)
    if z is None:  # --package-only: the models checked against onnx alone
        for label, path, *truth in cases:
            try:
                base = truth[0] if truth else os.path.dirname(path)
                for t in oracle.tensors(oracle.load(path)).values():
                    if t.kind != "sparse" and t.data_type in oracle.NAME_OF:
                        oracle.expected(t, base)
                res.ok()
            except Exception as e:  # noqa: BLE001
                res.fail(f"onnx {label}", f"onnx cannot read it: {type(e).__name__}: {e}")
        print("  what onnx itself does with the hostile files:")
        for h in hostiles:
            print(f"  {h.label} ({h.what}): onnx: {oracle.verdict(h.path)}")
        return
    packdir = os.path.join(outdir, "packed")
    os.makedirs(packdir, exist_ok=True)
    for label, path, *truth in cases:
        try:
            check_model(label, path, z, res, packdir, *truth)
        except Exception as e:  # noqa: BLE001 - a harness error is a failure
            res.fail(f"onnx {label}", f"harness error: {type(e).__name__}: {e}")
    if big_path:
        try:
            big.check_big(big_path, z, res)
        except Exception as e:  # noqa: BLE001
            res.fail("onnx big", f"harness error: {type(e).__name__}: {e}")
    verdicts = []
    for h in hostiles:
        try:
            hostile.check_hostile(h, z, res, verdicts)
        except Exception as e:  # noqa: BLE001
            res.fail(f"onnx refused {h.label}", f"harness error: {type(e).__name__}: {e}")
    print("  what onnx itself does with the hostile files:")
    for v in verdicts:
        print(v)
