"""Forward direction: each package-written file through ztfs.

`ztfs check` (and `--verify`), `digest`, `ls --json` and `cat` of every part
against the package's view, then the mount check (mount.py); a file the
package wrote broken must be rejected by both.
"""

from __future__ import annotations

import json
import time
from typing import Optional

import ztensor

from ..cbor import cbor_encode
from ..container import REGISTERED_LTYPES, read_raw
from ..content import content_digests, content_value, same_value
from .generate import Gen
from ..mount import MOUNT_STATS, check_mount, is_mounted, mounted
from ..package import package_verdict, package_view
from ..results import Results, short
from ..ztfs import Ztfs, cmd_desc, stderr_rule


def check_generated(gen: Gen, z: Optional[Ztfs], res: Results, digests_by_group: dict):
    where = gen.name
    path = gen.path

    # The package's own view and the raw manifest.
    raw = read_raw(path)
    res.check(raw.hash_ok, where, "footer manifest hash is not the xxh3 of the manifest")
    if raw.manifest is not None:
        try:
            again = cbor_encode(raw.manifest)
        except (TypeError, ValueError) as e:
            again = repr(e).encode()
        res.check(again == raw.manifest_bytes, where,
                  "this script's deterministic CBOR encoder does not reproduce the "
                  "manifest the package wrote (so its content digests are suspect)")

    if gen.reject_rule is not None:
        check_generated_reject(gen, z, res)
        return

    # The package reads a renamed shard family through its positional twin.
    vpath = gen.view_path or path
    try:
        objs, fattrs = package_view(vpath)
    except BaseException as e:  # noqa: BLE001 - report whatever the package raised
        if isinstance(e, KeyboardInterrupt):
            raise
        what = "a model this script built from its files" if gen.shard_files else "a file it wrote"
        res.fail(where, f"the package cannot read {what}: {type(e).__name__}: {e}")
        return
    manifest = raw.manifest or {}
    res.check(sorted(objs) == sorted(manifest.get("objects", {})), where,
              "package names differ from the manifest's")
    if gen.shared:
        refs = {tuple(manifest["objects"][o]["parts"][p]["blob"]) for o, p in gen.shared}
        res.check(len(refs) == 1, where, f"the package did not alias the tied parts onto one "
                                         f"blob ({sorted(refs)}), so this file tests less")
    if fattrs is not None or "attributes" in manifest:
        res.check(same_value(fattrs, manifest.get("attributes")), where,
                  "package's file attributes differ from the manifest's")
    try:
        # deep: also the whole-file digests of the shards (the package's
        # shallow verify skips them, notes §1 Data shards).
        with ztensor.open(vpath) as src:
            checked, undigested = src.verify(deep=bool(gen.shard_files))
        res.check(undigested == 0, where, f"package verify: {undigested} parts without digest")
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        res.fail(where, f"package verify fails on its own file: {e}")

    value = content_value(objs, manifest, res, where)
    expected = content_digests(value) if value is not None else None
    if gen.group and expected:
        digests_by_group.setdefault(gen.group, []).append((gen.name, expected["sha256"]))

    nparts = sum(len(o.parts) for o in objs.values())
    if z is None:
        print(f"ok   {where}: package side only, {len(objs)} objects, {nparts} parts, "
              f"content {expected['sha256'] if expected else 'undefined'}", flush=True)
        return

    fails_before = len(res.failures)

    # check / check --verify
    # ztfs check --verify refuses a part of an unregistered logical type
    # (it cannot be decoded, spec §4.2), where the package verifies only its
    # digest (notes §1, Logical types): an exit 1 saying "refused" is the
    # agreed outcome for such files, and nothing else is.
    unknown_ltype = any(pp.logical is not None and pp.logical not in REGISTERED_LTYPES
                        for o in objs.values() for pp in o.parts.values())
    for flags in ((), ("--verify",)):
        rc, out, err = z.run("check", [path], flags)
        if flags and unknown_ltype:
            res.check(rc == 1 and b"refused" in err and b"logical type" in err, where,
                      f"`{cmd_desc('check', *flags, path)}` should refuse the part of an "
                      f"unregistered logical type, exited {rc}: {short(err)}")
            continue
        res.check(rc == 0, where,
                  f"`{cmd_desc('check', *flags, path)}` exited {rc}: {short(err)}")

    # digest
    for algo_args, algo in (((), "sha256"), (("--algo", "sha256"), "sha256"),
                            (("--algo", "xxh3"), "xxh3")):
        args = ("digest", path) + algo_args
        rc, out, err = z.run("digest", [path], algo_args)
        if expected is None:
            res.check(rc == 1, where, f"`{cmd_desc(*args)}` should exit 1 (a part has no "
                                      f"digest), exited {rc}")
            continue
        want = expected[algo] + "\n"
        res.check(rc == 0 and out == want.encode(), where,
                  f"`{cmd_desc(*args)}` printed {short(out)!r} (exit {rc}, {short(err)}); "
                  f"the content digest from the package's view is {expected[algo]}")

    # ls --json
    rc, out, err = z.run("ls", [path], ("--json",))
    if res.check(rc == 0, where, f"`ztfs ls {path} --json` exited {rc}: {short(err)}"):
        check_ls(out, objs, res, where)

    # cat every part
    stored_of = stored_bytes_reader(path, gen.shard_files, manifest)
    cat_fail = 0
    refused: dict = {}  # why -> count
    cat_refused: dict = {}  # (object, part) -> why, for the mount check
    for name, o in objs.items():
        for pn, pp in o.parts.items():
            mp = manifest["objects"][name]["parts"][pn]
            args = [path, name] if pn == "data" and len(o.parts) == 1 else [path, name, pn]
            ok, why, detail = cat_part(z, args, pp.data, stored_of(name, pn),
                                       "encoding" in mp, may_refuse(o.layout, pp.logical))
            if why:
                refused[why] = refused.get(why, 0) + 1
                cat_refused[(name, pn)] = why
            if ok:
                res.ok()
                continue
            cat_fail += 1
            if cat_fail <= 10:
                res.fail(where, detail)
            else:
                res.failures.append(f"FAIL {where}: cat {name!r}/{pn!r}")
    if cat_fail > 10:
        print(f"FAIL {where}: ... {cat_fail - 10} more cat mismatches", flush=True)
    for why, n in sorted(refused.items()):
        res.note(f"note {where}: ztfs refuses to decode {n} part(s): {why}; "
                 "`cat --raw` gives the stored bytes")

    # The same bytes through the mount.
    mounted_how = check_mount(gen, z, res, objs, stored_of, cat_refused)

    bad = len(res.failures) - fails_before
    print(f"{'ok  ' if not bad else 'FAIL'} {where}: {len(objs)} objects, {nparts} parts"
          + (f", {len(gen.shard_files)} shards" if gen.shard_files else "")
          + f"; {mounted_how}" + (f", {bad} failures" if bad else ""), flush=True)


def stored_bytes_reader(path: str, shard_files: dict, manifest: dict):
    """(object, part) -> the part's stored bytes, from the root or from the
    shard file holding them (None when that file is unknown)."""
    cache: dict = {}

    def stored(name: str, pn: str) -> Optional[bytes]:
        mp = manifest["objects"][name]["parts"][pn]
        shard = mp.get("shard")
        if shard not in cache:
            src = path if shard is None else shard_files.get(shard)
            cache[shard] = None
            if src is not None:
                with open(src, "rb") as f:
                    cache[shard] = f.read()
        data = cache[shard]
        if data is None:
            return None
        off, ln = mp["blob"]
        return data[off : off + ln]

    return stored


def may_refuse(layout: str, logical: Optional[str]) -> Optional[str]:
    """Why a reader may refuse to decode a part (spec §4.2, §5.2, §11: beyond
    dense, raw/zstd and the registered types, support is optional but refusal
    must be clean), or None when it must decode it."""
    if layout != "dense":
        return f"layout {layout}"
    if logical is not None and logical not in REGISTERED_LTYPES:
        return f"logical type {logical}"
    return None


def cat_part(z: "Ztfs", args: list, want: bytes, stored: Optional[bytes], encoded: bool,
             refusable: Optional[str]) -> tuple[bool, Optional[str], str]:
    """`ztfs cat` of one part against the package's bytes. A clean refusal
    (exit 1, 'refused') is accepted where `refusable` says why, if
    `cat --raw` then gives the stored bytes. Returns (ok, refusal, detail)."""
    rc, out, err = z.run("cat", args)
    desc = cmd_desc("cat", *args)
    if rc == 0:
        if out == want:
            return True, None, ""
        return False, None, (f"`{desc}`: {len(out)} bytes differ from the package's "
                             f"{len(want)} bytes (first difference at "
                             f"{next((i for i, (a, b) in enumerate(zip(out, want)) if a != b), min(len(out), len(want)))})")
    if rc == 1 and b"refused" in err and refusable:
        rc2, raw, err2 = z.run("cat", args, ("--raw",))
        expect = stored if stored is not None else (None if encoded else want)
        if rc2 == 0 and (expect is None or raw == expect):
            return True, refusable, ""
        return False, refusable, (f"`{desc}` refuses ({refusable}) and `cat --raw` exits {rc2} "
                                  f"with {len(raw)} bytes, not the {len(expect or b'')} stored "
                                  f"bytes: {short(err2)}")
    return False, None, (f"`{desc}` exits {rc} where the package reads {len(want)} bytes: "
                         f"{short(err)}")


def unjson(v):
    """ztfs's JSON is lossless: an integer beyond 2**53 is {"$int": "<decimal>"}."""
    if isinstance(v, dict) and set(v) == {"$int"}:
        return int(v["$int"])
    if isinstance(v, list):
        return [unjson(x) for x in v]
    if isinstance(v, dict):
        return {k: unjson(x) for k, x in v.items()}
    return v


def check_ls(out: bytes, objs: dict, res: Results, where: str):
    try:
        doc = unjson(json.loads(out))
        listed = doc["objects"]
        names = [o["name"] for o in listed]
    except (ValueError, KeyError, TypeError) as e:
        res.fail(where, f"`ztfs ls --json` output is not the documented JSON: {e}: {short(out)}")
        return
    res.check(len(names) == len(set(names)), where, "ls --json lists a name twice")
    missing = sorted(set(objs) - set(names))
    extra = sorted(set(names) - set(objs))
    res.check(not missing and not extra, where,
              f"ls --json names differ: missing {missing[:5]!r}, extra {extra[:5]!r}")
    for o in listed:
        po = objs.get(o.get("name"))
        if po is None:
            continue
        n = o["name"]
        if "layout" in o:
            res.check(o["layout"] == po.layout, where,
                      f"ls --json {n!r}: layout {o['layout']!r}, package {po.layout!r}")
        if "shape" in o:
            res.check(list(o["shape"]) == po.shape, where,
                      f"ls --json {n!r}: shape {o['shape']!r}, package {po.shape!r}")
        if "parts" in o:
            lparts = {pp.get("name"): pp for pp in o["parts"]}
            res.check(sorted(lparts) == sorted(po.parts), where,
                      f"ls --json {n!r}: parts {sorted(lparts)!r}, package {sorted(po.parts)!r}")
            for pn, lp in lparts.items():
                pp = po.parts.get(pn)
                if pp is None:
                    continue
                if "dtype" in lp:
                    res.check(lp["dtype"] == pp.dtype, where,
                              f"ls --json {n!r}/{pn!r}: dtype {lp['dtype']!r}, package {pp.dtype!r}")
                for key in ("type", "logical"):
                    if key in lp:
                        res.check(lp[key] == pp.logical, where,
                                  f"ls --json {n!r}/{pn!r}: {key} {lp[key]!r}, "
                                  f"package {pp.logical!r}")


def check_generated_reject(gen: Gen, z: Optional[Ztfs], res: Results):
    where = gen.name
    stage, prule, pmsg = package_verdict(gen.path)
    res.check(stage != "accepts", where, "expected the package to reject its own file")
    if prule and prule != gen.reject_rule:
        res.note(f"note {where}: package rejects with {prule}, expected {gen.reject_rule}")
    if z is None:
        print(f"ok   {where}: package rejects at {stage} ({prule})", flush=True)
        return
    rc, _, err = z.run("check", [gen.path])
    rule = stderr_rule(err)
    ok = res.check(rc == 1 and rule is not None, where,
                   f"`ztfs check` must reject (exit 1, 'rejected (Rule)'); exit {rc}: {short(err)}")
    if ok and rule != (prule or gen.reject_rule):
        res.note(f"note {where}: ztfs rejects with {rule}, package with {prule} ({pmsg})")
    # `ztfs mount` validates as `check` does: nothing may get mounted.
    t0 = time.monotonic()
    with mounted(z, gen.path, res, where) as (mrc, merr, mnt):
        ok &= res.check(mrc == 1 and not is_mounted(mnt), where,
                        f"`ztfs mount` of a file ztfs rejects exited {mrc} "
                        f"({'mounted' if is_mounted(mnt) else 'not mounted'}): {short(merr)}")
    MOUNT_STATS["mounts"] += 1
    MOUNT_STATS["seconds"] += time.monotonic() - t0
    print(f"{'ok  ' if ok else 'FAIL'} {where}: package {stage}/{prule}, ztfs exit {rc}/{rule}",
          flush=True)
