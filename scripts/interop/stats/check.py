"""The run of the stats suite (see __init__.py)."""

from __future__ import annotations

import json
import os

from . import files, oracle
from ..mount import mounted
from ..onnx.check import escaped
from ..results import Results, short


def check_file(where: str, path: str, arrays: dict, z, res: Results, bins: int = 64):
    flags = ("--json",) if bins == 64 else ("--json", "--bins", str(bins))
    rc, out, err = z.run("stats", [path], flags)
    if not res.check(rc == 0, where, f"ztfs stats exited {rc}: {short(err)}"):
        return None
    got = json.loads(out)
    res.check(sorted(got) == sorted(arrays), where,
              f"tensors {sorted(set(got) ^ set(arrays))[:6]} in one of ztfs and the reader only")
    for name, a in arrays.items():
        if name in got:
            bad = oracle.differences(got[name], a, bins)
            res.check(not bad, where, f"{name!r} ({a.dtype}, {a.shape}): " + "; ".join(bad[:4]))
    return got


def check_named(where: str, path: str, arrays: dict, z, res: Results):
    """One tensor by name gives it alone; the text output names each."""
    name = sorted(arrays)[0]
    rc, out, err = z.run("stats", [path, name], ("--json",))
    if res.check(rc == 0, where, f"stats {name!r} exited {rc}: {short(err)}"):
        res.check(list(json.loads(out)) == [name], where, f"stats {name!r} gave {short(out)}")
    rc, out, err = z.run("stats", [path, "no.such.tensor"], ("--json",))
    res.check(rc != 0 and not out, where, f"an unknown name: exit {rc}, {short(out)}")
    rc, out, err = z.run("stats", [path])
    if res.check(rc == 0, where, f"stats (text) exited {rc}: {short(err)}"):
        text = out.decode()
        missing = [n for n in arrays if f"{n}  " not in text]
        res.check(not missing, where, f"text output lacks {missing[:4]}")


def check_mount(where: str, path: str, arrays: dict, cli: dict, z, res: Results):
    """Each tensor's `stats.json` in a mount: numpy's numbers, and the
    same JSON as `ztfs stats --json` gave; every one the same size (its
    size is known before its numbers: padded with spaces)."""
    where += " mount"
    with mounted(z, path, res, where) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"mount exited {rc}: {short(err)}"):
            return
        sizes = set()
        for name, a in arrays.items():
            f = os.path.join(mnt, escaped(name), "stats.json")
            try:
                with open(f, "rb") as fh:
                    text = fh.read()
            except OSError as e:
                res.fail(where, f"{name!r}: {e}")
                continue
            sizes.add((os.stat(f).st_size, len(text)))
            got = json.loads(text)
            bad = oracle.differences(got, a)
            res.check(not bad, where, f"{name!r} stats.json: " + "; ".join(bad[:4]))
            res.check(got == cli.get(name), where, f"{name!r} stats.json is not `ztfs stats`'")
        res.check(len(sizes) == 1 and all(a == b for a, b in sizes), where,
                  f"stats.json sizes (stat, read) {sorted(sizes)[:4]}")


def check_gemma(z, res: Results):
    """Three k-quant tensors of the real gemma-3-270m Q4_K_M (Q4_K, Q6_K,
    Q5_0), against gguf-py's dequantize."""
    import gguf

    from ..gguf.real import fetch

    path = fetch()
    r = gguf.GGUFReader(path)
    pick = {}
    for t in r.tensors:
        ty = t.tensor_type.name
        if ty in ("Q4_K", "Q6_K", "Q5_0") and ty not in pick and t.n_elements <= 4 << 20:
            pick[ty] = t.name
    where = "stats gemma-3-270m Q4_K_M"
    res.check(len(pick) == 3, where, f"found {pick}")
    arrays = files.gguf_values(path, set(pick.values()))
    rc, out, err = z.run("stats", [path, *sorted(arrays)], ("--json",))
    if not res.check(rc == 0, where, f"ztfs stats exited {rc}: {short(err)}"):
        return
    got = json.loads(out)
    for name, a in arrays.items():
        bad = oracle.differences(got.get(name, {}), a)
        res.check(not bad, where, f"{name!r}: " + "; ".join(bad[:4]))
    print(f"ok   {where}: {', '.join(f'{k} {v}' for k, v in sorted(pick.items()))}", flush=True)


def run_stats(args, z, res: Results, tmp: str):
    print("\n== stats: ztfs stats against numpy on the reference readers' values", flush=True)
    written = files.write_all(tmp)
    for path, arrays in written.items():
        where = f"stats {os.path.basename(path)}"
        before = len(res.failures)
        cli = check_file(where, path, arrays, z, res)
        check_file(where + " --bins 7", path, arrays, z, res, bins=7)
        if cli is not None:
            check_mount(where, path, arrays, cli, z, res)
        check_named(where, path, arrays, z, res)
        if len(res.failures) == before:
            print(f"ok   {where}: {len(arrays)} tensors", flush=True)
    check_gemma(z, res)
