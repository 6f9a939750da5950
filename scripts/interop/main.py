"""The run: argument parsing, then writing, forward, mutations and reverse
in order, the allowlist usage, timings and the summary line. Exit status as
the package docstring says.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import shutil
import signal
import sys
import tempfile
import time

import numpy as np

from . import __doc__ as OVERVIEW  # the package docstring: what is checked
from .zt.corpus import check_corpus
from .zt.forward import check_generated
from .zt.generate import gen_all
from .gguf.check import run_gguf
from .torch.check import run_torch
from .npz.check import run_npz
from .onnx.check import run_onnx
from .stats import run_stats
from .hurray.check import check_file, check_hurray_corpus
from .hurray.gen import gen_hurray
from .zt.known import KNOWN_DIFFERENCES
from .mount import MOUNT_STATS
from .zt.mutations import check_mutation, mutations
from .pack.check import run_pack
from .results import Results
from .zt.sharded import gen_sharded
from .safetensors.check import run_st_input
from .views.check import run_views
from .ztfs import Ztfs


PACKAGE_VERSION = "2.1.2"
# The repository root: scripts/interop/main.py is three levels down.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

faulthandler.enable()


def run_hurray(args, z, res: Results, outdir: str) -> tuple:
    """The Hurray half: pyhurray writes, ztfs reads (unless --package-only),
    then the Hurray corpus through pyhurray. Returns the three timings."""
    from importlib.metadata import version

    print(f"\n== hurray: writing files with pyhurray {version('pyhurray')} into {outdir}")
    t0 = time.monotonic()
    try:
        paths = gen_hurray(outdir, lambda s: print(s, flush=True))
    except Exception as e:  # noqa: BLE001 - a harness error is a failure
        res.fail("hurray", f"writing with pyhurray failed: {type(e).__name__}: {e}")
        paths = []
    res.check(bool(paths), "hurray", "pyhurray wrote no files")
    if args.only:
        paths = [p for p in paths if args.only in os.path.basename(p)]
    t_gen = time.monotonic() - t0
    t0 = time.monotonic()
    if z is not None:
        print("\n== hurray forward: pyhurray-written files through ztfs")
        for p in paths:
            try:
                check_file(p, z, res)
            except Exception as e:  # noqa: BLE001
                res.fail(os.path.basename(p), f"harness error: {type(e).__name__}: {e}")
    t_fwd = time.monotonic() - t0
    t0 = time.monotonic()
    if args.skip_corpus:
        print("\n== hurray reverse: skipped (--skip-corpus)")
    else:
        print(f"\n== hurray reverse: {args.corpus}/hurray/valid through pyhurray")
        check_hurray_corpus(args.corpus, res)
    return t_gen, t_fwd, time.monotonic() - t0


def main() -> int:
    # prog: run as `python -m interop`, argparse would otherwise say "__main__.py"
    ap = argparse.ArgumentParser(prog="interop", description=OVERVIEW.split("\n\n")[0])
    ap.add_argument("--ztfs", help="the ztfs binary (required unless --package-only)")
    ap.add_argument("--corpus", default=os.path.join(REPO, "corpus"))
    ap.add_argument("--package-only", action="store_true",
                    help="exercise the package alone: write, read back, probe the corpus")
    ap.add_argument("--skip-corpus", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="write generated files here and keep them")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per ztfs call")
    ap.add_argument("--only", metavar="SUBSTR",
                    help="check only the generated files (views: corpus files) whose name "
                         "contains SUBSTR")
    ap.add_argument("--suite", choices=("all", "zt", "hurray", "views", "safetensors", "gguf",
                                          "torch", "npz", "onnx", "pack", "stats"),
                    default="all",
                    help="run the zTensor checks, the Hurray checks (pyhurray), the .npy and "
                         "safetensors views of the mounts, safetensors files as input, the GGUF "
                         "checks (gguf-py), PyTorch checkpoints against a second reader and hostile "
                         "pickles (picklescan), .npz archives against numpy, ONNX models against onnx, "
                         "`ztfs stats` against numpy, "
                         "`ztfs pack` against "
                         "ztensor.convert, or all")
    args = ap.parse_args()

    t_start = time.monotonic()

    # SIGTERM and SIGHUP unwind like Ctrl-C, so every mount is released.
    def _terminate(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    try:
        from importlib.metadata import version

        pv = version("ztensor")
    except Exception:  # noqa: BLE001
        pv = "?"
    print(f"interop: ztensor {pv} (pinned {PACKAGE_VERSION}), numpy {np.__version__}, "
          f"python {sys.version.split()[0]}")
    res = Results()
    if pv != PACKAGE_VERSION:
        res.fail("setup", f"ztensor {pv} installed, expected {PACKAGE_VERSION}")

    z = None
    if not args.package_only:
        if not args.ztfs:
            ap.error("--ztfs is required unless --package-only")
        binary = os.path.abspath(args.ztfs)
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            print(f"interop: {binary} is not an executable file", file=sys.stderr)
            return 2
        z = Ztfs(binary, args.timeout)
        print(f"interop: ztfs at {binary}")

    if args.keep:
        tmp = os.path.abspath(args.keep)
        os.makedirs(tmp, exist_ok=True)
        cleanup = None
    else:
        tmp = tempfile.mkdtemp(prefix="ztfs-interop-")
        cleanup = tmp
    try:
        t_gen = t_fwd = t_rev = t_views = 0.0
        if args.suite in ("all", "zt"):
            print(f"\n== writing files with the package into {tmp}")
            t0 = time.monotonic()
            gens = gen_all(tmp, lambda s: print(s, flush=True))
            try:
                gens += gen_sharded(tmp, lambda s: print(s, flush=True), res)
            except Exception as e:  # noqa: BLE001 - a harness error is a failure
                res.fail("sharded", f"building the multi-file model failed: {type(e).__name__}: {e}")
            if args.only:
                gens = [g for g in gens if args.only in g.name]
            t_gen = time.monotonic() - t0

            print("\n== forward: package-written files through ztfs")
            t0 = time.monotonic()
            groups: dict = {}
            for g in gens:
                try:
                    check_generated(g, z, res, groups)
                except Exception as e:  # noqa: BLE001 - a harness error is a failure
                    res.fail(g.name, f"harness error: {type(e).__name__}: {e}")
            for group, members in sorted(groups.items()):
                values = {d for _, d in members}
                res.check(len(values) == 1, f"group {group}",
                          "files with the same tensors have different content digests "
                          f"(§6.4 says layout cannot reach it): {members}")
            print("\n== forward: broken copies, both readers must reject")
            for name, path, what in mutations(gens, tmp):
                try:
                    check_mutation(name, path, what, z, res)
                except Exception as e:  # noqa: BLE001
                    res.fail(name, f"harness error: {type(e).__name__}: {e}")
            t_fwd = time.monotonic() - t0

            t0 = time.monotonic()
            if args.skip_corpus:
                print("\n== reverse: skipped (--skip-corpus)")
            elif not os.path.isdir(args.corpus):
                res.fail("corpus", f"{args.corpus} is not a directory")
            else:
                print(f"\n== reverse: {args.corpus} through the package")
                check_corpus(args.corpus, z, res)
            t_rev = time.monotonic() - t0
        if args.suite in ("all", "hurray"):
            t_hr = run_hurray(args, z, res, os.path.join(tmp, "hurray"))
            t_gen, t_fwd, t_rev = t_gen + t_hr[0], t_fwd + t_hr[1], t_rev + t_hr[2]
        if args.suite in ("all", "gguf"):
            t0 = time.monotonic()
            run_gguf(args, z, res, os.path.join(tmp, "gguf"))
            t_fwd += time.monotonic() - t0
        if args.suite in ("all", "torch"):
            t0 = time.monotonic()
            run_torch(args, z, res, os.path.join(tmp, "torch"))
            t_fwd += time.monotonic() - t0
        if args.suite in ("all", "npz"):
            t0 = time.monotonic()
            run_npz(args, z, res, os.path.join(tmp, "npz"))
            t_fwd += time.monotonic() - t0
        if args.suite in ("all", "onnx"):
            t0 = time.monotonic()
            run_onnx(args, z, res, os.path.join(tmp, "onnx"))
            t_fwd += time.monotonic() - t0
        if args.suite in ("all", "stats"):
            t0 = time.monotonic()
            run_stats(args, z, res, os.path.join(tmp, "stats"))
            t_fwd += time.monotonic() - t0
        if args.suite in ("all", "views"):
            t0 = time.monotonic()
            run_views(args, z, res, tmp)
            t_views = time.monotonic() - t0
        if args.suite in ("all", "safetensors"):
            t0 = time.monotonic()
            run_st_input(args, z, res, tmp)
            t_views += time.monotonic() - t0
        if args.suite in ("all", "pack"):
            t0 = time.monotonic()
            run_pack(args, z, res, tmp)
            t_fwd += time.monotonic() - t0
    finally:
        if cleanup:
            shutil.rmtree(cleanup, ignore_errors=True)

    print("== known differences (allowlist)")
    for k in KNOWN_DIFFERENCES:
        files = list(dict.fromkeys(k.used))
        used = f"excused {len(files)}: {', '.join(files[:6])}" if files else "unused"
        print(f"  {k.key}: {used}\n      {k.reason}")

    total = time.monotonic() - t_start
    print(f"\n== timing: write {t_gen:.1f}s, forward {t_fwd:.1f}s, reverse {t_rev:.1f}s, "
          f"views {t_views:.1f}s, total {total:.1f}s"
          + (f"; {z.calls} ztfs calls, {z.seconds:.1f}s in ztfs" if z else ""))
    if MOUNT_STATS["mounts"]:
        print(f"   mounts: {MOUNT_STATS['mounts']} mounts, {MOUNT_STATS['files']} part files "
              f"({MOUNT_STATS['bytes'] / 1e6:.1f} MB) read through them, "
              f"{MOUNT_STATS['seconds']:.1f}s of the forward time")
    if res.failures:
        print(f"\n== {len(res.failures)} failures:")
        for f in res.failures[:200]:
            print("  " + f)
        if len(res.failures) > 200:
            print(f"  ... and {len(res.failures) - 200} more")
    print(f"interop: {res.passed} passed, {len(res.failures)} failed")
    return 1 if res.failures else 0
