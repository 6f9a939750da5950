"""The .npz suite: archives written by numpy (`np.savez`, stored, and
`np.savez_compressed`, deflated) read by ztfs as `np.load` reads them.

Forward, per archive: `ztfs check` accepts it; `ztfs manifest` lists
`np.load(...).files` in order with each array's shape; `ztfs cat` of each
array is the bytes of `np.load(...)[name]`; a mount serves each array's
`data.npy`, loaded by numpy equal to it (dtype, shape, values), and a
`model.safetensors` read by the safetensors package; `ztfs pack` gives a
`.zt` whose tensors, read by the ztensor package, are numpy's.

A deflated member far larger than a mount's memory budget (a 300 MiB
array of zeros, 300 KB on disk, mounted with `--cache-mib 8`) is served
whole: its `data` is 300 MiB of zeros.

Refused (numpy reads some of them; ztfs agrees on an error or says why
not): an object array (numpy needs allow_pickle); a member name twice;
a deflated member whose CRC-32 is wrong; a member whose
.npy header promises more data than it holds; a member whose local header
names another; a member whose bytes hold another member (the overlapping
zip bomb's trick: Python's zipfile refuses it where it has the check).
"""

from __future__ import annotations

import os
import struct
import warnings
import zipfile
import zlib

import numpy as np

from ..mount import mounted
from ..pack.common import check_packed, pack, zt_objects
from ..results import Results, short

NUMPY_IN_SAFETENSORS = {"float32", "float64", "float16", "int64", "int32", "int16", "int8",
                        "uint8", "uint16", "uint32", "uint64", "bool", "complex64"}


def arrays(rng) -> dict:
    return {
        "weight": rng.standard_normal((4, 6)).astype(np.float32),
        "bias": rng.standard_normal(6).astype(np.float64),
        "half": rng.standard_normal((2, 3)).astype(np.float16),
        "ids": np.arange(7, dtype=np.int64),
        "i32": np.arange(-3, 3, dtype=np.int32),
        "i16": np.arange(4, dtype=np.int16).reshape(2, 2),
        "i8": np.array([-1, 2], np.int8),
        "u8": np.array([250, 1], np.uint8),
        "u16": np.array([65535], np.uint16),
        "u32": np.array([1 << 31], np.uint32),
        "u64": np.array([1 << 63], np.uint64),
        "mask": np.array([[True, False], [False, True]]),
        "cplx": (rng.standard_normal(3) + 1j).astype(np.complex64),
        "scalar": np.float32(2.5),
        "empty": np.zeros((0, 4), np.float32),
        "big": rng.standard_normal((256, 300)).astype(np.float32),
    }


def check_forward(path: str, z, res: Results, outdir: str):
    where = os.path.basename(path)
    with np.load(path) as f:
        want = {n: f[n] for n in f.files}
    rc, _, err = z.run("check", [path])
    if not res.check(rc == 0, where, f"ztfs check: {short(err)}"):
        return
    rc, out, err = z.run("manifest", [path])
    import json

    doc = json.loads(out)["arrays"] if rc == 0 else {}
    res.check(list(doc) == list(want), where, f"manifest names {list(doc)[:5]} vs {list(want)[:5]}")
    for n, a in want.items():
        res.check(doc.get(n, {}).get("shape") == list(a.shape), where, f"{n!r}: shape")
        rc, data, err = z.run("cat", [path, n])
        res.check(rc == 0 and data == a.tobytes(), where, f"cat {n!r}: {short(err)}")
    from safetensors import safe_open

    with mounted(z, path, res, where) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"ztfs mount: {short(err)}"):
            return
        with safe_open(os.path.join(mnt, "model.safetensors"), "numpy") as st:
            for n, a in want.items():
                got = np.load(os.path.join(mnt, n, "data.npy"))
                res.check(got.dtype == a.dtype and got.shape == a.shape and
                          got.tobytes() == a.tobytes(), where, f"{n!r}: data.npy differs")
                if a.dtype.name in NUMPY_IN_SAFETENSORS:
                    t = st.get_tensor(n)
                    res.check(t.tobytes() == a.tobytes() and t.shape == a.shape, where,
                              f"{n!r}: model.safetensors differs")
    out = os.path.join(outdir, where + ".zt")
    rc, _, err = pack(z, path, out)
    if not res.check(rc == 0, where, f"ztfs pack: {short(err)}"):
        return
    objs = zt_objects(out)
    for n, a in want.items():
        o = objs.get(n)
        ok = o is not None and o.parts["data"].data == a.tobytes() and list(o.shape) == list(a.shape)
        res.check(ok, where, f"{n!r}: the packed tensor differs")
    check_packed(z, res, where, out)


def hostile(outdir: str) -> list[tuple[str, str, bool]]:
    """(path, what, numpy reads it) of archives ztfs must refuse."""
    out = []
    p = os.path.join(outdir, "object.npz")
    np.savez(p, x=np.array([{"a": 1}], dtype=object))
    out.append((p, "an object array", False))
    p = os.path.join(outdir, "twice.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(p, "w") as zf:
            for v in (1.0, 2.0):
                buf = __import__("io").BytesIO()
                np.save(buf, np.array([v], np.float32))
                zf.writestr("x.npy", buf.getvalue())
    out.append((p, "a member twice", True))
    p = os.path.join(outdir, "bad-crc.npz")
    np.savez_compressed(p, x=np.arange(100, dtype=np.float32))
    data = bytearray(open(p, "rb").read())
    at = data.rfind(b"PK\x01\x02")  # the one central directory entry: its CRC at +16
    data[at + 16] ^= 0xFF
    open(p, "wb").write(data)
    out.append((p, "a wrong CRC-32", False))
    p = os.path.join(outdir, "short.npz")
    buf = __import__("io").BytesIO()
    np.save(buf, np.arange(10, dtype=np.float32))
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("x.npy", buf.getvalue()[:-4])
    out.append((p, "a header promising more data than the member holds", False))
    p = os.path.join(outdir, "renamed.npz")
    np.savez(p, a=np.arange(4, dtype=np.float32), b=np.arange(2, dtype=np.float32))
    data = bytearray(open(p, "rb").read())
    assert data[30:35] == b"a.npy"
    data[30] = ord("z")  # the first local header's name; the directory keeps a.npy
    open(p, "wb").write(data)
    out.append((p, "a local header naming another member", False))
    p = os.path.join(outdir, "nested.npz")
    open(p, "wb").write(nested_archive())
    zipfile_checks_overlap = "Overlapped entries" in open(zipfile.__file__).read()
    out.append((p, "a member holding another member", not zipfile_checks_overlap))
    return out


def check_big(outdir: str, z, res: Results):
    """A deflated member of 300 MiB of zeros (300 KB on disk) is served
    whole by a mount whose memory budget is 8 MiB."""
    path = os.path.join(outdir, "big.npz")
    np.savez_compressed(path, x=np.zeros(300 << 18, np.float32))
    where = os.path.basename(path)
    with mounted(z, path, res, where, ("--cache-mib", "8")) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"ztfs mount: {short(err)}"):
            return
        n, zeros = 0, True
        with open(os.path.join(mnt, "x", "data"), "rb") as f:
            while chunk := f.read(1 << 20):
                n += len(chunk)
                zeros = zeros and chunk.count(0) == len(chunk)
        res.check(n == 300 << 20 and zeros, where, f"x/data: {n} bytes, all zeros: {zeros}")


def nested_archive() -> bytes:
    """A stored archive whose member a.npy (a uint8 array) holds the whole
    of member b.npy, local header and all: each array alone is valid."""
    def npy(a) -> bytes:
        buf = __import__("io").BytesIO()
        np.save(buf, a)
        return buf.getvalue()

    def local(name: bytes, data: bytes) -> tuple[bytes, bytes]:
        fixed = struct.pack("<HHHHHIIIHH", 20, 0, 0, 0, 0x21, zlib.crc32(data), len(data),
                            len(data), len(name), 0)
        return b"PK\x03\x04" + fixed + name + data, fixed

    inner, inner_fixed = local(b"b.npy", npy(np.arange(2, dtype=np.float32)))
    outer, outer_fixed = local(b"a.npy", npy(np.frombuffer(inner, np.uint8)))
    entries = [(b"a.npy", 0, outer_fixed), (b"b.npy", len(outer) - len(inner), inner_fixed)]
    directory = b"".join(b"PK\x01\x02" + struct.pack("<H", 20) + fixed
                         + struct.pack("<HHHII", 0, 0, 0, 0, at) + name
                         for name, at, fixed in entries)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 2, 2, len(directory), len(outer), 0)
    return outer + directory + end


def run_npz(args, z, res: Results, outdir: str):
    print("\n== .npz archives: ztfs against numpy")
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(3)
    a = arrays(rng)
    stored, deflated, positional = (os.path.join(outdir, n) for n in
                                    ("stored.npz", "deflated.npz", "positional.npz"))
    np.savez(stored, **a)
    np.savez_compressed(deflated, **a)
    np.savez(positional, a["weight"], a["ids"])
    # Names as zipfile reads them: one flagged UTF-8 (zipfile flags a
    # non-ASCII name), one of high bytes unflagged (code page 437 to
    # zipfile: b"\x82\xe0" is "éα").
    names = os.path.join(outdir, "names.npz")
    np.savez(names, QQ=a["ids"], **{"é": a["weight"]})
    with open(names, "rb") as f:
        data = f.read()
    with open(names, "wb") as f:
        f.write(data.replace(b"QQ.npy", b"\x82\xe0.npy"))
    for p in (stored, deflated, positional, names):
        try:
            check_forward(p, z, res, outdir)
        except Exception as e:  # noqa: BLE001 - a harness error is a failure
            res.fail(os.path.basename(p), f"harness error: {type(e).__name__}: {e}")
    check_big(outdir, z, res)
    for p, what, numpy_reads in hostile(outdir):
        where = "npz refused " + os.path.basename(p)
        rc, _, err = z.run("check", [p])
        res.check(rc != 0 and err, where, f"{what}: ztfs check exited {rc}")
        if not numpy_reads:
            try:
                with np.load(p) as f:
                    [f[n] for n in f.files]
                res.fail(where, f"{what}: numpy reads it too; the two should agree on an error")
            except Exception:  # noqa: BLE001 - numpy refusing is the agreement
                res.ok()
