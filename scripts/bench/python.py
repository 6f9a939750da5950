"""`ztfs.open` in-process, against the readers a Python user has, on one
machine, page cache warm: every tensor of a 1 GiB safetensors model read
into numpy and touched (a sum of each), by

  ztfs         ztfs.safe_open(path, framework="np")
  safetensors  safetensors.safe_open(path, framework="np")
  fromfile     np.fromfile of the whole file, each tensor a view of it

medians of --reps runs; the ratios are rates, ztfs's over the other's
(above 1: ztfs is faster). Run by scripts/bench-python.sh with the wheel's
venv (the `ztfs` imported is the wheel's).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

MIB = 1 << 20


def write_model(path, total_mib, tensor_mib):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(1)
    n = total_mib // tensor_mib
    rows = tensor_mib * MIB // 4 // 1024
    tensors = {f"layers.{i}.weight": rng.standard_normal((rows, 1024), dtype=np.float32)
               for i in range(n)}
    save_file(tensors, path)
    return list(tensors)


def warm(path):
    with open(path, "rb") as f:
        while f.read(64 * MIB):
            pass


def load_ztfs(path, names):
    import ztfs

    s = 0.0
    with ztfs.safe_open(path, framework="np") as f:
        for k in names:
            s += float(f.get_tensor(k).sum())
    return s


def load_safetensors(path, names):
    from safetensors import safe_open

    s = 0.0
    with safe_open(path, framework="np") as f:
        for k in names:
            s += float(f.get_tensor(k).sum())
    return s


def load_fromfile(path, names):
    import json
    import struct

    whole = np.fromfile(path, dtype=np.uint8)
    n = struct.unpack("<Q", whole[:8].tobytes())[0]
    header = json.loads(whole[8:8 + n].tobytes())
    s = 0.0
    for k in names:
        a, b = header[k]["data_offsets"]
        s += float(whole[8 + n + a:8 + n + b].view(np.float32).sum())
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--tensor-mib", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", default=None, help="where the model is written (default: a temporary folder)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="ztfs-bench-python-")
    path = os.path.join(work, "model.safetensors")
    print(f"writing {a.size_mib} MiB ({a.size_mib // a.tensor_mib} tensors) in {path}", file=sys.stderr)
    names = write_model(path, a.size_mib, a.tensor_mib)
    size = os.path.getsize(path)
    readers = {"ztfs": load_ztfs, "safetensors": load_safetensors, "fromfile": load_fromfile}
    times = {k: [] for k in readers}
    sums = {}
    warm(path)
    for _ in range(a.reps):
        for k, fn in readers.items():
            t0 = time.perf_counter()
            sums[k] = fn(path, names)
            times[k].append(time.perf_counter() - t0)
    if len({round(v, 3) for v in sums.values()}) != 1:
        raise SystemExit(f"the readers disagree on the sums: {sums}")
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\nevery tensor of a {size / 2**30:.2f} GiB safetensors model into numpy, each summed; "
          f"medians of {a.reps}, page cache warm")
    print(f"{'reader':<14}{'MB/s':>9}{'seconds':>10}")
    for k in readers:
        print(f"{k:<14}{size / med[k] / 1e6:>9.0f}{med[k]:>10.3f}")
    print(f"ratio ztfs / safetensors: {med['safetensors'] / med['ztfs']:.2f}x (goal >= 1.0x)")
    print(f"ratio ztfs / fromfile:    {med['fromfile'] / med['ztfs']:.2f}x (goal >= 0.8x)")
    if a.work is None:
        os.remove(path)
        os.rmdir(work)


if __name__ == "__main__":
    main()
