"""Through the mount: `ztfs mount FILE MNT`, the bytes read back as files.

Mounting on a fresh directory and always releasing it (`mounted`), reading a
part's file every way a program would (`read_part_file`), and the mount
check of one package-written file (`check_mount`). MOUNT_STATS counts for
the timing line.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import random
import re
import signal
import subprocess
import tempfile
import time
import zlib

from .zt.generate import Gen
from .results import Results, short
from .ztfs import Ztfs


MOUNT_STATS = {"mounts": 0, "seconds": 0.0, "files": 0, "bytes": 0}


def _mountinfo_path(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def is_mounted(mnt: str) -> bool:
    """Whether something is mounted on `mnt` (a real path). Read from
    /proc/self/mountinfo, which also lists a stale FUSE mount whose daemon
    died (os.path.ismount cannot stat that one and says False)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            return any(len(fl) > 4 and _mountinfo_path(fl[4]) == mnt
                       for fl in (line.split() for line in f))
    except OSError:
        return os.path.ismount(mnt)


def _run_quiet(argv: list, timeout: float = 30.0) -> tuple[int, bytes]:
    """Runs a helper in its own session, so a Ctrl-C meant for this script
    does not kill an unmount half-way."""
    try:
        cp = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                            timeout=timeout, start_new_session=True)
        return cp.returncode, cp.stderr
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout}s".encode()
    except OSError as e:
        return 127, str(e).encode()


def release_mount(z: "Ztfs", mnt: str, expect_mounted: bool) -> list[str]:
    """Unmounts `mnt` with `ztfs unmount` (retrying while busy, then lazily
    with fusermount/umount as a last resort) and removes the directory.
    SIGINT and SIGTERM are held off meanwhile and delivered afterwards.
    Returns what went wrong."""
    problems = []
    blocked = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        if expect_mounted and not is_mounted(mnt):
            problems.append(f"{mnt} is no longer mounted when the check ends")
        tries = 0
        while is_mounted(mnt) and tries < 6:
            rc, err = _run_quiet([z.binary, "unmount", mnt])
            if tries == 0 and rc != 0:
                problems.append(f"`ztfs unmount` exited {rc}: {short(err)}")
            tries += 1
            if is_mounted(mnt):
                time.sleep(0.2 * tries)
        if is_mounted(mnt):
            for argv in (["fusermount3", "-u", "-z", mnt], ["fusermount", "-u", "-z", mnt],
                         ["umount", "-l", mnt]):
                _run_quiet(argv)
                if not is_mounted(mnt):
                    break
            problems.append(f"`ztfs unmount` left {mnt} mounted; "
                            + ("unmounted lazily" if not is_mounted(mnt) else "STILL MOUNTED"))
        if not is_mounted(mnt):
            try:
                os.rmdir(mnt)
            except OSError as e:
                problems.append(f"cannot remove the mount point {mnt}: {e}")
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return problems


@contextlib.contextmanager
def mounted(z: "Ztfs", path: str, res: Results, where: str, flags: tuple = ()):
    """Mounts `path` on a fresh temporary directory; yields (exit status,
    stderr, mount point). Whatever happens inside (a failure, an exception,
    Ctrl-C), the mount is released on the way out; a clean `ztfs unmount`
    counts as a pass."""
    mnt = os.path.realpath(tempfile.mkdtemp(prefix="ztfs-interop-mnt-"))
    rc, err = 127, b"not run"
    try:
        rc, _, err = z.run("mount", [path, mnt], flags)
        yield rc, err, mnt
    finally:
        was = rc == 0
        problems = release_mount(z, mnt, was)
        for p in problems:
            res.fail(where, p)
        if was and not problems:
            res.ok()


def pread_full(fd: int, n: int, off: int) -> bytes:
    """pread until n bytes or end of file (a short read is legal POSIX)."""
    out = []
    while n > 0:
        b = os.pread(fd, n, off)
        if not b:
            break
        out.append(b)
        n -= len(b)
        off += len(b)
    return b"".join(out)


def first_diff(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def read_part_file(fpath: str, want: bytes, seed: str) -> list[tuple[bool, str]]:
    """Reads one file of the mount every way a program would and compares
    each read with `want`: random-offset preads on a fresh descriptor first
    (so they reach the daemon before the page cache holds the file; a
    compressed part then decodes frames out of order), then Python mmap,
    then one whole read. Returns (ok, what) per comparison."""
    n = len(want)
    out = []
    rng = random.Random(zlib.crc32(seed.encode("utf-8", "surrogatepass")))
    try:
        st = os.stat(fpath)
    except OSError as e:
        return [(False, f"stat: {e}")]
    out.append((st.st_size == n, f"st_size {st.st_size}, the package has {n} bytes"))

    spots = []
    if n:
        for _ in range(3):
            off = rng.randrange(n)
            cap = rng.choice((16, 4096, 65536 + 7, (1 << 20) + 5))
            spots.append((off, rng.randint(1, max(1, min(n - off, cap)))))
        spots.append((n - 1, 2))  # runs past the end: one byte back
        if n > (1 << 20):
            spots.append(((1 << 20) - 100, 200))  # across the first 1 MiB frame boundary
    spots.append((n, 16))  # at the end: nothing
    try:
        fd = os.open(fpath, os.O_RDONLY)
    except OSError as e:
        return out + [(False, f"open: {e}")]
    try:
        for off, ln in spots:
            try:
                got = pread_full(fd, ln, off)
            except OSError as e:
                out.append((False, f"pread({ln} @ {off}): {e}"))
                continue
            exp = want[off : off + ln]
            out.append((got == exp, f"pread({ln} @ {off}) gave {len(got)} bytes, "
                                    f"expected {len(exp)}; first difference at "
                                    f"{first_diff(got, exp)}"))
    finally:
        os.close(fd)

    if n and st.st_size:
        try:
            with open(fpath, "rb") as f:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                try:
                    got = mm[:]
                finally:
                    mm.close()
            out.append((got == want, f"mmap gave {len(got)} bytes, expected {n}; first "
                                     f"difference at {first_diff(got, want)}"))
        except (OSError, ValueError) as e:
            out.append((False, f"mmap: {type(e).__name__}: {e}"))

    try:
        with open(fpath, "rb") as f:
            got = f.read()
        out.append((got == want, f"read() gave {len(got)} bytes, expected {n}; first "
                                 f"difference at {first_diff(got, want)}"))
    except OSError as e:
        out.append((False, f"read(): {e}"))
    MOUNT_STATS["files"] += 1
    MOUNT_STATS["bytes"] += n
    return out


def read_whole(fpath: str) -> bytes:
    with open(fpath, "rb") as f:
        return f.read()


def check_mount(gen: Gen, z: "Ztfs", res: Results, objs: dict, stored_of,
                cat_refused: dict) -> str:
    """Mounts the file and reads every part back through the filesystem.
    Per part: the decoded file against the package's bytes (the bytes `ztfs
    cat` was compared with) by preads, mmap and a whole read; a `.raw` file
    against the stored bytes; a part `cat` refuses must be refused in the
    mount too (no decoded file, `refused` in meta.json, a `.raw` file).
    Also manifest.json against `ztfs manifest` and digest against `ztfs
    digest`. Returns a summary for the status line."""
    where = f"{gen.name} [mount]"
    t0 = time.monotonic()
    nfail = 0

    def fail(what: str):
        nonlocal nfail
        nfail += 1
        if nfail <= 10:
            res.fail(where, what)
        else:
            res.failures.append(f"FAIL {where}: {what[:200]}")

    def check(cond: bool, what: str) -> bool:
        if cond:
            res.ok()
        else:
            fail(what)
        return cond

    rc_m, man_out, err_m = z.run("manifest", [gen.path])
    rc_d, dig_out, err_d = z.run("digest", [gen.path])
    nfiles = 0
    try:
        with mounted(z, gen.path, res, where) as (rc, err, mnt):
            if not check(rc == 0 and is_mounted(mnt),
                         f"`ztfs mount` exited {rc} ({'mounted' if is_mounted(mnt) else 'not mounted'})"
                         f": {short(err)}"):
                return "mount FAILED"

            # manifest.json and digest
            try:
                got = read_whole(os.path.join(mnt, "manifest.json"))
                check(rc_m == 0 and got == man_out,
                      f"manifest.json ({len(got)} bytes) differs from `ztfs manifest` "
                      f"(exit {rc_m}, {len(man_out)} bytes): {short(err_m)}")
            except OSError as e:
                fail(f"manifest.json: {e}")
            dpath = os.path.join(mnt, "digest")
            if rc_d == 0:
                try:
                    got = read_whole(dpath)
                    check(got == dig_out, f"digest holds {short(got)!r}, `ztfs digest` prints "
                                          f"{short(dig_out)!r}")
                except OSError as e:
                    fail(f"digest: {e} (`ztfs digest` prints {short(dig_out)!r})")
            elif rc_d == 1:
                check(not os.path.lexists(dpath),
                      "digest exists though `ztfs digest` exits 1 (content digest undefined)")
            else:
                fail(f"`ztfs digest` exited {rc_d}: {short(err_d)}")

            # Object directories, found by the true name in meta.json.
            by_name: dict = {}
            for entry in sorted(os.listdir(mnt)):
                d = os.path.join(mnt, entry)
                if not os.path.isdir(d):
                    continue
                try:
                    meta = json.loads(read_whole(os.path.join(d, "meta.json")))
                    name = meta["name"]
                except (OSError, ValueError, KeyError, TypeError) as e:
                    fail(f"{entry!r}/meta.json unreadable: {type(e).__name__}: {e}")
                    continue
                if name in by_name:
                    fail(f"two directories claim object {name!r}: {by_name[name][0]!r}, {entry!r}")
                by_name[name] = (entry, meta)
            missing = [n for n in objs if n not in by_name]
            extra = [n for n in by_name if n not in objs]
            check(not missing and not extra,
                  f"object directories differ from the package's objects: missing "
                  f"{missing[:5]!r}, extra {extra[:5]!r}")

            for name, o in objs.items():
                if name not in by_name:
                    continue
                entry, meta = by_name[name]
                odir = os.path.join(mnt, entry)
                mparts = {}
                for mp in meta.get("parts") or []:
                    if isinstance(mp, dict) and "name" in mp:
                        mparts[mp["name"]] = mp
                check(sorted(mparts) == sorted(o.parts),
                      f"{name!r}: meta.json lists parts {sorted(mparts)!r}, the package "
                      f"{sorted(o.parts)!r}")
                for pn, pp in o.parts.items():
                    mp = mparts.get(pn)
                    if mp is None:
                        continue
                    files = mp.get("files") or []
                    dec = [f for f in files if not f.endswith(".raw")]
                    raws = [f for f in files if f.endswith(".raw")]
                    label = f"{name!r}/{pn!r}"
                    check(mp.get("available") is True,
                          f"{label}: meta.json says available {mp.get('available')!r}")
                    stored = stored_of(name, pn)
                    if (name, pn) in cat_refused:
                        # ztfs cat refused it: the mount must refuse it the same way.
                        check(not dec and bool(mp.get("refused")) and len(raws) == 1,
                              f"{label}: `ztfs cat` refuses it ({cat_refused[(name, pn)]}); "
                              f"the mount serves files {files!r}, refused {mp.get('refused')!r}")
                    else:
                        if not check(len(dec) == 1 and mp.get("refused") is None,
                                     f"{label}: the package reads it and `ztfs cat` decodes "
                                     f"it, but meta.json gives files {files!r}, refused "
                                     f"{mp.get('refused')!r}"):
                            continue
                        nfiles += 1
                        for ok, what in read_part_file(os.path.join(odir, dec[0]), pp.data,
                                                       f"{gen.name}\0{name}\0{pn}"):
                            check(ok, f"{label} file {dec[0]!r}: {what}")
                    for rf in raws:
                        nfiles += 1
                        try:
                            got = read_whole(os.path.join(odir, rf))
                        except OSError as e:
                            fail(f"{label} file {rf!r}: {e}")
                            continue
                        if stored is not None:
                            check(got == stored, f"{label} file {rf!r}: {len(got)} bytes, "
                                                 f"not the {len(stored)} stored bytes")
    finally:
        MOUNT_STATS["mounts"] += 1
        MOUNT_STATS["seconds"] += time.monotonic() - t0
    return (f"mount: {nfiles} files read in {time.monotonic() - t0:.2f}s"
            + (f", {nfail} mismatches" if nfail else ""))
