"""Hurray interop: pyhurray-written files through ztfs (forward), and the
Hurray corpus through pyhurray (reverse).

Forward, per file gen.py wrote, against its sidecar: `ztfs check` exits
0; `ztfs ls --json` lists exactly the index names; `ztfs cat` of each
tensor's data follows the sidecar's policy (must: exit 0 and the expected
row-major bytes; may: a refusal, exit 1, or those bytes; none: exit 1;
unchecked: not asked) and of each buffer gives its raw bytes; then a real
mount: each tensor's directory, found by the true name in its meta.json,
holds `data` by the same policy (absent where refused) and `buffer<i>.raw`.
The command spellings live in hurray/cli.py alone.

Reverse: every file under corpus/hurray/valid/ must load with `hr.load` and
`hr.load_kv`, unless hurray/known.py lists it with a reason. A missing
directory fails the run: it is never skipped.
"""

from __future__ import annotations

import glob
import json
import os

import hurray as hr

from .cli import buffer_part, mount_files, ztfs_hurray
from .known import HURRAY_KNOWN
from ..mount import is_mounted, mounted, read_part_file, read_whole
from ..results import Results, short
from ..ztfs import Ztfs


def load_sidecar(path: str) -> dict:
    with open(path[:-len(".hrry")] + ".json", encoding="utf-8") as f:
        return json.load(f)


def want_of(t: dict):
    return None if t["data"] is None else bytes.fromhex(t["data"])


def check_data(res: Results, where: str, policy: str, want, rc: int, got: bytes, err: bytes):
    """One answer for a tensor's data (from cat) against the sidecar policy."""
    if policy == "must":
        res.check(rc == 0 and got == want, where,
                  f"exit {rc}, {len(got)} bytes; expected the {len(want)} row-major bytes: "
                  f"{short(err)}")
    elif policy == "may":
        res.check(rc == 1 or (rc == 0 and got == want), where,
                  f"exit {rc}, {len(got)} bytes; expected a refusal (exit 1) or the "
                  f"{len(want)} dense bytes: {short(err)}")
    elif policy == "none":
        res.check(rc == 1, where, f"no row-major view is defined, yet exit {rc} "
                                  f"({len(got)} bytes): {short(err)}")


def check_file(path: str, z: Ztfs, res: Results) -> None:
    side = load_sidecar(path)
    where = os.path.basename(path)
    fails = len(res.failures)
    rc, _, err = ztfs_hurray(z, "check", path)
    res.check(rc == 0, where, f"`ztfs check` exited {rc}: {short(err)}")
    rc, out, err = ztfs_hurray(z, "ls", path)
    if res.check(rc == 0, where, f"`ztfs ls --json` exited {rc}: {short(err)}"):
        try:
            listed = sorted(o["name"] for o in json.loads(out)["objects"])
        except (ValueError, KeyError, TypeError) as e:
            listed = f"unreadable ({e})"
        names = sorted(t["name"] for t in side["tensors"])
        res.check(listed == names, where, f"`ztfs ls --json` names differ from the index: "
                                          f"{str(listed)[:200]}")
    for t in side["tensors"]:
        label = f"{where} {t['name'][:60]!r}"
        if "\0" in t["name"]:
            # No argv can carry U+0000: the mount (below) checks this one.
            continue
        if t["policy"] != "unchecked":
            rc, out, err = ztfs_hurray(z, "cat", path, t["name"])
            check_data(res, f"{label} cat", t["policy"], want_of(t), rc, out, err)
        for i, b in enumerate(t["buffers"]):
            rc, out, err = ztfs_hurray(z, "cat", path, t["name"], buffer_part(i))
            res.check(rc == 0 and out == bytes.fromhex(b), f"{label} cat {buffer_part(i)}",
                      f"exit {rc}, {len(out)} bytes; expected {len(b) // 2} raw bytes: "
                      f"{short(err)}")
    check_mount(path, side, z, res)
    bad = len(res.failures) - fails
    print(f"{'ok  ' if not bad else 'FAIL'} {where}: {len(side['tensors'])} tensors"
          + (f", {bad} failures" if bad else ""), flush=True)


def tensor_dirs(mnt: str, res: Results, where: str) -> dict:
    """True name -> directory, from every meta.json below the mount (names
    with '/' may nest; escaping is the tree's business, not this check's)."""
    out = {}
    for d, _, files in os.walk(mnt):
        if "meta.json" not in files or d == mnt:
            continue
        try:
            name = json.loads(read_whole(os.path.join(d, "meta.json")))["name"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            res.fail(where, f"{os.path.relpath(d, mnt)!r}/meta.json unreadable: {e}")
            continue
        if name in out:
            res.fail(where, f"two directories claim {name[:60]!r}")
        out[name] = d
    return out


def check_mount(path: str, side: dict, z: Ztfs, res: Results) -> None:
    where = f"{os.path.basename(path)} [mount]"
    with mounted(z, path, res, where) as (rc, err, mnt):
        if not res.check(rc == 0 and is_mounted(mnt), where,
                         f"`ztfs mount` exited {rc}: {short(err)}"):
            return
        dirs = tensor_dirs(mnt, res, where)
        names = sorted(t["name"] for t in side["tensors"])
        res.check(sorted(dirs) == names, where,
                  f"tensor directories {sorted(dirs)[:5]!r} differ from the index {names[:5]!r}")
        for t in side["tensors"]:
            d = dirs.get(t["name"])
            if d is None:
                continue
            label = f"{where} {t['name'][:60]!r}"
            data_file, buffer_files = mount_files(len(t["buffers"]))
            data_file = t.get("file", data_file)
            dpath = os.path.join(d, data_file)
            if t["policy"] == "none" or (t["policy"] == "may" and not os.path.lexists(dpath)):
                res.check(not os.path.lexists(dpath), label,
                          f"{data_file} exists though no row-major view is defined")
            elif t["policy"] != "unchecked":
                for ok, what in read_part_file(dpath, want_of(t), f"{path}\0{t['name']}"):
                    res.check(ok, label, f"{data_file}: {what}")
            for bf, b in zip(buffer_files, t["buffers"]):
                for ok, what in read_part_file(os.path.join(d, bf), bytes.fromhex(b),
                                               f"{path}\0{t['name']}\0{bf}"):
                    res.check(ok, label, f"{bf}: {what}")


def check_hurray_corpus(corpus: str, res: Results) -> None:
    """Reverse: every valid Hurray corpus file through pyhurray."""
    valid = os.path.join(corpus, "hurray", "valid")
    if not os.path.isdir(valid):
        res.fail("hurray corpus", f"{valid} does not exist: the Hurray corpus must be "
                                  "generated before this check (it is never skipped)")
        return
    files = sorted(glob.glob(os.path.join(valid, "**", "*.hrry"), recursive=True))
    if not files:
        res.fail("hurray corpus", f"no .hrry files under {valid}")
    used = set()
    for path in files:
        rel = os.path.relpath(path, valid).replace(os.sep, "/")
        try:
            tensors = hr.load(path)
            hr.load_kv(path)
        except Exception as e:  # noqa: BLE001 - whatever pyhurray raises is the verdict
            if rel in HURRAY_KNOWN:
                used.add(rel)
                print(f"ok   hurray/valid/{rel}: pyhurray refuses, excused: {HURRAY_KNOWN[rel]}")
                res.ok()
            else:
                res.fail(f"hurray/valid/{rel}", f"pyhurray refuses a valid file: "
                                                f"{type(e).__name__}: {e}")
            continue
        res.check(rel not in HURRAY_KNOWN, f"hurray/valid/{rel}",
                  "pyhurray loads it, yet hurray/known.py excuses it: drop the entry")
        print(f"ok   hurray/valid/{rel}: pyhurray loads {len(tensors)} tensors", flush=True)
    for rel in sorted(set(HURRAY_KNOWN) - used):
        print(f"  hurray allowlist {rel}: unused")
