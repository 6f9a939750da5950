#!/usr/bin/env python3
"""Read-speed benchmark of a ztfs mount, beside a bare fuser server and native reads.

Run through scripts/bench-mount.sh, which builds the binaries and owns the
work directory. Every figure is measured in the same run as its baselines,
the three interleaved (their order rotates from one repetition to the next),
and printed as median [min-max]. Ratios are speed ratios: for a time, the
baseline's time over ztfs's, so 1.0 means as fast as the baseline and a
value above 1 means faster.

  native  the backing file, warm in the page cache (dd, mmap, pread)
  bare    examples/bare_server.rs: the barest fuser server serving the same
          byte range from an mmap, with ztfs's mount settings
  ztfs    `ztfs mount --passthrough off` (every read reaches the daemon),
          reading big/data (and, with the default section or --only views,
          big/data.npy and the big tensor's range in model.safetensors:
          bench/views.py)

With --only passthrough (not run by default), a section of its own on
kernel passthrough: memory clones, reflink clones on an XFS loop filesystem
and a compressed part's memory clone, beside native reads, a memfd of the
same bytes, the bare server and `--passthrough off`; its table and what it
measures are described in bench/passthrough.py.

With --format hurray, safetensors or gguf the big file is a Hurray
container (one u8 tensor), a safetensors file (one U8 tensor) or a GGUF v3
file (one f32 tensor) instead of a .zt file, the tensor's bytes at the same
offset (bench/formats.py): the same reads, against the same baselines,
through `big/data`; the metadata section's many-object files are then
safetensors or GGUF files too (hurray keeps .zt ones).

A benchmark, not a test: nothing is asserted about time. It exits non-zero
only when something fails to run. Python standard library only.
"""

import argparse
import mmap
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

from . import formats as bench_formats
from . import passthrough as bench_passthrough
from . import remote as bench_remote
from . import views as bench_views

BLOB_OFFSET = bench_formats.BLOB_OFFSET
MIB = bench_formats.MIB
PAGE = 4096
# The blob's byte pattern never contains this byte, so mmap.find scans it all.
ABSENT = b"\xff"


from .harness import Failed, Mount, cpu_ns, log, read_ahead_kb, rss_kib, run


# ------------------------------------------------------------------ readers


def start_dd(argv):
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), argv


def dd_wait(started, count, t0=None):
    t0 = time.perf_counter() if t0 is None else t0
    total = 0
    for p, argv in started:
        err = p.communicate()[1]
        m = re.search(rb"^(\d+) bytes", err, re.M)
        n = int(m.group(1)) if m else -1
        if p.returncode != 0 or (count is not None and n != count):
            raise Failed(f"{' '.join(argv)}: exit {p.returncode}, {n} bytes: {err.decode().strip()}")
        total += n
    return total / (time.perf_counter() - t0) / 1e9


def dd_argv(path, skip, count):
    argv = ["dd", f"if={path}", "of=/dev/null", "bs=1M", f"count={count}"]
    if skip:
        argv.append(f"skip={skip}")
    return argv + ["iflag=" + ("skip_bytes,count_bytes" if skip else "count_bytes")]


def dd_seq(path, skip, count):
    t0 = time.perf_counter()
    return dd_wait([start_dd(dd_argv(path, skip, count))], count, t0)


def dd_halves(path, skip, count):
    """Two concurrent dd readers of the two halves; aggregate GB/s."""
    half = count // 2 // PAGE * PAGE
    t0 = time.perf_counter()
    ps = [
        start_dd(dd_argv(path, skip, half)),
        start_dd(dd_argv(path, skip + half, count - half)),
    ]
    total = 0
    for p, argv in ps:
        err = p.communicate()[1]
        m = re.search(rb"^(\d+) bytes", err, re.M)
        if p.returncode != 0 or not m:
            raise Failed(f"{' '.join(argv)}: exit {p.returncode}: {err.decode().strip()}")
        total += int(m.group(1))
    dt = time.perf_counter() - t0
    if total != count:
        raise Failed(f"two readers of {path} read {total} bytes of {count}")
    return total / dt / 1e9


def mmap_read(path, offset, length, how):
    """Maps [offset, +length) MAP_SHARED read-only (what numpy's memmap does)
    and touches one byte per page (`touch`) or scans every byte (`scan`,
    memchr speed); GB/s, mapping and unmapping included."""
    fd = os.open(path, os.O_RDONLY)
    try:
        t0 = time.perf_counter()
        m = mmap.mmap(fd, length, access=mmap.ACCESS_READ, offset=offset)
        if how == "touch":
            ok = len(m[::PAGE]) == -(-length // PAGE)
        else:
            ok = m.find(ABSENT) == -1
        m.close()
        dt = time.perf_counter() - t0
    finally:
        os.close(fd)
    if not ok:
        raise Failed(f"mmap {how} of {path} saw unexpected bytes")
    return length / dt / 1e9


def rand_preads(targets, length, count, seed, chunk=1000):
    """4 KiB preads at `count` random 4 KiB-aligned offsets of [0, length)
    into each target {who: (path, base offset)}, each call timed on its own;
    the median latency per target in µs. The targets take turns by chunks,
    so a change of scheduler state (which CPU a daemon thread wakes on) hits
    them all alike."""
    rng = random.Random(seed)
    offsets = [rng.randrange(length // PAGE) * PAGE for _ in range(count)]
    fds = {who: os.open(path, os.O_RDONLY) for who, (path, _) in targets.items()}
    lat = {who: [] for who in targets}
    clock, pread = time.perf_counter_ns, os.pread
    try:
        order = list(targets)
        for k, c in enumerate(range(0, count, chunk)):
            for who in order[k % len(order):] + order[:k % len(order)]:
                fd, base, out = fds[who], targets[who][1], lat[who]
                for off in offsets[c:c + chunk]:
                    t = clock()
                    b = pread(fd, PAGE, base + off)
                    out.append(clock() - t)
                    if len(b) != PAGE:
                        raise Failed(f"pread {targets[who][0]} at {base + off}: {len(b)} bytes")
    finally:
        for fd in fds.values():
            os.close(fd)
    return {who: statistics.median(x) / 1000 for who, x in lat.items()}


def timed(argv, **kw):
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise Failed(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.decode().strip()}")
    return dt


# ---------------------------------------------------------------- the table


class Results:
    def __init__(self):
        self.rows = []  # (section, figure, unit, {col: [samples]}, higher_is_better)

    def row(self, section, figure, unit, higher=True):
        """A figure's samples per column; `higher` says which way is faster,
        None that the figure is a check, not a speed (no ratio)."""
        cols = {"native": [], "bare": [], "ztfs": []}
        self.rows.append((section, figure, unit, cols, higher))
        return cols


def med(xs):
    return statistics.median(xs) if xs else None


def fmt_num(x):
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_cell(xs):
    if not xs:
        return "–"
    if isinstance(xs[0], str):
        return xs[0] if len(set(xs)) == 1 else "/".join(sorted(set(xs)))
    if len(xs) == 1:
        return fmt_num(xs[0])
    return f"{fmt_num(med(xs))} [{fmt_num(min(xs))}–{fmt_num(max(xs))}]"


def ratio(a, b, higher):
    """Speed ratio of column a against baseline b."""
    if higher is None or not a or not b or isinstance(a[0], str) or isinstance(b[0], str):
        return "–"
    ma, mb = med(a), med(b)
    if not ma or not mb:
        return "–"
    return f"{(ma / mb if higher else mb / ma):.2f}"


def print_table(rows, out=sys.stdout):
    head = ["figure", "unit", "native", "bare", "ztfs", "ztfs/bare", "ztfs/native"]
    lines = []
    section = None
    for sec, fig, unit, cols, higher in rows:
        if sec != section:
            lines.append(None)
            lines.append([f"**{sec}**"] + [""] * 6)
            section = sec
        lines.append([
            fig, unit, fmt_cell(cols["native"]), fmt_cell(cols["bare"]), fmt_cell(cols["ztfs"]),
            ratio(cols["ztfs"], cols["bare"], higher), ratio(cols["ztfs"], cols["native"], higher),
        ])
    print("| " + " | ".join(head) + " |", file=out)
    print("|" + "|".join("---" for _ in head) + "|", file=out)
    for line in lines:
        if line is not None:
            print("| " + " | ".join(line) + " |", file=out)


# --------------------------------------------------------------- the runs


def rotations(reps):
    names = ["native", "bare", "ztfs"]
    for i in range(reps):
        k = i % 3
        yield i, names[k:] + names[:k]


def bench_default(a, bins, res, big, n):
    sec = "default mode (buffered, FOPEN_KEEP_CACHE), dd bs=1M"
    first = res.row(sec, "1st read after a fresh mount (wall clock, incl. exec+open)", "GB/s")
    second = res.row(sec, "2nd read", "GB/s")
    second_cpu = res.row(sec, "daemon CPU during the 2nd read (≈0: served from the FUSE cache)",
                         "ms", higher=None)
    third = res.row(sec, "3rd read", "GB/s")
    touch = res.row(sec, "mmap of the warm file, touch 1 B/page", "GB/s")
    scan = res.row(sec, "mmap of the warm file, scan every byte", "GB/s")
    cpu = res.row(sec, "daemon CPU for the 1st read", "CPU-s/GiB", higher=False)
    ra = res.row(sec, "bdi read_ahead_kb of the mount", "KiB", higher=None)
    for i, order in rotations(a.reps):
        log(f"default mode, rep {i + 1}/{a.reps}")
        for who in order:
            if who == "native":
                for col in (first, second, third):
                    col["native"].append(dd_seq(big, BLOB_OFFSET, n))
                touch["native"].append(mmap_read(big, BLOB_OFFSET, n, "touch"))
                scan["native"].append(mmap_read(big, BLOB_OFFSET, n, "scan"))
                continue
            m = fresh_mount(a, bins, who, big, n, direct_io=False)
            try:
                ra[who].append(read_ahead_kb(m.mnt))
                c0 = cpu_ns(m.pid)
                first[who].append(dd_seq(m.path, 0, n))
                c1 = cpu_ns(m.pid)
                second[who].append(dd_seq(m.path, 0, n))
                c2 = cpu_ns(m.pid)
                third[who].append(dd_seq(m.path, 0, n))
                touch[who].append(mmap_read(m.path, 0, n, "touch"))
                scan[who].append(mmap_read(m.path, 0, n, "scan"))
                cpu[who].append((c1 - c0) / 1e9 / (n / 2**30))
                second_cpu[who].append((c2 - c1) / 1e6)
            finally:
                m.unmount(bins)


def fresh_mount(a, bins, who, big, n, direct_io):
    mnt = os.path.join(a.work, f"mnt-{who}")
    if who == "ztfs":
        return Mount.ztfs(bins, big, mnt, direct_io)
    return Mount.bare(bins, big, mnt, BLOB_OFFSET, n, direct_io)


def bench_direct(a, bins, res, big, n):
    sec = "--direct-io mode (FOPEN_DIRECT_IO), dd bs=1M"
    one = res.row(sec, "1 reader", "GB/s")
    two = res.row(sec, "2 concurrent readers of the two halves, aggregate", "GB/s")
    cpu = res.row(sec, "daemon CPU for 1 reader", "CPU-s/GiB", higher=False)
    shared = res.row(sec, "MAP_SHARED mmap, touch 1 B/page (works?)", "GB/s")
    for i, order in rotations(a.reps):
        log(f"--direct-io, rep {i + 1}/{a.reps}")
        # Fresh daemons each time: where a daemon's threads happen to wake
        # (beside the reader or on the other CPU) sticks to the process.
        mounts = {}
        try:
            for w in ("bare", "ztfs"):
                mounts[w] = fresh_mount(a, bins, w, big, n, direct_io=True)
            for who in order:
                if who == "native":
                    one["native"].append(dd_seq(big, BLOB_OFFSET, n))
                    two["native"].append(dd_halves(big, BLOB_OFFSET, n))
                    shared["native"].append(mmap_read(big, BLOB_OFFSET, n, "touch"))
                    continue
                m = mounts[who]
                c0 = cpu_ns(m.pid)
                one[who].append(dd_seq(m.path, 0, n))
                cpu[who].append((cpu_ns(m.pid) - c0) / 1e9 / (n / 2**30))
                two[who].append(dd_halves(m.path, 0, n))
                try:
                    shared[who].append(mmap_read(m.path, 0, n, "touch"))
                except OSError as e:
                    shared[who].append(f"fails: {e.strerror}")
        finally:
            for m in mounts.values():
                m.unmount(bins)


def bench_random(a, bins, res, big, n):
    sec = f"4 KiB random pread, median latency of {a.preads} calls (Python loop)"
    direct = res.row(sec, "--direct-io (every call reaches the daemon)", "µs", higher=False)
    cpu = res.row(sec, "daemon CPU per call, --direct-io", "µs", higher=False)
    cold = res.row(sec, "buffered, fresh mount (FUSE cache cold, backing file warm)", "µs",
                   higher=False)
    warm = res.row(sec, "buffered, same offsets again (FUSE cache hits)", "µs", higher=False)
    native = (big, BLOB_OFFSET)
    for i in range(a.reps):
        log(f"random 4 KiB reads, rep {i + 1}/{a.reps}")
        seed = 1000 + i
        for direct_io, rows in ((True, (direct,)), (False, (cold, warm))):
            mounts = {}
            try:
                for w in ("bare", "ztfs"):
                    mounts[w] = fresh_mount(a, bins, w, big, n, direct_io)
                targets = {"native": native} | {w: (m.path, 0) for w, m in mounts.items()}
                for row in rows:
                    c0 = {w: cpu_ns(m.pid) for w, m in mounts.items()}
                    for who, x in rand_preads(targets, n, a.preads, seed).items():
                        row[who].append(x)
                    if direct_io:
                        for w, m in mounts.items():
                            cpu[w].append((cpu_ns(m.pid) - c0[w]) / 1e3 / a.preads)
            finally:
                for m in mounts.values():
                    m.unmount(bins)


def bench_metadata(a, bins, big, n, many):
    """Per object count: manifest bytes, `ztfs check` time, mount time,
    daemon RSS; for the `ls` counts, `ls -l` of the root cold and warm beside
    an ext4 directory of empty subdirectories with the same names (those
    `slow_reps` times only: each listing of 100,000 entries takes seconds),
    and the daemon's RSS and peak RSS (VmHWM) after the listings."""
    rows = []
    mnt = os.path.join(a.work, "mnt-meta")
    native_dir = os.path.join(a.work, "native-ls")
    bare_mount = []
    for count, path, manifest in many:
        reps = a.slow_reps if count >= 1_000_000 else a.reps
        r = {"objects": count, "manifest": manifest, "check": [], "mount": [],
             "rss": [], "ls_cold": [], "ls_warm": [], "ls_native": [], "rss_ls": [],
             "hwm_ls": []}
        ls_reps = a.slow_reps if count in a.ls_objects else 0
        for i in range(reps):
            log(f"metadata, {count} objects, rep {i + 1}/{reps}")
            r["check"].append(timed([bins.ztfs, "check", path]) * 1e3)
            m = Mount.ztfs(bins, path, mnt)
            try:
                r["mount"].append(m.started_s * 1e3)
                r["rss"].append(rss_kib(m.pid) / 1024)
                if i < ls_reps:
                    env = dict(os.environ, LC_ALL="C")
                    r["ls_cold"].append(timed(["ls", "-l", mnt], env=env) * 1e3)
                    r["ls_warm"].append(timed(["ls", "-l", mnt], env=env) * 1e3)
                    r["rss_ls"].append(rss_kib(m.pid) / 1024)
                    r["hwm_ls"].append(rss_kib(m.pid, "VmHWM") / 1024)
                    if os.path.isdir(native_dir) and len(os.listdir(native_dir)) != count + 2:
                        shutil.rmtree(native_dir)
                    if not os.path.isdir(native_dir):
                        os.mkdir(native_dir)
                        for name in os.listdir(mnt):
                            os.mkdir(os.path.join(native_dir, name))
                    timed(["ls", "-l", native_dir], env=env)
                    r["ls_native"].append(timed(["ls", "-l", native_dir], env=env) * 1e3)
            finally:
                m.unmount(bins)
            b = Mount.bare(bins, big, os.path.join(a.work, "mnt-bare"), BLOB_OFFSET, n)
            bare_mount.append(b.started_s * 1e3)
            b.unmount(bins)
        rows.append(r)
    return rows, bare_mount


def print_metadata(rows, bare_mount, out=sys.stdout):
    print("| objects | manifest bytes | `ztfs check` ms | `ztfs mount` ms (start to exit 0) "
          "| bare_server mount ms (1 file) | daemon RSS MiB | RSS / manifest |", file=out)
    print("|---|---|---|---|---|---|---|", file=out)
    for r in rows:
        rss = med(r["rss"])
        print(f"| {r['objects']:,} | {r['manifest']:,} | {fmt_cell(r['check'])} "
              f"| {fmt_cell(r['mount'])} | {fmt_cell(bare_mount)} | {fmt_cell(r['rss'])} "
              f"| {rss * MIB / r['manifest']:.1f} |", file=out)
    for r in rows:
        if r["ls_cold"]:
            print(file=out)
            print(f"`ls -l MNT > /dev/null`, {r['objects']:,} object directories at the root:",
                  file=out)
            print(file=out)
            print("| | ms | ratio (ext4 time / this) |", file=out)
            print("|---|---|---|", file=out)
            nat = med(r["ls_native"])
            print(f"| ext4 directory of empty subdirectories with the same names, warm | "
                  f"{fmt_cell(r['ls_native'])} | 1 |", file=out)
            print(f"| ztfs, first `ls -l` after the mount | {fmt_cell(r['ls_cold'])} "
                  f"| {nat / med(r['ls_cold']):.2f} |", file=out)
            print(f"| ztfs, second `ls -l` | {fmt_cell(r['ls_warm'])} "
                  f"| {nat / med(r['ls_warm']):.2f} |", file=out)
            rss_ls, hwm_ls = med(r["rss_ls"]), med(r["hwm_ls"])
            print(f"| daemon RSS after the two listings, MiB (/ manifest) "
                  f"| {fmt_cell(r['rss_ls'])} | {rss_ls * MIB / r['manifest']:.2f} |", file=out)
            print(f"| daemon peak RSS (VmHWM) by then, MiB (/ manifest) "
                  f"| {fmt_cell(r['hwm_ls'])} | {hwm_ls * MIB / r['manifest']:.2f} |", file=out)


def check_big(a, bins, big, n):
    """`ztfs check` accepts the big file and a mount's big/data is its
    tensor: the bytes at BLOB_OFFSET that the baselines read."""
    r = subprocess.run([a.ztfs, "check", big], capture_output=True)
    if r.returncode != 0:
        raise Failed(f"ztfs check refuses the {a.format} file {big}: exit {r.returncode}: "
                     f"{(r.stderr or r.stdout).decode().strip()}")
    m = Mount.ztfs(bins, big, os.path.join(a.work, "mnt-ztfs"))
    try:
        wrong = bench_formats.same_bytes(m.path, big, BLOB_OFFSET, n)
    finally:
        m.unmount(bins)
    if wrong:
        raise Failed(wrong)


def parse_size(s):
    m = re.fullmatch(r"(\d+)\s*([kmgt]?)(i?b?)", s.strip().lower())
    if not m:
        raise argparse.ArgumentTypeError(f"{s!r} is not a size such as 1G or 512M")
    n = int(m.group(1)) << (10 * " kmgt".index(m.group(2) or " "))
    if n < 2 * MIB:
        raise argparse.ArgumentTypeError(f"size {n} is below 2 MiB")
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ztfs", required=True)
    ap.add_argument("--bare", required=True)
    ap.add_argument("--xxh3", required=True)
    ap.add_argument("--gen-manifest", help="examples/gen_manifest binary, if built")
    ap.add_argument("--work", required=True, help="an empty directory on a disk filesystem")
    ap.add_argument("--size", type=parse_size, default=1 << 30, help="blob size (default 1G)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--slow-reps", type=int, default=3)
    ap.add_argument("--preads", type=int, default=20000)
    ap.add_argument("--objects", default="1000,100000,1000000",
                    help="object counts of the metadata files (empty: skip)")
    ap.add_argument("--ls-objects", default="100000,1000000",
                    help="object counts whose root is listed with ls -l")
    ap.add_argument("--only", default="default,direct,random,metadata",
                    help="sections, comma-separated: default (with views), views, direct, "
                         "random, metadata, passthrough, remote")
    ap.add_argument("--format", choices=tuple(bench_formats.EXT), default="zt",
                    help="the big file's container (default zt)")
    a = ap.parse_args()
    a.ls_objects = {int(c) for c in a.ls_objects.split(",") if c}
    bins = a  # the binaries' paths are among the arguments
    Mount.ztfs_bin = a.ztfs
    only = set(a.only.split(","))
    n = a.size
    big = os.path.join(a.work, "big." + bench_formats.EXT[a.format])
    for d in ("mnt-bare", "mnt-ztfs", "mnt-meta"):
        os.makedirs(os.path.join(a.work, d), exist_ok=True)

    log(f"writing {big}: one tensor of {n} bytes at {BLOB_OFFSET}")
    try:
        bench_formats.make_big(big, n, a.xxh3, a.format)
    except ValueError as e:
        raise Failed(str(e)) from None
    check_big(a, bins, big, n)
    many = []
    gens = set()
    counts = [int(c) for c in a.objects.split(",") if c] if "metadata" in only else []
    many_fmt = a.format if a.format in ("safetensors", "gguf") else "zt"
    for count in counts:
        path = os.path.join(a.work, f"many-{count}.{bench_formats.EXT[many_fmt]}")
        how = "python"
        if many_fmt != "zt":
            log(f"writing {path}: {count} tensors (bench/formats.py)")
            many.append((count, path, bench_formats.write_many(path, many_fmt, count)))
            timed([a.ztfs, "check", path])
            gens.add(how)
            continue
        if a.gen_manifest:
            log(f"writing {path}: {count} objects (examples/gen_manifest)")
            r = subprocess.run([a.gen_manifest, str(count), path], capture_output=True)
            ok = r.returncode == 0 and subprocess.run([a.ztfs, "check", path],
                                                      capture_output=True).returncode == 0
            how = "gen_manifest" if ok else "python (gen_manifest failed)"
        if how.startswith("python"):
            log(f"writing {path}: {count} objects ({how})")
            bench_formats.make_many(path, count, a.xxh3)
            timed([a.ztfs, "check", path])
        many.append((count, path, bench_formats.manifest_len(path)))
        gens.add(how)

    # Warm the backing file, then run the sections.
    dd_seq(big, 0, os.path.getsize(big))
    res = Results()
    if "default" in only:
        bench_default(a, bins, res, big, n)
    if "default" in only or "views" in only:
        def mount(who):
            m = fresh_mount(a, bins, who, big, n, direct_io=False)
            return argparse.Namespace(mnt=m.mnt, path=m.path, unmount=lambda: m.unmount(bins))

        bench_views.bench_views(a, res, big, n, BLOB_OFFSET, mount, dd_seq, rotations)
    if "direct" in only:
        bench_direct(a, bins, res, big, n)
    if "random" in only:
        bench_random(a, bins, res, big, n)
    meta = bench_metadata(a, bins, big, n, many) if "metadata" in only and many else None
    # They get this module as it runs (__main__) for its readers and table
    # helpers; their mounts go in harness.Mount's registry, which the exit
    # path below unmounts.
    pt = (bench_passthrough.bench(a, bins, sys.modules[__name__], big, n)
          if "passthrough" in only else None)
    remote = (bench_remote.bench(a, bins, sys.modules[__name__], big, n)
              if "remote" in only else None)

    cpu = os.cpu_count()
    uname = os.uname()
    print()
    print(f"ztfs read benchmark ({a.format} file): blob {n / 2**30:.3g} GiB, kernel {uname.release}, {cpu} CPUs, "
          f"medians of {a.reps} ({a.slow_reps} for 1M objects and ls -l) [min–max]; "
          "ratios are speed ratios (for times and latencies: baseline time / ztfs time)")
    if res.rows:
        print()
        print_table(res.rows)
    if pt:
        print()
        bench_passthrough.print_tables(pt)
    if remote:
        print()
        bench_remote.print_tables(sys.modules[__name__], remote, n, a.reps)
    if meta:
        print()
        print("**metadata** (ztfs only; baselines: validation alone, and the bare server's mount; "
              f"files written by {', '.join(sorted(gens))}"
              + ("; the manifest is the file's header" if many_fmt != "zt" else "") + ")")
        print()
        print_metadata(*meta)


if __name__ == "__main__":
    run(main, "bench mount")
