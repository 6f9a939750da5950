#!/usr/bin/env python3
"""Speed of `ztfs stats` (value statistics and a 64-bin histogram of every
tensor), each figure against a baseline of the same run.

Run through scripts/bench-stats.sh, which builds ztfs, makes the project
venv and owns the work directory. Figures, each the median [min-max] over
--reps runs, interleaved with their baselines:

(a) `ztfs stats --json` of a safetensors model of float32 tensors
    (--gib in all, 64 MiB a tensor, page cache warm) beside `cat` of the
    same file to /dev/null, as bytes a second: target >= 0.5x.
(b) The same run beside numpy computing the same numbers on the arrays
    already in memory (isnan, isposinf, isneginf, == 0, the finite
    values' min, max, mean and std in float64, np.histogram of 64 bins
    over [min, max]), time for time: target >= 5x.
(c) `ztfs stats` of a Q4_K tensor (random blocks, bench/dequant.py's
    file) beside `ztfs cat --values` of it to /dev/null: target >= 0.5x.

A benchmark, not a test: nothing is asserted about time. It exits non-zero
only when something fails to run.
"""

import argparse
import os
import statistics
import time

from .dequant import write_file
from .harness import Failed, log
from .mount import timed

MIB = 1 << 20


def write_model(path, gib, seed=44):
    """A safetensors file of float32 tensors of 64 MiB, `gib` GiB in all;
    returns the tensors' names."""
    import json

    import numpy as np

    rng = np.random.default_rng(seed)
    n = max(1, int(gib * 16))
    per = 64 * MIB // 4
    names = [f"layers.{i}.weight" for i in range(n)]
    header = {name: {"dtype": "F32", "shape": [per // 4096, 4096],
                     "data_offsets": [i * per * 4, (i + 1) * per * 4]} for i, name in enumerate(names)}
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        for _ in names:
            f.write((rng.standard_normal(per, dtype=np.float32) * 0.02).tobytes())
    return names


def numpy_stats(arrays):
    """What `ztfs stats` computes, by numpy, on arrays in memory."""
    import numpy as np

    for a in arrays:
        np.isnan(a).sum(), np.isposinf(a).sum(), np.isneginf(a).sum(), (a == 0).sum()
        fin = a[np.isfinite(a)]
        lo, hi = float(fin.min()), float(fin.max())
        fin.mean(dtype=np.float64), fin.std(dtype=np.float64)
        np.histogram(fin, bins=64, range=(lo, hi))


def med(xs):
    return f"{statistics.median(xs):.3g} [{min(xs):.3g}-{max(xs):.3g}]"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ztfs", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    import numpy as np

    model = os.path.join(a.work, "model.safetensors")
    log(f"writing {model}: {a.gib:g} GiB of float32")
    names = write_model(model, a.gib)
    size = os.path.getsize(model)
    quant = os.path.join(a.work, "q4k.gguf")
    log(f"writing {quant}: a Q4_K tensor of [4096, 8192]")
    write_file(quant, 4096, 8192)
    for path in (model, quant):  # into the page cache
        with open(path, "rb") as f:
            while f.read(64 * MIB):
                pass
    with open(model, "rb") as f:
        hlen = int.from_bytes(f.read(8), "little")
    arrays = [np.fromfile(model, dtype=np.float32, count=64 * MIB // 4,
                          offset=8 + hlen + i * 64 * MIB) for i in range(len(names))]
    stats, cat, npy, qstats, qvalues = [], [], [], [], []
    jsonflag = ["--json", "--cache-mib", "256"]
    for rep in range(a.reps):
        log(f"rep {rep + 1}/{a.reps}")
        order = [0, 1, 2] if rep % 2 == 0 else [2, 1, 0]
        for k in order:
            if k == 0:
                stats.append(timed([a.ztfs, "stats", *jsonflag, model]))
            elif k == 1:
                cat.append(timed(["cat", model]))
            else:
                t0 = time.perf_counter()
                numpy_stats(arrays)
                npy.append(time.perf_counter() - t0)
        for k in order[:2]:
            if k == 0:
                qstats.append(timed([a.ztfs, "stats", *jsonflag, quant, "q4k"]))
            else:
                qvalues.append(timed([a.ztfs, "cat", "--values", quant, "q4k"]))
    gbs = lambda t: size / t / 1e9  # noqa: E731
    print(f"## ztfs stats: {len(names)} float32 tensors, {size / 2**30:.2f} GiB, "
          f"{os.cpu_count()} CPUs, {a.reps} reps\n")
    print("| figure | ztfs stats | baseline | ratio (ztfs/baseline speed) | target |")
    print("|---|---|---|---|---|")
    r = statistics.median(cat) / statistics.median(stats)
    print(f"| (a) `ztfs stats --json` vs `cat` to /dev/null, GB/s | {med([gbs(t) for t in stats])} "
          f"| {med([gbs(t) for t in cat])} | {r:.2f}x | >= 0.5x |")
    r = statistics.median(npy) / statistics.median(stats)
    print(f"| (b) `ztfs stats --json` (whole process) vs numpy on arrays in memory, s "
          f"| {med(stats)} | {med(npy)} | {r:.2f}x | >= 5x |")
    r = statistics.median(qvalues) / statistics.median(qstats)
    print(f"| (c) `ztfs stats` of a Q4_K [4096, 8192] vs `ztfs cat --values` of it, s "
          f"| {med(qstats)} | {med(qvalues)} | {r:.2f}x | >= 0.5x |")


if __name__ == "__main__":
    try:
        main()
    except Failed as e:
        log(f"bench-stats: {e}")
        raise SystemExit(2)
