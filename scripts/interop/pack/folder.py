"""The pack suite's check of a checkpoint folder with its other files (a
config, a tokenizer, a subfolder): packed by `ztfs pack` from the folder,
the package opens the output and reads every tensor equal to the source
and every file (a `ztfs.file/1` object of one u8 part) equal to the file on
disk; the output passes the checks of every packed file; and with
`--no-files` the output is byte for byte what the package writes when it
reads the checkpoint's files as one model.
"""

from __future__ import annotations

import os

import ztensor

from .checkpoint import write_checkpoint
from .common import (check_packed, diff_tensors, first_diff, one_part, pack, st_tensors,
                     zt_objects)
from ..results import Results, short
from ..ztfs import Ztfs

# The folder's other files, by path, with their bytes.
FILES = {
    "config.json": b'{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}\n',
    "tokenizer.json": bytes(range(256)) * 400,
    "tokenizer_config.json": b'{"model_max_length": 2048}\n',
    "original/params.json": b"{}",
    "empty.txt": b"",
}


def run_folder(z: Ztfs, res: Results, tmp: str) -> None:
    d = os.path.join(tmp, "repo")
    os.makedirs(os.path.join(d, "original"), exist_ok=True)
    shards = write_checkpoint(d)
    for path, data in FILES.items():
        with open(os.path.join(d, path), "wb") as f:
            f.write(data)
    where = "pack folder with files"
    out = os.path.join(tmp, "repo.zt")
    rc, _, err = pack(z, d, out)
    if not res.check(rc == 0, where, f"`ztfs pack` exited {rc}: {short(err)}"):
        return
    check_packed(z, res, where, out)
    source = {}
    for path in shards:
        source.update(st_tensors(path)[0])
    got = one_part(zt_objects(out))
    res.check(sorted(got) == sorted([*source, *FILES]), where,
              f"the package lists {sorted(got)}")
    tensors = {k: v for k, v in got.items() if k in source}
    problems = diff_tensors(source, tensors)
    res.check(not problems, where, "tensors read back: " + "; ".join(problems[:4]))
    for path, want in FILES.items():
        t = got.get(path)
        if not res.check(t is not None, where, f"file {path!r} missing"):
            continue
        res.check((t.layout, t.dtype, list(t.shape)) == ("ztfs.file/1", "u8", [len(want)]),
                  where, f"file {path!r}: layout {t.layout}, dtype {t.dtype}, shape {t.shape}")
        res.check(t.data == want, where, f"file {path!r}: {len(t.data)} bytes read back, "
                  f"first difference at {first_diff(t.data, want)}")
    bare = os.path.join(tmp, "bare.zt")
    rc, _, err = pack(z, d, bare, ("--no-files",))
    if res.check(rc == 0, where, f"`ztfs pack --no-files` exited {rc}: {short(err)}"):
        want_path = os.path.join(tmp, "ingest.zt")
        with ztensor.Writer(want_path) as w:
            w.ingest(ztensor.open(shards))
        with open(bare, "rb") as f, open(want_path, "rb") as g:
            got, want = f.read(), g.read()
        res.check(got == want, where, f"--no-files: {len(got)} bytes, the package's ingest "
                  f"{len(want)}; first difference at {first_diff(got, want)}")
    print(f"ok   pack folder: {len(FILES)} files beside the tensors, read back by the package",
          flush=True)
