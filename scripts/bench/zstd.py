#!/usr/bin/env python3
"""Decode-speed benchmark of zt.zstd-seekable/1 parts read through a ztfs mount.

Run through scripts/bench-zstd.sh, which builds ztfs, makes the project venv
and owns the work directory. The file is written by the PyPI ztensor package
(1 MiB frames, level 3) from seeded data that compresses moderately: runs of
64 bytes, half copied from a repeating pattern (matches), half drawn from 64
byte values (entropy-coded literals). Its parts:

  c0, c1  SIZE bytes each, compressed (two parts, for two concurrent readers)
  small   SMALL bytes, compressed (random reads against a second part size)
  raw     SMALL bytes, stored raw (the FUSE round trip without a decode)

The baseline is the zstd command line decoding a part's stored blob,
extracted from the .zt file (`ztfs ls --json`: offset, stored_length) into a
file that stays in the page cache; zstd skips the seek table at its end (a
skippable frame). Every figure is measured in the same run as its baseline,
the two interleaved (their order rotates from one repetition to the next),
and printed as median [min-max]. Ratios are speed ratios: for a rate,
ztfs's over the baseline's; for a time, the baseline's over ztfs's. So 1.0
means as fast as the baseline and a value above 1 means faster. The header
says how many CPUs other work kept busy before and after the runs: with
them busy, trust the CPU-time and page-fault rows over the wall-clock ones.

A benchmark, not a test: nothing is asserted about time. It exits non-zero
only when something fails to run. The measuring is standard library only;
numpy and ztensor (the venv) are imported only to write the file.
"""

import argparse
import hashlib
import json
import os
import random
import re
import statistics
import struct
import subprocess
import sys
import time

from .harness import Failed, Mount, cpu_ns, log, read_ahead_kb, run as run_bench
from .mount import MIB, PAGE, dd_wait, fmt_cell, fmt_num, med, parse_size, start_dd

SEEKABLE_MAGIC = 0x8F92EAB1
RUN = 64  # bytes per run of the generated data
LITERAL_VALUES = 64  # literal runs draw from this many byte values


# ---------------------------------------------------------------- the file


def gen_data(n, seed):
    """`n` bytes: runs of RUN bytes, each either a copy from a 64 KiB pattern
    at a random offset or RUN literals from LITERAL_VALUES values; numpy."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pattern = np.frombuffer(bytes(i * 7 % 251 for i in range(65536)), dtype=np.uint8)
    out = np.empty(n, dtype=np.uint8)
    step = 16 * MIB
    for at in range(0, n, step):
        m = min(step, n - at)
        runs = -(-m // RUN)
        chunk = np.empty((runs, RUN), dtype=np.uint8)
        lit = rng.random(runs) < 0.5
        chunk[lit] = rng.integers(0, LITERAL_VALUES, (int(lit.sum()), RUN), dtype=np.uint8)
        starts = rng.integers(0, len(pattern) - RUN, runs - int(lit.sum()))
        chunk[~lit] = pattern[starts[:, None] + np.arange(RUN)[None, :]]
        out[at:at + m] = chunk.reshape(-1)[:m]
    return out


def write_file(path, size, small):
    import ztensor

    w = ztensor.Writer(path, canonical=False)
    for name, n, seed, enc in (("c0", size, 1, True), ("c1", size, 2, True),
                               ("small", small, 3, True), ("raw", small, 4, False)):
        log(f"  {name}: {n} bytes{', zt.zstd-seekable/1' if enc else ', raw'}")
        data = gen_data(n, seed)
        w.add(name, data, [n], "u8", encoding="zt.zstd-seekable/1" if enc else None)
        del data
    w.finish()
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def parts_of(ztfs, path):
    """{object name: its `data` part} from `ztfs ls --json`."""
    r = subprocess.run([ztfs, "ls", "--json", path], capture_output=True)
    if r.returncode != 0:
        raise Failed(f"ztfs ls --json {path}: {r.stderr.decode().strip()}")
    out = {}
    for o in json.loads(r.stdout)["objects"]:
        (p,) = [p for p in o["parts"] if p["name"] == "data"]
        out[o["name"]] = p
    return out


def extract(path, part, dest):
    """Copies a part's stored blob to `dest`; returns its frame count (from
    the seek table's tail: u32 frames, u8 descriptor, u32 magic)."""
    with open(path, "rb") as f, open(dest, "wb") as out:
        f.seek(part["offset"])
        left = part["stored_length"]
        while left:
            b = f.read(min(left, 16 * MIB))
            if not b:
                raise Failed(f"{path} ends inside the blob of a part")
            out.write(b)
            left -= len(b)
    with open(dest, "rb") as f:
        f.seek(-9, os.SEEK_END)
        frames, _, magic = struct.unpack("<IBI", f.read(9))
    if magic != SEEKABLE_MAGIC:
        raise Failed(f"{dest}: no seekable magic at the end ({magic:#x})")
    return frames


def sha256_of(stream):
    h, n = hashlib.sha256(), 0
    while b := stream.read(4 * MIB):
        h.update(b)
        n += len(b)
    return h.hexdigest(), n


# ------------------------------------------------------------- processes


def minflt(pid):
    """Minor page faults of all threads of `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def busy_cpus(seconds=1.0):
    """How many CPUs were busy (not idle, not iowait) over `seconds`, whoever
    kept them busy; sampled while the benchmark itself waits."""
    def sample():
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
        return sum(ticks), ticks[3] + ticks[4]
    t0, i0 = sample()
    time.sleep(seconds)
    t1, i1 = sample()
    return os.cpu_count() * (1 - (i1 - i0) / max(t1 - t0, 1))


def zstd_decode(blobs, flags=()):
    """`zstd -d -q -c [flags] BLOB > /dev/null` for each blob at once;
    (wall s, CPU s of all of them: user + system, minor faults), from wait4."""
    t0 = time.perf_counter()
    procs = [(subprocess.Popen(["zstd", "-d", "-q", "-c", *flags, b], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE), b) for b in blobs]
    cpu, faults = 0.0, 0
    for p, b in procs:
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        cpu += ru.ru_utime + ru.ru_stime
        faults += ru.ru_minflt
    dt = time.perf_counter() - t0
    for p, b in procs:
        err = p.stderr.read().decode().strip()
        p.stderr.close()
        if p.returncode != 0:
            raise Failed(f"zstd -d {' '.join(flags)} {b}: exit {p.returncode}: {err}")
    return dt, cpu, faults


def dd_argv(path, bs):
    return ["dd", f"if={path}", "of=/dev/null", f"bs={bs}"]


def dd_read(paths, bs, each):
    """dd of each path at once, each `each` bytes long; aggregate GB/s."""
    t0 = time.perf_counter()
    return dd_wait([start_dd(dd_argv(p, bs)) for p in paths], each, t0)


def rand_preads(m, targets, count, seed, chunk=250):
    """4 KiB preads at `count` random 4 KiB-aligned offsets into each target
    {who: (path, length)}, each call timed on its own; per target the
    median latency in µs and the daemon's CPU per call in µs. The targets
    take turns by chunks, so a change of scheduler state hits them alike."""
    rng = random.Random(seed)
    offsets = {who: [rng.randrange(n // PAGE) * PAGE for _ in range(count)]
               for who, (_, n) in targets.items()}
    fds = {who: os.open(path, os.O_RDONLY) for who, (path, _) in targets.items()}
    lat = {who: [] for who in targets}
    cpu = dict.fromkeys(targets, 0)
    clock, pread = time.perf_counter_ns, os.pread
    try:
        order = list(targets)
        for k, c in enumerate(range(0, count, chunk)):
            for who in order[k % len(order):] + order[:k % len(order)]:
                fd, out = fds[who], lat[who]
                c0 = cpu_ns(m.pid)
                for off in offsets[who][c:c + chunk]:
                    t = clock()
                    b = pread(fd, PAGE, off)
                    out.append(clock() - t)
                    if len(b) != PAGE:
                        raise Failed(f"pread {targets[who][0]} at {off}: {len(b)} bytes")
                cpu[who] += cpu_ns(m.pid) - c0
    finally:
        for fd in fds.values():
            os.close(fd)
    return {who: (statistics.median(x) / 1000, cpu[who] / 1000 / count)
            for who, x in lat.items()}


# ---------------------------------------------------------------- the table


class Results:
    def __init__(self):
        # (section, figure, unit, baseline label, base samples, ztfs samples, higher)
        self.rows = []

    def row(self, section, figure, unit, baseline=None, higher=True):
        """Sample lists for a figure and its baseline; `higher` says which
        way is faster, None that the ratio is not a speed ratio (none shown)."""
        base, ztfs = [], []
        self.rows.append((section, figure, unit, baseline, base, ztfs, higher))
        return base, ztfs


def ratio(z, b, higher):
    if higher is None or not z or not b:
        return "–"
    mz, mb = med(z), med(b)
    if not mz or not mb:
        return "–"
    return fmt_num(mz / mb if higher else mb / mz)


def print_table(rows, out=sys.stdout):
    head = ["figure", "unit", "ztfs", "baseline", "baseline value", "ratio"]
    print("| " + " | ".join(head) + " |", file=out)
    print("|" + "|".join("---" for _ in head) + "|", file=out)
    section = None
    for sec, fig, unit, label, base, ztfs, higher in rows:
        if sec != section:
            print(f"| **{sec}** |" + " |" * (len(head) - 1), file=out)
            section = sec
        cells = [fig, unit, fmt_cell(ztfs), label or "–", fmt_cell(base) if label else "–",
                 ratio(ztfs, base, higher)]
        print("| " + " | ".join(cells) + " |", file=out)


# --------------------------------------------------------------- the runs


def rotate(items, i):
    k = i % len(items)
    return items[k:] + items[:k]


def bench_seq(a, res, f, blob, n):
    sec = f"sequential decode of c0 ({n / MIB:.0f} MiB), fresh default mount, 1 reader"
    bs1m = res.row(sec, "dd bs=1M", "GB/s", "zstd -d -c STORED >/dev/null")
    single = res.row(sec, "dd bs=1M", "GB/s", "zstd -d --no-asyncio (one thread)")
    t1 = (res.row(sec, "dd bs=1M", "GB/s", "zstd -d -T1 (-T sets compression threads only)")
          if a.zstd_t1 else None)
    bs128 = res.row(sec, "dd bs=128k", "GB/s", "zstd -d -c STORED >/dev/null")
    cpu1m = res.row(sec, "daemon CPU, dd bs=1M", "CPU-s/GiB", "zstd -d CPU (user+sys)",
                    higher=False)
    cpu128 = res.row(sec, "daemon CPU, dd bs=128k", "CPU-s/GiB", "zstd -d CPU (user+sys)",
                     higher=False)
    faults = res.row(sec, "daemon minor page faults, dd bs=1M", "per MiB", "zstd -d",
                     higher=False)
    ra = res.row(sec, "bdi read_ahead_kb of the mount", "KiB", higher=None)
    gib = n / 2**30

    def zstd_runs():
        dt, cpu, flt = zstd_decode([blob])
        for row in (bs1m, bs128):
            row[0].append(n / dt / 1e9)
        for row in (cpu1m, cpu128):
            row[0].append(cpu / gib)
        faults[0].append(flt / (n / MIB))
        single[0].append(n / zstd_decode([blob], ["--no-asyncio"])[0] / 1e9)
        if t1:
            t1[0].append(n / zstd_decode([blob], ["-T1"])[0] / 1e9)

    def ztfs_run(bs, rows, cpu_row):
        with Mount.fresh(f, a.mnt, a.mount_args) as m:
            c0, f0 = cpu_ns(m.pid), minflt(m.pid)
            x = dd_read([m.data_of("c0")], bs, n)
            for row in rows:
                row[1].append(x)
            cpu_row[1].append((cpu_ns(m.pid) - c0) / 1e9 / gib)
            if bs == "1M":
                faults[1].append((minflt(m.pid) - f0) / (n / MIB))
                ra[1].append(read_ahead_kb(m.mnt))

    runs = [zstd_runs,
            lambda: ztfs_run("1M", [r for r in (bs1m, single, t1) if r], cpu1m),
            lambda: ztfs_run("128k", [bs128], cpu128)]
    for i in range(a.reps):
        log(f"sequential, rep {i + 1}/{a.reps}")
        for run in rotate(runs, i):
            run()


def bench_random(a, res, f, parts, blobs, frames, n, small):
    sec = (f"4 KiB random pread, --cache-mib 1 --direct-io, median latency of {a.preads} "
           "calls per part (Python loop)")
    big_l, small_l = f"c0 ({n / MIB:.0f} MiB)", f"small ({small / MIB:.0f} MiB)"
    raw = res.row(sec, f"raw part ({small / MIB:.0f} MiB): the FUSE round trip, no decode", "µs")
    lat = {}
    for who, label in (("small", small_l), ("c0", big_l)):
        lat[who] = res.row(sec, f"compressed part {label}", "µs",
                           f"one frame decode, zstd -d of {who} / {frames[who]} frames",
                           higher=False)
    share = {}
    for who, label in (("small", small_l), ("c0", big_l)):
        share[who] = res.row(sec, f"{label} minus raw part: the decode's share", "µs",
                             "one frame decode (as above)", higher=False)
    whole = res.row(sec, f"compressed part {big_l}", "µs",
                    "whole-part decode, zstd -d of c0", higher=False)
    size_ratio = res.row(sec, f"latency {big_l} / latency {small_l} (≈1: size-independent)",
                         "×", higher=None)
    cpu = {}
    for who, label in (("small", small_l), ("c0", big_l), ("raw", "raw part")):
        base = None if who == "raw" else "zstd -d CPU per frame (less start-up)"
        cpu[who] = res.row(sec, f"daemon CPU per call, {label}", "µs", base, higher=False)
    startup, startup_cpu = [], []

    def zstd_runs():
        # Less zstd's start-up, measured on a blob of no frames.
        dt, c, _ = zstd_decode([blobs["empty"]])
        startup.append(dt)
        startup_cpu.append(c)
        for who in ("small", "c0"):
            dt, c, _ = zstd_decode([blobs[who]])
            per = (dt - med(startup)) / frames[who] * 1e6
            lat[who][0].append(per)
            share[who][0].append(per)
            cpu[who][0].append((c - med(startup_cpu)) / frames[who] * 1e6)
            if who == "c0":
                whole[0].append(dt * 1e6)

    def ztfs_run(i):
        with Mount.fresh(f, a.mnt, ["--cache-mib", "1", "--direct-io"]) as m:
            targets = {who: (m.data_of(who), parts[who]["decoded_length"])
                       for who in ("raw", "small", "c0")}
            got = rand_preads(m, targets, a.preads, 1000 + i)
        raw[1].append(got["raw"][0])
        for who in ("small", "c0"):
            lat[who][1].append(got[who][0])
            share[who][1].append(got[who][0] - got["raw"][0])
        whole[1].append(got["c0"][0])
        size_ratio[1].append(got["c0"][0] / got["small"][0])
        for who in cpu:
            cpu[who][1].append(got[who][1])

    for i in range(a.reps):
        log(f"random 4 KiB reads, rep {i + 1}/{a.reps}")
        for run in rotate([zstd_runs, lambda: ztfs_run(i)], i):
            run()


def bench_concurrent(a, res, f, blobs, n):
    sec = f"sequential decode, 2 concurrent readers of c0 and c1 ({n / MIB:.0f} MiB each)"
    agg = res.row(sec, "2 × dd bs=1M, aggregate", "GB/s",
                  "2 concurrent zstd -d of the two stored blobs, aggregate")
    cpu = res.row(sec, "daemon CPU", "CPU-s/GiB", "zstd -d CPU (both)", higher=False)
    gib = 2 * n / 2**30

    def zstd_run():
        dt, c, _ = zstd_decode([blobs["c0"], blobs["c1"]])
        agg[0].append(2 * n / dt / 1e9)
        cpu[0].append(c / gib)

    def ztfs_run():
        with Mount.fresh(f, a.mnt, a.mount_args) as m:
            c0 = cpu_ns(m.pid)
            agg[1].append(dd_read([m.data_of("c0"), m.data_of("c1")], "1M", n))
            cpu[1].append((cpu_ns(m.pid) - c0) / 1e9 / gib)

    for i in range(a.reps):
        log(f"2 concurrent readers, rep {i + 1}/{a.reps}")
        for run in rotate([zstd_run, ztfs_run], i):
            run()


def check_decodes(a, f, parts, blobs):
    """The mount and zstd decode c0 to the same bytes, of the declared length."""
    want = parts["c0"]["decoded_length"]
    p = subprocess.Popen(["zstd", "-d", "-q", "-c", blobs["c0"]], stdout=subprocess.PIPE)
    zs = sha256_of(p.stdout)
    if p.wait() != 0 or zs[1] != want:
        raise Failed(f"zstd -d of the stored blob of c0: exit {p.returncode}, {zs[1]} bytes")
    with Mount.fresh(f, a.mnt) as m, open(m.data_of("c0"), "rb") as r:
        zt = sha256_of(r)
    if zt != zs:
        raise Failed(f"c0 through the mount ({zt[1]} bytes) differs from zstd -d ({zs[1]})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ztfs", required=True)
    ap.add_argument("--work", required=True, help="an empty directory on a disk filesystem")
    ap.add_argument("--size", type=parse_size, default=512 * MIB,
                    help="decoded size of each of the two big parts (default 512M)")
    ap.add_argument("--small-size", type=parse_size, default=64 * MIB,
                    help="decoded size of the small compressed part and the raw part "
                         "(default 64M, at most --size)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--preads", type=int, default=2000)
    ap.add_argument("--only", default="seq,random,concurrent")
    ap.add_argument("--mount-args", default="",
                    help="extra `ztfs mount` arguments for the sequential and concurrent "
                         "sections, e.g. '--cache-mib 8' (default none)")
    a = ap.parse_args()
    a.mount_args = a.mount_args.split()
    Mount.ztfs_bin = a.ztfs
    only = set(a.only.split(","))
    n, small = a.size, min(a.small_size, a.size)
    f = os.path.join(a.work, "bench.zt")
    a.mnt = os.path.join(a.work, "mnt")
    os.makedirs(a.mnt, exist_ok=True)

    log(f"writing {f} with the ztensor package")
    write_file(f, n, small)
    parts = parts_of(a.ztfs, f)
    blobs, frames = {}, {}
    for who in ("c0", "c1", "small"):
        p = parts[who]
        if p["encoding"] != "zt.zstd-seekable/1":
            raise Failed(f"{who}: encoding {p['encoding']!r}, not zt.zstd-seekable/1")
        blobs[who] = os.path.join(a.work, f"{who}.zst")
        frames[who] = extract(f, p, blobs[who])
    # A blob of no frames (the bare seek table): zstd's start-up cost.
    blobs["empty"] = os.path.join(a.work, "empty.zst")
    with open(blobs["empty"], "wb") as e:
        e.write(struct.pack("<IIIBI", 0x184D2A5E, 9, 0, 0, SEEKABLE_MAGIC))
    a.zstd_t1 = subprocess.run(["zstd", "-d", "-q", "-c", "-T1", blobs["empty"]],
                               capture_output=True).returncode == 0
    ratio_c0 = parts["c0"]["decoded_length"] / parts["c0"]["stored_length"]
    # Warm the backing file and the extracted blobs; check the decodes agree.
    for path in (f, *blobs.values()):
        with open(path, "rb") as r:
            while r.read(16 * MIB):
                pass
    check_decodes(a, f, parts, blobs)

    # Wall-clock figures mean little when other work keeps the CPUs busy;
    # CPU times and page faults hold up better. Say how busy they were.
    load = [busy_cpus()]
    if load[0] > 0.25:
        log(f"note: {load[0]:.1f} of {os.cpu_count()} CPUs busy before the runs "
            "(other work): wall-clock figures will be noisy")
    res = Results()
    if "seq" in only:
        bench_seq(a, res, f, blobs["c0"], n)
    if "random" in only:
        bench_random(a, res, f, parts, blobs, frames, n, small)
    if "concurrent" in only:
        bench_concurrent(a, res, f, blobs, n)

    load.append(busy_cpus())
    zv = subprocess.run(["zstd", "--version"], capture_output=True, text=True).stdout
    zv = re.search(r"v\d[\d.]*", zv)
    uname = os.uname()
    print()
    print(f"ztfs zstd-seekable benchmark: parts c0, c1 {n / MIB:.0f} MiB, small and raw "
          f"{small / MIB:.0f} MiB, {frames['c0']} frames in c0 (1 MiB each), compression "
          f"ratio {ratio_c0:.2f}; zstd {zv.group(0) if zv else '?'}, kernel {uname.release}, "
          f"{os.cpu_count()} CPUs, of which {load[0]:.1f} busy with other work before the "
          f"runs and {load[1]:.1f} after; mount arguments {' '.join(a.mount_args) or '(none)'} "
          f"(sequential sections); medians of {a.reps} [min–max]; ratios are speed ratios "
          "(rates: ztfs / baseline; times: baseline / ztfs)")
    print()
    print_table(res.rows)


if __name__ == "__main__":
    run_bench(main, "bench zstd")
