"""The legacy views in the read benchmark: `big/data.npy` from its data
start and the big tensor's range inside `model.safetensors`, each read
twice after a fresh mount, beside the bare server's blob and the backing
file (the same baselines as big/data). Python standard library only.
"""

import json
import os
import struct
import sys

NPY_MAGIC = b"\x93NUMPY\x01\x00"


def npy_data_start(path):
    """Where a v1.0 .npy file's data starts."""
    with open(path, "rb") as f:
        head = f.read(10)
    if head[:8] != NPY_MAGIC:
        raise ValueError(f"{path}: not a v1.0 .npy file")
    return 10 + struct.unpack("<H", head[8:10])[0]


def safetensors_range(path, name):
    """(absolute offset, length) of tensor `name` in a safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    begin, end = header[name]["data_offsets"]
    return 8 + n + begin, end - begin


def npy_view(mnt):
    path = os.path.join(mnt, "big", "data.npy")
    return path, npy_data_start(path)


def safetensors_view(mnt):
    path = os.path.join(mnt, "model.safetensors")
    return path, safetensors_range(path, "big")[0]


# Each view of the big tensor: where it is in a mount, (path, offset).
VIEWS = {
    "big/data.npy from its data start": npy_view,
    "big in model.safetensors, its range": safetensors_view,
}


def bench_views(a, res, big, n, blob_offset, fresh_mount, dd_seq, rotations):
    """Rows of a "views" section: per view, a 1st read after a fresh mount
    and a 2nd read (dd bs=1M), for ztfs; the bare server's blob and the
    backing file read the same way as the baselines. `fresh_mount(who)`
    mounts (ztfs or bare) and returns an object with .mnt, .path and
    .unmount(); the other callables are bench_mount's."""
    sec = "legacy views (default mode), dd bs=1M; bare and native read the blob itself"
    rows = {label: (res.row(sec, f"{label}: 1st read after a fresh mount", "GB/s"),
                    res.row(sec, f"{label}: 2nd read", "GB/s"))
            for label in VIEWS}
    for i, order in rotations(a.reps):
        print(f"views, rep {i + 1}/{a.reps}", file=sys.stderr, flush=True)
        for who in order:
            for label, (first, second) in rows.items():
                if who == "native":
                    first["native"].append(dd_seq(big, blob_offset, n))
                    second["native"].append(dd_seq(big, blob_offset, n))
                    continue
                m = fresh_mount(who)
                try:
                    path, off = VIEWS[label](m.mnt) if who == "ztfs" else (m.path, 0)
                    first[who].append(dd_seq(path, off, n))
                    second[who].append(dd_seq(path, off, n))
                finally:
                    m.unmount()
