"""Kernel passthrough in the read benchmark (`--only passthrough`).

Run by bench/mount.py, which hands over itself (`bm`: the harness's Mount,
readers and table helpers, so that its exit path unmounts what this module
mounts). Three groups of rows, each figure measured in the same run as its
baselines, the readers' order rotating from one repetition to the next:

  memory   the big file where the work directory is, `--passthrough memory`
  reflink  the big file copied to an XFS filesystem made in a loop file
           under the work directory, `--passthrough reflink`
  zstd     a zt.zstd-seekable/1 part (bench/zstd.py's c0, written by its
           generator in the project venv) through its memory clone

The columns:

  native   the blob's byte range of the model file (for zstd: the big
           file's raw blob, the same size as the part decoded), warm
  clone    a backing file of the same kind made by this script and read
           natively, the ceiling of passthrough from it: a memfd the blob
           is copied into (memory), a FICLONERANGE clone of the blob into
           an unnamed file on the XFS filesystem (reflink); its "open" is
           the making
  bare     examples/bare_server.rs serving the blob (buffered)
  buffered `ztfs mount --passthrough off`
  pt       the passthrough mount (`--log-level debug`: the `read: inode`
           lines of its log count the reads that reached the daemon)

"1st read" is the wall clock of open() on a fresh mount (for a passthrough
mount, the clone is made before the open returns) plus a dd bs=1M of the
whole file. A memory clone drops the model's cached pages of its blob, and
the random reads leave a page cache of scattered small folios, so after
each the native file's cache is dropped and rebuilt by one sequential read,
as it is at the start: native is read from a page cache built the same way
in every repetition. A reflink clone starts with its own page cache empty
(the extents are shared, the pages are not): its 1st read is also shown
against a native read of the XFS file with its page cache dropped (the
loop file under it stays cached on the work filesystem).

A benchmark, not a test: nothing is asserted about time. Standard library
only; the zstd file's writer runs in the venv (scripts/venv.sh), and when
that cannot be made the zstd rows are left out, with the reason printed.
"""

import fcntl
import json
import mmap
import os
import shutil
import struct
import subprocess
import sys
import time

from . import harness

SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLS = ("native", "clone", "bare", "off", "pt")
HEAD = ["figure", "unit", "native", "clone", "bare", "ztfs buffered", "ztfs passthrough",
        "pt/native", "pt/clone", "pt/buffered"]
# _IOW(0x94, 13, struct file_clone_range): linux/fs.h.
FICLONERANGE = 0x4020940D
BLOCK = 4096


class Ctx:
    """What every group needs: the arguments, bench_mount, the rows."""

    def __init__(self, a, bins, bm, big, n):
        self.a, self.bins, self.bm, self.big, self.n = a, bins, bm, big, n
        self.rows = []  # (section, figure, unit, {col: [samples]}, higher)
        self.notes = []

    def row(self, section, figure, unit, higher=True):
        cols = {c: [] for c in COLS}
        self.rows.append((section, figure, unit, cols, higher))
        return cols

    def seq_rows(self, sec):
        return {
            "open": self.row(sec, "open() on a fresh mount (clone: making it)", "ms",
                             higher=False),
            "first": self.row(sec, "1st read after a fresh mount (open + dd, wall clock)",
                              "GB/s"),
            "second": self.row(sec, "2nd read", "GB/s"),
            "scan": self.row(sec, "mmap, scan every byte", "GB/s"),
        }


def rotate(items, i):
    k = i % len(items)
    return items[k:] + items[:k]


def fs_type(path):
    """The filesystem type `path` is on (the longest mount point above it)."""
    path, best, kind = os.path.realpath(path), "", "?"
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            mp = left.split()[4]
            under = path == mp or path.startswith(mp.rstrip("/") + "/")
            if under and len(mp) >= len(best):
                best, kind = mp, right.split()[0]
    return kind


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def rewarm(bm, path, offset, n):
    """Drops `path`'s page cache and reads [offset, +n) back in one
    sequential pass (its folios as large as readahead makes them)."""
    drop_cache(path)
    bm.dd_seq(path, offset, n)


def fill_memfd(path, offset, n, chunk=1 << 20):
    """A memfd holding [offset, +n) of `path`, copied from a mapping in
    `chunk` writes (as the daemon fills a memory clone); its fd."""
    fd = os.memfd_create("bench-passthrough")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        view = memoryview(m)
        try:
            at = 0
            while at < n:
                at += os.pwrite(fd, view[offset + at:offset + min(n, at + chunk)], at)
        finally:
            view.release()
    return fd


def reflink_range(path, offset, n):
    """An unnamed file on `path`'s filesystem sharing the extents of
    [offset, +n) of `path` (FICLONERANGE; a last partial block copied), as
    the daemon makes a reflink clone; its fd."""
    src = os.open(path, os.O_RDONLY)
    try:
        fd = os.open(os.path.dirname(path), os.O_TMPFILE | os.O_RDWR, 0o600)
        try:
            shared = n // BLOCK * BLOCK
            fcntl.ioctl(fd, FICLONERANGE, struct.pack("=qQQQ", src, offset, shared, 0))
            os.pwrite(fd, os.pread(src, n - shared, offset + shared), shared)
        except OSError:
            os.close(fd)
            raise
    finally:
        os.close(src)
    return fd


def fd_path(fd):
    """A path that opens the same file as our `fd` (for dd, mmap, pread)."""
    return f"/proc/{os.getpid()}/fd/{fd}"


def measure(ctx, rows, who, path, skip, made=0.0):
    """One reader's sequential figures: open (timed, plus `made` seconds
    spent making the file) and a 1st read, a 2nd read, an mmap scan."""
    bm, n = ctx.bm, ctx.n
    t0 = time.perf_counter() - made
    fd = os.open(path, os.O_RDONLY)
    opened = time.perf_counter() - t0
    try:
        first = bm.dd_wait([bm.start_dd(bm.dd_argv(path, skip, n))], n, t0)
    finally:
        os.close(fd)
    rows["open"][who].append(opened * 1e3)
    rows["first"][who].append(first)
    rows["second"][who].append(bm.dd_seq(path, skip, n))
    rows["scan"][who].append(bm.mmap_read(path, skip, n, "scan"))


def mount(ctx, who, file, mode=None, part="big"):
    """A fresh mount of `file`: the bare server, ztfs buffered (`off`) or
    ztfs with `--passthrough mode` and a debug log (`pt`)."""
    bm, a = ctx.bm, ctx.a
    mnt = os.path.join(a.work, f"mnt-{who}")
    os.makedirs(mnt, exist_ok=True)
    if who == "bare":
        return bm.Mount.bare(ctx.bins, file, mnt, bm.BLOB_OFFSET, ctx.n)
    if who == "off":
        m = bm.Mount.ztfs(ctx.bins, file, mnt)
    else:
        log = os.path.join(a.work, "pt-daemon.log")
        open(log, "w").close()
        flags = ("--passthrough", mode, "--log-level", "debug", "--log-file", log)
        m = bm.Mount.ztfs(ctx.bins, file, mnt, flags=flags)
        m.log = log
    m.path = os.path.join(m.mnt, part, "data")
    return m


def daemon_reads(ctx, m):
    """Reads that reached a passthrough mount's daemon (its debug log, read
    after the unmount), as text; "no clone" when it made none."""
    with open(m.log, errors="replace") as f:
        lines = f.read().splitlines()
    if not any("clone of" in line for line in lines):
        ctx.bm.log(f"passthrough: {m.mnt} made no clone; its log says:")
        for line in lines:
            if "WARN" in line or "INFO" in line:
                ctx.bm.log(f"  {line}")
        return "no clone"
    return str(sum("read: inode" in line for line in lines))


# ------------------------------------------------------------- memory clones


def bench_memory(ctx):
    bm, a, big, n = ctx.bm, ctx.a, ctx.big, ctx.n
    sec = (f"passthrough, memory clones (the model on {fs_type(big)}, "
           "`--passthrough memory`; clone: a memfd), dd bs=1M")
    rows = ctx.seq_rows(sec)
    reads = ctx.row(sec, "read requests reaching the daemon (per mount, seq and random)", "",
                    higher=None)
    rsec = f"passthrough, memory clones: 4 KiB random pread, median of {a.preads} (Python loop)"
    cold = ctx.row(rsec, "fresh mount (FUSE cache cold; clone and backing file warm)", "µs",
                   higher=False)
    warm = ctx.row(rsec, "same offsets again", "µs", higher=False)
    rewarm(bm, big, bm.BLOB_OFFSET, n)
    for i in range(a.reps):
        bm.log(f"passthrough, memory clones, rep {i + 1}/{a.reps}")
        for who in rotate(["native", "clone", "bare", "off", "pt"], i):
            memory_seq(ctx, rows, reads, who)
        memory_random(ctx, cold, warm, reads, 2000 + i)


def memory_seq(ctx, rows, reads, who):
    bm, big, n = ctx.bm, ctx.big, ctx.n
    if who == "native":
        return measure(ctx, rows, who, big, bm.BLOB_OFFSET)
    if who == "clone":
        t0 = time.perf_counter()
        fd = fill_memfd(big, bm.BLOB_OFFSET, n)
        try:
            return measure(ctx, rows, who, fd_path(fd), 0, time.perf_counter() - t0)
        finally:
            os.close(fd)
    m = mount(ctx, who, big, "memory")
    try:
        measure(ctx, rows, who, m.path, 0)
    finally:
        m.unmount(ctx.bins)
    if who == "pt":
        reads["pt"].append(daemon_reads(ctx, m))
        rewarm(bm, big, bm.BLOB_OFFSET, n)  # the clone dropped it


def memory_random(ctx, cold, warm, reads, seed):
    bm, a, big, n = ctx.bm, ctx.a, ctx.big, ctx.n
    mounts, fd = {}, None
    try:
        for w in ("bare", "off", "pt"):
            mounts[w] = mount(ctx, w, big, "memory")
        # The daemon's clone first (untimed), then the memfd, then the page
        # cache the clone dropped: every reader starts from warm bytes.
        os.close(os.open(mounts["pt"].path, os.O_RDONLY))
        fd = fill_memfd(big, bm.BLOB_OFFSET, n)
        rewarm(bm, big, bm.BLOB_OFFSET, n)
        targets = {"native": (big, bm.BLOB_OFFSET), "clone": (fd_path(fd), 0)}
        targets |= {w: (m.path, 0) for w, m in mounts.items()}
        for row in (cold, warm):
            for who, x in bm.rand_preads(targets, n, a.preads, seed).items():
                row[who].append(x)
    finally:
        if fd is not None:
            os.close(fd)
        for m in mounts.values():
            m.unmount(ctx.bins)
    reads["pt"].append(daemon_reads(ctx, mounts["pt"]))
    rewarm(bm, big, bm.BLOB_OFFSET, n)


# ------------------------------------------------------------ reflink clones


def make_xfs(bm, img, mnt, size):
    for argv in (["truncate", "-s", str(size), img], ["mkfs.xfs", "-q", "-m", "reflink=1", img],
                 ["mount", "-o", "loop", img, mnt]):
        r = subprocess.run(argv, capture_output=True)
        if r.returncode != 0:
            raise bm.Failed(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.decode().strip()}")


def remove_xfs(bm, img, mnt):
    """Unmounts the XFS filesystem (lazily if busy: its loop device goes
    with the last user) and removes its file."""
    if harness.mounted(mnt) and subprocess.run(["umount", mnt], capture_output=True).returncode:
        subprocess.run(["umount", "-l", mnt])
    if os.path.exists(img):
        os.unlink(img)


def bench_reflink(ctx):
    bm, a, n = ctx.bm, ctx.a, ctx.n
    img, mnt = os.path.join(a.work, "xfs.img"), os.path.join(a.work, "xfs")
    os.makedirs(mnt, exist_ok=True)
    try:
        bm.log(f"making an XFS filesystem in {img} and copying the big file there")
        make_xfs(bm, img, mnt, n + 512 * bm.MIB)
        xbig = os.path.join(mnt, os.path.basename(ctx.big))
        shutil.copyfile(ctx.big, xbig)
        with open(xbig, "rb") as f:
            os.fsync(f.fileno())
        # The first read from the loop device after the copy is slow
        # (measured: a third of later cold reads): take it here.
        rewarm(bm, xbig, bm.BLOB_OFFSET, n)
        reflink_reps(ctx, xbig)
    finally:
        remove_xfs(bm, img, mnt)


def reflink_reps(ctx, xbig):
    bm, a = ctx.bm, ctx.a
    sec = ("passthrough, reflink clones (the model copied to XFS, `--passthrough reflink`; "
           "clone: FICLONERANGE), dd bs=1M")
    rows = ctx.seq_rows(sec)
    rows["cold"] = ctx.row(sec, "1st read, native with its page cache dropped first", "GB/s")
    reads = ctx.row(sec, "read requests reaching the daemon (per mount, seq and random)", "",
                    higher=None)
    rsec = f"passthrough, reflink clones: 4 KiB random pread, median of {a.preads} (Python loop)"
    rcold = ctx.row(rsec, "fresh mount (every page cache cold: native's dropped)", "µs",
                    higher=False)
    rwarm = ctx.row(rsec, "same offsets again", "µs", higher=False)
    for i in range(a.reps):
        bm.log(f"passthrough, reflink clones, rep {i + 1}/{a.reps}")
        for who in rotate(["native", "clone", "pt"], i):
            reflink_seq(ctx, rows, reads, who, xbig)
        reflink_random(ctx, rcold, rwarm, reads, xbig, 3000 + i)


def reflink_seq(ctx, rows, reads, who, xbig):
    bm, n = ctx.bm, ctx.n
    if who == "native":
        measure(ctx, rows, who, xbig, bm.BLOB_OFFSET)
        drop_cache(xbig)
        rows["cold"][who].append(bm.dd_seq(xbig, bm.BLOB_OFFSET, n))
        return
    if who == "clone":
        t0 = time.perf_counter()
        fd = reflink_range(xbig, bm.BLOB_OFFSET, n)
        try:
            measure(ctx, rows, who, fd_path(fd), 0, time.perf_counter() - t0)
        finally:
            os.close(fd)
    else:
        m = mount(ctx, who, xbig, "reflink")
        try:
            measure(ctx, rows, who, m.path, 0)
        finally:
            m.unmount(ctx.bins)
        reads[who].append(daemon_reads(ctx, m))
    rows["cold"][who].append(rows["first"][who][-1])


def reflink_random(ctx, cold, warm, reads, xbig, seed):
    bm, a, n = ctx.bm, ctx.a, ctx.n
    m, fd = mount(ctx, "pt", xbig, "reflink"), None
    try:
        fd = reflink_range(xbig, bm.BLOB_OFFSET, n)
        drop_cache(xbig)
        targets = {"native": (xbig, bm.BLOB_OFFSET), "clone": (fd_path(fd), 0),
                   "pt": (m.path, 0)}
        for row in (cold, warm):
            for who, x in bm.rand_preads(targets, n, a.preads, seed).items():
                row[who].append(x)
    finally:
        if fd is not None:
            os.close(fd)
        m.unmount(ctx.bins)
    reads["pt"].append(daemon_reads(ctx, m))
    rewarm(bm, xbig, bm.BLOB_OFFSET, n)


# --------------------------------------------------------------- zstd part


def write_zstd(ctx, path):
    """Writes bench/zstd.py's file (parts c0, c1 of the big file's size)
    with its generator in the venv; c0's part from `ztfs ls --json`, or
    None with a note when the venv cannot be made."""
    bm = ctx.bm
    r = subprocess.run([os.path.join(SCRIPTS, "venv.sh")], stdout=subprocess.PIPE)
    if r.returncode != 0:
        ctx.notes.append(f"zstd rows left out: scripts/venv.sh failed (exit {r.returncode})")
        return None
    python = os.path.join(r.stdout.decode().strip(), "bin", "python")
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from bench import zstd as z; "
            "z.write_file(sys.argv[2], int(sys.argv[3]), z.MIB); "
            "print(json.dumps(z.parts_of(sys.argv[4], sys.argv[2])['c0']))")
    argv = [python, "-c", code, SCRIPTS, path, str(ctx.n), ctx.a.ztfs]
    r = subprocess.run(argv, stdout=subprocess.PIPE, env=dict(os.environ,
                                                              PYTHONDONTWRITEBYTECODE="1"))
    if r.returncode != 0:
        raise bm.Failed(f"bench_zstd.write_file in the venv: exit {r.returncode}")
    part = json.loads(r.stdout)
    if part["encoding"] != "zt.zstd-seekable/1" or part["decoded_length"] != ctx.n:
        raise bm.Failed(f"c0 of {path}: {part['encoding']!r}, {part['decoded_length']} bytes")
    return part


def bench_zstd(ctx):
    bm, a, big, n = ctx.bm, ctx.a, ctx.big, ctx.n
    path = os.path.join(a.work, "zstd.zt")
    bm.log(f"writing {path} with bench/zstd.py's generator")
    part = write_zstd(ctx, path)
    if part is None:
        return
    ratio = part["decoded_length"] / part["stored_length"]
    sec = (f"passthrough, a zt.zstd-seekable/1 part (compression ratio {ratio:.2f}) through its "
           "memory clone; native: the big file's raw blob of the same size, dd bs=1M")
    rows = ctx.seq_rows(sec)
    reads = ctx.row(sec, "read requests reaching the daemon (per mount)", "", higher=None)
    bm.dd_seq(path, 0, os.path.getsize(path))
    rewarm(bm, big, bm.BLOB_OFFSET, n)
    for i in range(a.reps):
        bm.log(f"passthrough, zstd part, rep {i + 1}/{a.reps}")
        for who in rotate(["native", "off", "pt"], i):
            if who == "native":
                measure(ctx, rows, who, big, bm.BLOB_OFFSET)
                continue
            m = mount(ctx, who, path, "memory", part="c0")
            try:
                measure(ctx, rows, who, m.path, 0)
            finally:
                m.unmount(ctx.bins)
            if who == "pt":
                reads["pt"].append(daemon_reads(ctx, m))


# ------------------------------------------------------------------ entry


def bench(a, bins, bm, big, n):
    """Runs the three groups; returns what print_tables prints."""
    if shutil.which("mkfs.xfs") is None:
        raise bm.Failed("no mkfs.xfs on PATH: the passthrough section makes an XFS filesystem "
                        "for reflink clones (apt-get install xfsprogs; .ci/run installs it)")
    ctx = Ctx(a, bins, bm, big, n)
    for group in (bench_memory, bench_reflink, bench_zstd):
        t0 = time.monotonic()
        group(ctx)
        bm.log(f"{group.__name__}: {time.monotonic() - t0:.0f} s")
    return ctx


def shmem_thp():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/shmem_enabled") as f:
            return next((w[1:-1] for w in f.read().split() if w.startswith("[")), "?")
    except OSError:
        return "?"


def print_tables(ctx, out=sys.stdout):
    bm = ctx.bm
    print(f"**passthrough** (blob {ctx.n / 2**30:.3g} GiB, medians of {ctx.a.reps} [min–max]; "
          "clone: a backing file of the same kind made by the benchmark, read natively; pt: the "
          "passthrough mount; ratios are speed ratios, as above; ztfs makes its memory clones in a "
          "huge-page tmpfs of its own where it can (its log says when they are memfds); the "
          f"clone column's memfd follows the machine's shmem THP setting, {shmem_thp()!r})", file=out)
    for note in ctx.notes:
        print(f"\n{note}", file=out)
    print(file=out)
    print("| " + " | ".join(HEAD) + " |", file=out)
    print("|" + "|".join("---" for _ in HEAD) + "|", file=out)
    section = None
    for sec, fig, unit, cols, higher in ctx.rows:
        if sec != section:
            print("| " + " | ".join([f"**{sec}**"] + [""] * (len(HEAD) - 1)) + " |", file=out)
            section = sec
        cells = [fig, unit] + [bm.fmt_cell(cols[c]) for c in COLS]
        cells += [bm.ratio(cols["pt"], cols[c], higher) for c in ("native", "clone", "off")]
        print("| " + " | ".join(cells) + " |", file=out)
