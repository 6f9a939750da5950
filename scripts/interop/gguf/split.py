"""Split GGUF models: a model written by gguf-py's `GGUFWriter` with
`split_max_tensors` (files `NAME-0000K-of-0000N.gguf` with `split.no`,
`split.count`, `split.tensors.count`, as llama.cpp's `gguf-split` writes
them) opened by ztfs from its first file as one model.

Forward: `ztfs check` of the first file accepts it; `ztfs manifest` lists
the files (`split_files`), the first file's KVs as GGUFReader reads them,
and every tensor of every file with its file (`split`), offset and length
as GGUFReader reads that file; `ztfs cat` of each tensor equals the
reader's bytes; a mount serves each tensor's `data`, and its
`model.safetensors`, read by the safetensors package, holds each
unquantized tensor equal to the reader's array; `ztfs pack` of the first
file gives a `.zt` whose tensors, read by the ztensor package, are the
reader's, and which passes every packed file's checks.

Refused: the family without its last file (the open fails, naming it); the
second and third files swapped (`GgufSplit`: `split.no` disagrees with the
name); a later file of another family's count (`GgufSplit`). Read alone,
with the note: a file that is not the first.
"""

from __future__ import annotations

import glob
import json
import os
import shutil

import numpy as np

from ..mount import mounted
from ..pack.common import check_packed, gguf_tensors, one_part, pack, zt_objects, diff_tensors
from ..results import Results, short


def write_split(outdir: str) -> list[str]:
    """A model of five tensors (f32, f16, q8_0) in three files of at most
    two tensors; returns the files in order."""
    import gguf

    d = os.path.join(outdir, "split")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    rng = np.random.default_rng(11)
    w = gguf.GGUFWriter(os.path.join(d, "model.gguf"), "llama", split_max_tensors=2)
    w.add_name("interop split")
    w.add_uint32("x.u32", 7)
    w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "a"])
    w.add_tensor("token_embd.weight", rng.standard_normal((6, 8)).astype(np.float32))
    w.add_tensor("blk.0.attn_norm.weight", rng.standard_normal(8).astype(np.float16))
    q8 = rng.integers(0, 256, (3, 2 * 34), dtype=np.uint8)
    w.add_tensor("blk.0.ffn_up.weight", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("blk.1.attn_norm.weight", rng.standard_normal(8).astype(np.float32))
    w.add_tensor("output.weight", rng.standard_normal((4, 8)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return sorted(glob.glob(os.path.join(d, "model-*-of-*.gguf")))


def check_forward(files: list[str], z, res: Results):
    import gguf
    from .check import check_cat, check_data, json_value, object_dirs, reader_kvs

    where = "split forward"
    if not res.check(len(files) == 3, where, f"GGUFWriter wrote {len(files)} files, not 3"):
        return
    first = files[0]
    rc, _, err = z.run("check", [first])
    if not res.check(rc == 0, where, f"ztfs check: {short(err)}"):
        return
    rc, out, err = z.run("manifest", [first])
    if not res.check(rc == 0, where, f"ztfs manifest: {short(err)}"):
        return
    doc = json.loads(out)
    res.check(doc.get("split_files") == [os.path.basename(f) for f in files], where,
              f"split_files {doc.get('split_files')}")
    got = [{"key": e["key"], "type": e["type"], "value": json_value(e["value"])} for e in doc["kv"]]
    res.check(got == reader_kvs(gguf.GGUFReader(first)), where,
              "manifest KVs differ from GGUFReader's fields of the first file")
    infos = {t["name"]: t for t in doc["tensors"]}
    readers = [gguf.GGUFReader(f) for f in files]
    want_names = [t.name for r in readers for t in r.tensors]
    res.check([t["name"] for t in doc["tensors"]] == want_names, where,
              f"tensors {[t['name'] for t in doc['tensors']]} vs {want_names}")
    for k, r in enumerate(readers):
        for t in r.tensors:
            info = infos.get(t.name, {})
            res.check(info.get("split") == k and info.get("file_offset") == t.data_offset
                      and info.get("length") == t.n_bytes, where,
                      f"{t.name!r}: {info} vs file {k}, {t.data_offset}, {t.n_bytes}")
            check_cat(z, first, t, res, where)
    with mounted(z, first, res, where) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"mount: {short(err)}"):
            return
        dirs = object_dirs(mnt)
        from safetensors import safe_open

        with safe_open(os.path.join(mnt, "model.safetensors"), "numpy") as st:
            names = set(st.keys())
            for r in readers:
                for t in r.tensors:
                    d = check_data(dirs, t, res, where)
                    if d and t.tensor_type.name in ("F32", "F16"):
                        ok = t.name in names and np.array_equal(st.get_tensor(t.name), t.data)
                        res.check(ok, where, f"{t.name!r}: model.safetensors differs from the reader")


def check_pack(files: list[str], z, res: Results, outdir: str):
    where = "split pack"
    out = os.path.join(outdir, "split.zt")
    rc, _, err = pack(z, files[0], out)
    if not res.check(rc == 0, where, f"ztfs pack: {short(err)}"):
        return
    want = {}
    for f in files:
        want.update(gguf_tensors(f))
    problems = diff_tensors(want, one_part(zt_objects(out)))
    res.check(not problems, where, "; ".join(problems[:5]))
    check_packed(z, res, where, out)


def check_refusals(files: list[str], z, res: Results, outdir: str):
    names = [os.path.basename(f) for f in files]

    def family(case: str, renames: dict) -> str:
        d = os.path.join(outdir, f"split-{case}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for f, n in zip(files, names):
            if renames.get(n, n):
                shutil.copy(f, os.path.join(d, renames.get(n, n)))
        return os.path.join(d, names[0])

    missing = family("missing", {names[2]: None})
    rc, _, err = z.run("check", [missing])
    res.check(rc != 0 and names[2].encode() in err, "split missing file",
              f"exit {rc}, stderr {short(err)}")
    swapped = family("swapped", {names[1]: names[2], names[2]: names[1]})
    rc, _, err = z.run("check", [swapped])
    res.check(rc != 0 and b"GgufSplit" in err, "split files swapped", f"exit {rc}, {short(err)}")
    alone = files[1]
    rc, _, err = z.run("check", [alone])
    res.check(rc == 0 and b"read alone" in err, "split file read alone", f"exit {rc}, {short(err)}")


def run_split(z, res: Results, outdir: str):
    print("\n== gguf split: a GGUFWriter split model through ztfs")
    files = write_split(outdir)
    for step in (lambda: check_forward(files, z, res), lambda: check_pack(files, z, res, outdir),
                 lambda: check_refusals(files, z, res, outdir)):
        try:
            step()
        except Exception as e:  # noqa: BLE001 - a harness error is a failure
            res.fail("gguf split", f"harness error: {type(e).__name__}: {e}")
