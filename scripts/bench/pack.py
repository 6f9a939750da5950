#!/usr/bin/env python3
"""Write-speed benchmark of `ztfs pack` beside cp and zstd on the same bytes.

Run through scripts/bench-pack.sh, which builds ztfs, makes the project
venv and owns the work directory. The source is a safetensors file of about
SIZE bytes written by safetensors.numpy.save_file: a few hundred tensors
of varied sizes (log-normal, 4 KiB to a few percent of SIZE), most bf16
(ml_dtypes) and some f32, of seeded normal values, which zstd -3 shrinks
by about 10-20% as it does real weights (the sign and exponent bits repeat,
the mantissa does not).

The source is read once before the timed runs, so every run reads it from
a warm page cache: the figures are of writing, not of reading the disk.
Each repetition runs every command once, in an order that rotates from one
repetition to the next, each to a destination that does not exist (it is
removed, and the removal synced, untimed, before each run):

  cp + sync     `cp SRC DST && sync DST`: the copy made durable, which is
                what pack does (it fsyncs its output before renaming it
                into place, src/pack/out.rs)
  cp            plain `cp SRC DST`, for context: the page cache's speed
  pack          `ztfs pack SRC -o DST` (canonical: 64 KiB placement, xxh3
                digest of every part, fsync, rename)
  pack --zstd   `ztfs pack SRC -o DST --zstd 3 --frame-size 1M`
  zstd -3 -T1   `zstd -3 -T1 -q SRC -o DST` (one worker thread, no fsync)

Rates are SRC's size over the median wall time, in GB/s (10^9 bytes). CPU
time is the children's user + system time (getrusage), so "per core" is
SRC's size over CPU seconds. The pack/cp ratio compares pack with cp +
sync (the target is 0.8x or better). A benchmark, not a test: nothing is
asserted about time; it exits non-zero only when something fails to run
(a failing command is named in a table of its own; the others still run).
"""

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

GB = 1e9


def log(msg: str) -> None:
    print(f"bench-pack: {msg}", file=sys.stderr, flush=True)


def parse_size(s: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * units[s[-1].upper()]) if s[-1].upper() in units else int(s)


def make_source(path: str, size: int, seed: int) -> int:
    """Writes the safetensors source; returns its tensor count."""
    import ml_dtypes
    import numpy as np
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    n = max(8, min(400, size // (256 << 10)))
    weights = rng.lognormal(0.0, 1.5, n)
    sizes = np.maximum(4096, weights / weights.sum() * size).astype(np.int64)
    tensors = {}
    for i, nbytes in enumerate(sizes):
        if i % 7 == 3:  # a norm or bias: f32
            a = (rng.standard_normal(int(nbytes) // 4, dtype=np.float32) * 0.02 + 1.0)
        else:
            a = (rng.standard_normal(int(nbytes) // 2, dtype=np.float32) * 0.02).astype(
                ml_dtypes.bfloat16)
        tensors[f"model.layers.{i // 7}.w{i % 7}.weight"] = a
    save_file(tensors, path, metadata={"format": "pt"})
    return len(tensors)


def run(argv: list, shell: bool = False) -> tuple[float, float]:
    """Runs a command; returns (wall seconds, CPU seconds of the children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    cp = subprocess.run(argv, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cp.returncode != 0:
        err = " ".join(cp.stderr.decode("utf-8", "replace").strip().splitlines()[:2])
        raise RuntimeError(f"exited {cp.returncode}: {err[:300]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def drop(path: str) -> None:
    """Removes DST, then syncs, so no run pays for the previous run's
    writeback."""
    if os.path.exists(path):
        os.remove(path)
    os.sync()


def fmt(xs: list) -> str:
    return f"{statistics.median(xs):.2f} s [{min(xs):.2f}–{max(xs):.2f}]"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ztfs", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--size", default="1G")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    size = parse_size(args.size)
    src = os.path.join(args.work, "src.safetensors")
    dst = os.path.join(args.work, "dst")
    log(f"writing a {size / GB:.2f} GB safetensors source")
    t0 = time.monotonic()
    count = make_source(src, size, args.seed)
    src_len = os.path.getsize(src)
    log(f"{count} tensors, {src_len} bytes in {time.monotonic() - t0:.1f} s; reading it once (warm)")
    run(["cat", src], shell=False)
    cmds = {
        "cp + sync": (f'cp "{src}" "{dst}" && sync "{dst}"', True),
        "cp": (["cp", src, dst], False),
        "ztfs pack": ([args.ztfs, "pack", src, "-o", dst], False),
        "ztfs pack --zstd": ([args.ztfs, "pack", src, "-o", dst, "--zstd=3",
                              "--frame-size", "1M"], False),
        "zstd -3 -T1": (["zstd", "-3", "-T1", "-q", src, "-o", dst], False),
    }
    wall = {k: [] for k in cmds}
    cpu = {k: [] for k in cmds}
    out_len = {}
    names = list(cmds)
    failed = {}
    for rep in range(args.reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for k in order:
            if k in failed:
                continue
            drop(dst)
            try:
                w, c = run(*cmds[k])
            except RuntimeError as e:  # reported in the table; the others go on
                failed[k] = str(e)
                log(f"{k} failed: {failed[k]}")
                continue
            wall[k].append(w)
            cpu[k].append(c)
            out_len[k] = os.path.getsize(dst)
        log(f"rep {rep + 1}/{args.reps}: " + ", ".join(
            f"{k} {wall[k][-1]:.2f}s" for k in names if k not in failed))
    drop(dst)
    if failed:
        print("| command | failed |\n|---|---|")
        for k, why in failed.items():
            print(f"| {k} | {why} |")
        print()
        for k in failed:
            names.remove(k)
            wall[k] = cpu[k] = [float("nan")]
            out_len[k] = 0
    rate = {k: src_len / statistics.median(v) / GB if k not in failed else float("nan")
            for k, v in wall.items()}
    per_core = {k: src_len / max(statistics.median(v), 1e-9) / GB if k not in failed
                else float("nan") for k, v in cpu.items()}
    fs = subprocess.run(["stat", "-f", "-c", "%T", args.work], capture_output=True,
                        text=True).stdout.strip()
    print(f"`ztfs pack` against cp and zstd ({time.strftime('%Y-%m-%d')}; {count} tensors, "
          f"{src_len / GB:.3f} GB safetensors source (bf16 and f32); Linux "
          f"{platform.release()}, {os.cpu_count()} CPUs, {fs} at {args.work}; medians of "
          f"{args.reps}, order rotating; the source read once first, so warm in the page "
          f"cache; load average before the runs ended: {os.getloadavg()[0]:.2f})\n")
    print("| command | wall time, median [min–max] | GB/s | CPU s (median) | output |")
    print("|---|---|---|---|---|")
    for k in names:
        print(f"| {k} | {fmt(wall[k])} | {rate[k]:.2f} | {statistics.median(cpu[k]):.2f} "
              f"| {out_len[k]:,} B ({out_len[k] / src_len:.3f}x) |")
    print()
    print(f"pack / (cp + sync): {rate['ztfs pack'] / rate['cp + sync']:.2f}x "
          f"(target >= 0.8x); pack / plain cp: {rate['ztfs pack'] / rate['cp']:.2f}x")
    z, p = "zstd -3 -T1", "ztfs pack --zstd"
    if failed:
        return 1
    print(f"pack --zstd / zstd -3 -T1: {rate[p] / rate[z]:.2f}x wall, "
          f"{per_core[p] / per_core[z]:.2f}x per core ({per_core[p]:.3f} vs "
          f"{per_core[z]:.3f} GB per CPU-second); output {out_len[p] / out_len[z]:.3f}x "
          f"zstd's ({out_len[p]:,} vs {out_len[z]:,} bytes; pack adds 1 MiB frames' seek "
          f"tables, 64 KiB placement, the manifest, and stores incompressible tensors raw; "
          f"zstd does not fsync, pack does)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, OSError) as e:
        log(f"failed: {e}")
        sys.exit(1)
