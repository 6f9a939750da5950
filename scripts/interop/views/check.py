"""The views suite: the `.npy` and safetensors files a mount serves beside
the decoded ones, read with numpy and the safetensors package.

Which files: every .zt under corpus/valid, every .hrry under
corpus/hurray/valid, every .safetensors under corpus/safetensors/valid,
every .gguf under corpus/gguf/valid, the samples, and a model of the cases the corpus
lacks, written with the package (`write_edge`). Each is mounted once (a file that
fails to mount is skipped only when `ztfs check` refuses it too) and
checked by npy.py (every object's .npy files) and safetensors.py
(the model's safetensors view). Then: the files with bf16 or f8 parts again
with `--npy-dtypes ml`, after `import ml_dtypes`; the reference writers
(np.save, safetensors.numpy.save_file) on a few files; a sample mounted with
a small `--safetensors-header-max` and the big model (sharded.py), each
loaded as a sharded checkpoint.
"""

from __future__ import annotations

import glob
import json
import os
import time
import zlib

import numpy as np
import ztensor

from ..mount import is_mounted, mounted
from ..results import Results, short
from .model import Model
from .npy import ML_NAMES, check_against_np_save, check_object
from .safetensors import (SINGLE, check_against_save_file, check_bytes, check_table,
                                load_single, want_of)
from .sharded import INDEX, check_big, load_sharded
from ..ztfs import Ztfs

SAMPLES = ("tiny-llama.zt", "mixed-dtypes.zt", "tiny-llama.hrry", "sharded/model.zt")
# Files whose views are also compared with the reference writers' output.
REFERENCE_NPY = ("valid/dtypes-all.zt", "valid/ltypes-all.zt", "samples/tiny-llama.hrry")
REFERENCE_ST = ("valid/dtypes-all.zt", "samples/tiny-llama.zt")
# The small sharded case: this sample with this header limit (bytes).
# A header is padded to 4096 bytes, so no limit below 4088 holds a tensor:
# the sample needs more than 4 KB of entries (44 names, some of them escaped).
SHARD_SAMPLE, SHARD_LIMIT = "valid/names-hostile.zt", 4096


def write_edge(path: str) -> None:
    """A model of the cases the corpus lacks: an object named __metadata__
    (left out of safetensors), tied weights (one blob, two ranges), rank 64,
    zero-size, scalar, complex128 (left out), and bf16/f8/f4 beside them."""
    one = np.arange(8, dtype=np.float32).view(np.uint8)
    w = ztensor.Writer(path, canonical=False)
    try:
        w.set_attributes({"views": "edge", "n": 3})
        w.add("__metadata__", one, [8], "f32")
        w.add("tied.a", one, [2, 4], "f32")
        w.add("tied.b", one, [4, 2], "f32")
        w.add("rank64", np.ones(2, dtype=np.float32).view(np.uint8), [2] + [1] * 63, "f32")
        w.add("zero", np.zeros(0, dtype=np.uint8), [0, 5], "f64")
        w.add("scalar", np.ones(1, dtype=np.float64).view(np.uint8), [], "f64")
        w.add("c128", np.ones(4, dtype=np.float64).view(np.uint8), [2], "f64", logical="complex128")
        w.add("bf16", one, [16], "bf16")
        w.add("f8", one[:7], [7], "u8", logical="f8_e5m2")
        w.add("f4.odd", one[:2], [3], "u8", logical="f4_e2m1")
        w.add("f4.even", one[:3], [6], "u8", logical="f4_e2m1")
        w.finish()
    except BaseException:
        w.abandon()
        raise


def views_files(corpus: str) -> list[str]:
    def under(d, pattern):
        return sorted(glob.glob(os.path.join(corpus, d, "**", pattern), recursive=True))

    return (under("valid", "*.zt") + under(os.path.join("hurray", "valid"), "*.hrry")
            + under(os.path.join("safetensors", "valid"), "*.safetensors")
            + under(os.path.join("gguf", "valid"), "*.gguf")
            + [os.path.join(corpus, "samples", s) for s in SAMPLES])


def check_safetensors_view(model: Model, res: Results) -> int:
    """The model's safetensors view, single or sharded; the shard count."""
    where = f"{model.where} safetensors"
    if os.path.lexists(os.path.join(model.mnt, INDEX)):
        got = load_sharded(res, where, model.mnt)
    elif os.path.lexists(os.path.join(model.mnt, SINGLE)):
        got = load_single(res, where, os.path.join(model.mnt, SINGLE))
    else:
        res.check(not model.objects, where, f"neither {SINGLE} nor {INDEX} at the root, "
                                            f"though the model has {len(model.objects)} objects")
        return 0
    if got is None:
        return 0
    table, metas = got
    attrs = None
    if not model.hurray:
        rc, out, err = model.z.run("ls", [model.path], ("--json",))
        if res.check(rc == 0, where, f"`ztfs ls --json` exited {rc}: {short(err)}"):
            attrs = json.loads(out).get("attributes")
    check_table(model, res, where, table, metas, attrs)
    check_bytes(res, where, table, lambda n: want_of(model, n),
                sorted(set(table) & set(model.objects)))
    return len(metas)


def check_views_file(z: Ztfs, res: Results, path: str, label: str, tmp: str,
                     mode: str = "numpy", flags: tuple = ()) -> set:
    """Mounts one file and checks its views; the .npy descrs found."""
    where = f"{label} [views{' ' + mode if mode != 'numpy' else ''}]"
    descrs: set = set()
    fails = len(res.failures)
    with mounted(z, path, res, where, flags) as (rc, err, mnt):
        if rc != 0 or not is_mounted(mnt):
            rc_c, _, err_c = z.run("check", [path])
            if rc_c != 0:
                print(f"skip {label}: `ztfs check` exits {rc_c}: {short(err_c, 100)}")
                return descrs
            res.fail(where, f"`ztfs mount` exited {rc} though `ztfs check` passes: {short(err)}")
            return descrs
        model = Model(z, path, mnt, res, where)
        for o in model.objects.values():
            descrs.update(check_object(model, o, res, mode))
        nst = check_safetensors_view(model, res) if mode == "numpy" else 0
        seed = zlib.crc32(label.encode())
        if mode == "numpy" and label in REFERENCE_NPY:
            for o in model.objects.values():
                for f in sorted(e for e in os.listdir(o.dir) if e.endswith(".npy")):
                    check_against_np_save(res, f"{where} {o.name[:40]!r} {f} vs np.save",
                                          os.path.join(o.dir, f), tmp, seed)
        if mode == "numpy" and label in REFERENCE_ST and nst == 1:
            check_against_save_file(res, f"{where} vs save_file",
                                    os.path.join(mnt, SINGLE), tmp, seed)
    bad = len(res.failures) - fails
    print(f"{'ok  ' if not bad else 'FAIL'} {label}: {len(model.objects)} objects, "
          f"{len(descrs)} .npy dtypes" + (f", {bad} failures" if bad else ""), flush=True)
    return descrs


def check_ml(z: Ztfs, res: Results, files: list, tmp: str) -> None:
    """The files whose .npy views are void-typed (bf16, f8), mounted with
    `--npy-dtypes ml`: after `import ml_dtypes` the descrs are its names."""
    import ml_dtypes

    if not res.check(bool(files), "views ml", "no file with bf16 or f8 parts was found"):
        return
    seen: set = set()
    for path, label in files:
        seen |= check_views_file(z, res, path, label, tmp, "ml", ("--npy-dtypes", "ml"))
    for d in sorted(seen & ML_NAMES):
        res.check(np.dtype(d) == np.dtype(getattr(ml_dtypes, d)), "views ml",
                  f"descr {d!r} is not ml_dtypes.{d}")
    res.check("bfloat16" in seen and bool(seen & (ML_NAMES - {"bfloat16"})), "views ml",
              f"the ml mounts gave descrs {sorted(seen)}: no bfloat16 or no float8 name")


def check_small_sharded(z: Ztfs, res: Results, path: str) -> None:
    where = f"{SHARD_SAMPLE} [views sharded]"
    flags = ("--safetensors-header-max", str(SHARD_LIMIT))
    with mounted(z, path, res, where, flags) as (rc, err, mnt):
        if not res.check(rc == 0 and is_mounted(mnt), where,
                         f"`ztfs mount {' '.join(flags)}` exited {rc}: {short(err)}"):
            return
        model = Model(z, path, mnt, res, where)
        res.check(os.path.lexists(os.path.join(mnt, INDEX)), where,
                  f"no {INDEX} with a header limit of {SHARD_LIMIT} bytes")
        n = check_safetensors_view(model, res)
        res.check(n >= 2, where, f"{n} shard(s) with a header limit of {SHARD_LIMIT} bytes")
        print(f"{'ok  ' if n >= 2 else 'FAIL'} {where}: {n} shards", flush=True)


def run_views(args, z: Ztfs, res: Results, tmpdir: str) -> None:
    """The suite; `args` gives corpus and only."""
    if z is None:
        print("\n== views: skipped (--package-only)")
        return
    tmp = os.path.join(tmpdir, "views")
    os.makedirs(tmp, exist_ok=True)
    t0 = time.monotonic()
    print(f"\n== views: .npy and safetensors files of the mounts of {args.corpus}")
    void = []
    edge = os.path.join(tmp, "views-edge.zt")
    write_edge(edge)
    for path in views_files(args.corpus) + [edge]:
        label = os.path.relpath(path, args.corpus) if path != edge else "views-edge.zt"
        if args.only and args.only not in label:
            continue
        if not os.path.isfile(path):
            res.fail(label, "missing")
            continue
        try:
            descrs = check_views_file(z, res, path, label, tmp)
        except Exception as e:  # noqa: BLE001 - a harness error is a failure
            res.fail(label, f"views harness error: {type(e).__name__}: {e}")
            continue
        if descrs & {"<V2", "|V1"}:
            void.append((path, label))
    if void or not args.only:
        print(f"\n== views: --npy-dtypes ml ({len(void)} files)")
        check_ml(z, res, void, tmp)
    print("\n== views: sharded safetensors")
    if not args.only or args.only in SHARD_SAMPLE:
        check_small_sharded(z, res, os.path.join(args.corpus, SHARD_SAMPLE))
    if not args.only or args.only in "big":
        fails = len(res.failures)
        line = check_big(z, res, tmp)
        print(f"{'ok  ' if len(res.failures) == fails else 'FAIL'} big model: {line}", flush=True)
    print(f"views: {time.monotonic() - t0:.1f}s")
