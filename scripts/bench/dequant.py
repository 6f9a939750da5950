#!/usr/bin/env python3
"""Speed of a quantized tensor's values: the dequantizer, and data.npy
through a mount.

Run through scripts/bench-dequant.sh, which builds ztfs, makes the project
venv and owns the work directory. One GGUF file, written by gguf-py's
GGUFWriter, holds a Q4_K tensor of ROWS x COLS values (random blocks with
finite f16 scales) and an F32 tensor of as many values. Figures, each the
median [min-max] over --reps runs, every ratio against a baseline measured
in the same run, interleaved with it:

(a) `ztfs cat --values FILE q4k > /dev/null` (the whole process: exec,
    open, dequantize on every core, write) beside gguf-py 0.19.0's
    `quants.dequantize` of the same blocks in this process (the blocks in
    memory already): target >= 10x.
(b) q4k/data.npy read whole (1 MiB reads) through a fresh mount beside
    f32/data.npy, the same bytes, through the same mount, read the same
    way (the file in the page cache for both): target >= 0.5x. FUSE's
    round trips set the ceiling; the dequantizing happens on the FUSE
    worker, one read at a time.
(c) The dequantizer on one core (`taskset -c 0 ztfs cat --values`), as
    values' bytes a second, beside numpy copying a buffer of the output's
    size on one core (the memory's rate: the physical limit).

A benchmark, not a test: nothing is asserted about time. It exits non-zero
only when something fails to run.
"""

import argparse
import os
import statistics
import sys
import time

from .harness import Failed, Mount, log, run as run_bench
from .mount import timed

MIB = 1 << 20


def write_file(path, rows, cols, seed=40):
    """The GGUF file: q4k (random Q4_K blocks, finite f16 d and dmin) and
    f32 (as many float32 values); returns the q4k blocks."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    blocks = rows * cols // 256
    b = rng.integers(0, 256, (blocks, 144), dtype=np.uint8)
    scales = (rng.random((blocks, 2), dtype=np.float32) * 0.01).astype("<f2")
    b[:, 0:4] = scales.view(np.uint8).reshape(blocks, 4)
    b = b.reshape(rows, cols // 256 * 144)
    w = gguf.GGUFWriter(path, "llama")
    w.add_tensor("q4k", b, raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    w.add_tensor("f32", rng.standard_normal((rows, cols), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return b


def read_whole(path, bs=MIB):
    """Seconds to read `path` to its end in `bs` reads."""
    fd = os.open(path, os.O_RDONLY)
    try:
        t0 = time.perf_counter()
        while os.read(fd, bs):
            pass
        return time.perf_counter() - t0
    finally:
        os.close(fd)


def med(xs):
    return f"{statistics.median(xs):.3g} [{min(xs):.3g}-{max(xs):.3g}]"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ztfs", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--cols", type=int, default=8192)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    if a.cols % 256:
        raise Failed("--cols must be a multiple of 256 (a Q4_K block)")
    Mount.ztfs_bin = a.ztfs
    import numpy as np
    from gguf import quants
    from gguf.constants import GGMLQuantizationType as T

    path = os.path.join(a.work, "bench.gguf")
    log(f"writing {path}: q4k and f32 of [{a.rows}, {a.cols}]")
    blocks = write_file(path, a.rows, a.cols)
    values = a.rows * a.cols
    out_bytes = values * 4
    with open(path, "rb") as f:  # into the page cache
        while f.read(64 * MIB):
            pass
    cpus = os.cpu_count()
    ztfs_cat, gguf_py, q4k, f32, one_core, copy = [], [], [], [], [], []
    src = np.empty(out_bytes, dtype=np.uint8)
    src.fill(1)
    dst = np.empty_like(src)
    for rep in range(a.reps):
        log(f"rep {rep + 1}/{a.reps}")
        order = [0, 1] if rep % 2 == 0 else [1, 0]
        for k in order:
            if k == 0:
                ztfs_cat.append(timed([a.ztfs, "cat", "--values", path, "q4k"]))
            else:
                t0 = time.perf_counter()
                quants.dequantize(blocks, T.Q4_K)
                gguf_py.append(time.perf_counter() - t0)
        mnt = os.path.join(a.work, f"mnt{rep}")
        os.makedirs(mnt, exist_ok=True)
        with Mount.fresh(path, mnt):
            for k in order:
                name = ["q4k", "f32"][k]
                t = read_whole(os.path.join(mnt, name, "data.npy"))
                (q4k if k == 0 else f32).append(t)
        for k in order:
            if k == 0:
                one_core.append(timed(["taskset", "-c", "0", a.ztfs, "cat", "--values", path, "q4k"]))
            else:
                t0 = time.perf_counter()
                np.copyto(dst, src)
                copy.append(time.perf_counter() - t0)
    gb = lambda t: out_bytes / t / 1e9  # noqa: E731
    print(f"## Dequantization: Q4_K [{a.rows}, {a.cols}] ({values / 1e6:.1f} M values, "
          f"{out_bytes / MIB:.0f} MiB of f32), {cpus} CPUs, {a.reps} reps\n")
    print("| figure | ztfs | baseline | ratio (ztfs/baseline speed) | target |")
    print("|---|---|---|---|---|")
    r = statistics.median(gguf_py) / statistics.median(ztfs_cat)
    print(f"| (a) `cat --values` (whole process) vs gguf-py `quants.dequantize` in-process, s "
          f"| {med(ztfs_cat)} | {med(gguf_py)} | {r:.1f}x | >= 10x |")
    r = statistics.median(f32) / statistics.median(q4k)
    print(f"| (b) `q4k/data.npy` vs `f32/data.npy`, same mount, GB/s "
          f"| {med([gb(t) for t in q4k])} | {med([gb(t) for t in f32])} | {r:.2f}x | >= 0.5x |")
    r = statistics.median(copy) / statistics.median(one_core)
    print(f"| (c) dequantizer on one core (`taskset -c 0 cat --values`) vs numpy copy of the "
          f"output size on one core, GB/s of f32 | {med([gb(t) for t in one_core])} "
          f"| {med([gb(t) for t in copy])} | {r:.2f}x | - |")
    sys.stdout.flush()


if __name__ == "__main__":
    run_bench(main, "bench-dequant")
