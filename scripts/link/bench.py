"""Models in object storage, read through a link with the shape of S3: ztfs
against rclone, s3fs, curl and the link itself, all in one run.

Run by scripts/bench-remote-link.sh (which installs rclone and s3fs and
builds ztfs). The servers sit in a network namespace (net.py, servers.py):
each connection is capped (nginx limit_rate), the whole link is capped
(tc tbf on the namespace's side of the veth pair), and each answer's first
byte is late (delay.py). The model files live in tmpfs and in SeaweedFS's
bucket, so the link, not a disk, is the limit.

Measured, each on a fresh mount, --reps times (the table gives the medians):
  big      a 1 GiB tensor read once, dd bs=1M: through ztfs by s3:// and
           http://, rclone (S3, HTTP; cache off and full), s3fs, the same
           byte range of the file for the peers
  load     a model of N tensors of 1-16 MiB read whole, each tensor's bytes
           in file order and in a shuffled order (1 MiB reads, as cat does),
           and by safetensors' safe_open of the mount's model.safetensors
  link     the caps' product (min(link, connections x cap)) and a parallel
           download by 16 concurrent curl --range pieces (the best of at
           least 3: the baseline of the ratios); one curl stream
  latency  mount to the first answered ls, and to the first byte of one
           tensor: time and requests nginx answered; the first byte's time
           in round trips, one being a ranged GET of the tensor's first MiB

Each figure prints the CPU use of the whole machine during it (a result
above --max-cpu, default 80%, is refused: printed without a ratio, since
the CPU, not the link, may have been the limit) and the peak resident
memory of the mount's daemon; ztfs by http:// is measured again at a
smaller --cache-mib (--small-cache-mib, 64), its memory following it. The
peers' read-ahead flags are swept on the big read first and their best
setting is used for the loads.
"""

import argparse
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.remote import busy_s  # noqa: E402
from link import peers  # noqa: E402
from link.net import Failed, Link  # noqa: E402
from link.servers import BUCKET, Servers  # noqa: E402

MIB = 1 << 20

RCLONE_OFF = [["--vfs-read-chunk-size", c, "--buffer-size", b]
              for c, b in (("16M", "16M"), ("64M", "64M"), ("128M", "256M"))]
RCLONE_FULL = [["--vfs-cache-mode", "full", "--vfs-read-ahead", a, "--buffer-size", "64M",
                "--vfs-read-chunk-size", "64M"] for a in ("128M", "1G")]
S3FS = [[f"parallel_count={p}", f"multireq_max={m}", "multipart_size=16"]
        for p in (5, 32) for m in (20, 64)]


def write_model(path, sizes, seed, prefix="t"):
    """A safetensors file of U8 tensors t000.. (`prefix`000..) of `sizes`
    bytes, random bytes; returns [(name, offset in file, size)] in file
    order."""
    rnd = random.Random(seed)
    header, off = {}, 0
    for i, n in enumerate(sizes):
        header[f"{prefix}{i:03d}"] = {"dtype": "U8", "shape": [n], "data_offsets": [off, off + n]}
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    base = 8 + len(text)
    chunk = rnd.randbytes(MIB)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for n in sizes:
            while n:
                k = min(n, MIB)
                f.write(chunk[:k])
                n -= k
    return [(f"{prefix}{i:03d}", base + o, n) for i, (o, n) in
            enumerate(zip([sum(sizes[:i]) for i in range(len(sizes))], sizes))]


class Run:
    """One measurement: its rate, the machine's CPU use, the daemon's peak
    RSS, the requests nginx answered."""

    def __init__(self, nbytes, seconds, cpu, rss=None, requests=None):
        self.rate = nbytes / seconds
        self.seconds, self.cpu, self.rss, self.requests = seconds, cpu, rss, requests


def measured(servers, fn, ncpu):
    r0, b0, t0 = servers.requests(), busy_s(), time.perf_counter()
    nbytes = fn()
    dt = time.perf_counter() - t0
    cpu = (busy_s() - b0) / (dt * ncpu)
    return nbytes, dt, cpu, servers.requests() - r0


def dd(path, offset, length):
    r = subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=1M", "iflag=skip_bytes,count_bytes",
                        f"skip={offset}", f"count={length}"], capture_output=True, text=True)
    if r.returncode or f"{length} bytes" not in r.stderr:
        raise Failed(f"dd {path}: {r.stderr.strip()}")
    return length


def read_ranges(path_of, order):
    """Reads each (path, offset, size) of `order` with 1 MiB reads."""
    total = 0
    for path, off, n in map(path_of, order):
        fd = os.open(path, os.O_RDONLY)
        try:
            end = off + n
            while off < end:
                got = os.pread(fd, min(MIB, end - off), off)
                if not got:
                    raise Failed(f"{path}: short read at {off}")
                off += len(got)
                total += len(got)
        finally:
            os.close(fd)
    return total


CHECKPOINT_INDEX = "ckpt-model.safetensors.index.json"


def write_checkpoint(files):
    """A sharded checkpoint of two small safetensors files and its index,
    beside the model (names with the prefix ckpt-); returns the names."""
    names = ["ckpt-model-00001-of-00002.safetensors", "ckpt-model-00002-of-00002.safetensors"]
    weight_map = {}
    for k, name in enumerate(names):
        for t in write_model(os.path.join(files, name), [MIB // 4] * 4, 10 + k, prefix="ab"[k]):
            weight_map[t[0]] = name
    with open(os.path.join(files, CHECKPOINT_INDEX), "w") as f:
        json.dump({"metadata": {"total_size": 2 * MIB}, "weight_map": weight_map}, f)
    return [*names, CHECKPOINT_INDEX]


def ranged_get(url, offset, length):
    """Seconds to get `length` bytes of `url` from `offset` by one ranged
    GET on a new connection, as a client's first request does."""
    import urllib.request
    req = urllib.request.Request(url, headers={"Range": f"bytes={offset}-{offset + length - 1}"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        if len(r.read()) != length:
            raise Failed(f"{url}: a short ranged GET")
    return time.perf_counter() - t0


def safe_open_all(path, names):
    from safetensors import safe_open
    total = 0
    with safe_open(path, "numpy") as f:
        for name in names:
            total += f.get_tensor(name).nbytes
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--link-mbs", type=float, default=400, help="the link's cap, MB/s")
    ap.add_argument("--conn-mbs", type=float, default=50, help="each connection's cap, MB/s")
    ap.add_argument("--delay-ms", type=float, default=30, help="first-byte delay of each answer")
    ap.add_argument("--big-mib", type=int, default=1024)
    ap.add_argument("--tensors", type=int, default=300)
    ap.add_argument("--max-cpu", type=float, default=80,
                    help="percent; a figure measured above it gets no ratio (refused)")
    ap.add_argument("--small-cache-mib", type=int, default=64,
                    help="ztfs http:// is measured again at this --cache-mib (0: not)")
    ap.add_argument("--reps", type=int, default=1,
                    help="runs of each figure (the sweep's once each); the table gives medians")
    ap.add_argument("--peers", default="rclone,s3fs", help="comma-separated; '' for ztfs and curl only")
    ap.add_argument("--no-sweep", action="store_true", help="peers at their first setting only")
    ap.add_argument("--ztfs", default=os.environ.get("ZTFS", "ztfs"))
    ap.add_argument("--work", default=None, help="default: a new directory in /dev/shm")
    a = ap.parse_args()
    ncpu = os.cpu_count()
    peer_names = [p for p in a.peers.split(",") if p]
    work = a.work or tempfile.mkdtemp(prefix="ztfs-link-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    files = os.path.join(work, "files")
    os.makedirs(files, exist_ok=True)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731

    rnd = random.Random(1)
    sizes = [rnd.randint(1, 16) * MIB - rnd.randrange(0, 4096) for _ in range(a.tensors)]
    log(f"writing the model ({sum(sizes) / 2**30:.2f} GiB, {a.tensors} tensors) and the big tensor "
        f"({a.big_mib} MiB) in {files}")
    tensors = write_model(os.path.join(files, "model.safetensors"), sizes, 2)
    big = write_model(os.path.join(files, "big.safetensors"), [a.big_mib * MIB], 3)[0]
    # The shapes whose mount-to-ls round trips are counted: the model as a
    # .zt, and a sharded checkpoint of two small files and its index.
    subprocess.run([a.ztfs, "pack", os.path.join(files, "model.safetensors"), "-o",
                    os.path.join(files, "model.zt")], check=True, capture_output=True)
    checkpoint = write_checkpoint(files)
    weed = os.environ.get("ZTFS_WEED") or shutil.which("weed")
    if not weed:
        raise Failed("no weed (SeaweedFS): scripts/venv.sh installs it; set ZTFS_WEED")

    link = Link(a.link_mbs * 1e6)
    mounts = []
    results = {}   # (figure, reader) -> [Run]
    latency = {}   # reader -> (time to ls, requests, time to a first byte, requests)
    opened = {}    # reader and shape -> (time to ls, requests)
    try:
        servers = Servers(link, work, files, a.conn_mbs * 1e6, a.delay_ms, weed=weed)
        for name in ("model.safetensors", "big.safetensors", "model.zt", *checkpoint):
            log(f"uploading {name} to the bucket")
            servers.put(os.path.join(files, name), name)
        s3env = servers.s3_env()
        urls = {"s3": f"s3://{BUCKET}/", "http": servers.http_url("")}
        mnt = os.path.join(work, "mnt")

        def record(figure, reader, fn, mount=None):
            nbytes, dt, cpu, req = measured(servers, fn, ncpu)
            run = Run(nbytes, dt, cpu, mount.rss() if mount else None, req)
            results.setdefault((figure, reader), []).append(run)
            flag = " CPU-BOUND" if cpu * 100 > a.max_cpu else ""
            log(f"  {figure:<10} {reader:<28} {run.rate / 1e6:7.1f} MB/s  cpu {cpu * 100:3.0f}%  "
                f"rss {run.rss or 0:6.0f} MiB  {req} requests{flag}")
            return run

        def with_mount(make, body):
            m = make()
            mounts.append(m)
            try:
                return body(m)
            finally:
                m.close()
                mounts.remove(m)

        # The link itself, and one stream.
        url_big = servers.http_url("big.safetensors")
        pieces = 16
        step = big[2] // pieces

        def parallel_curl():
            ps = [subprocess.Popen(["curl", "-sSf", "-o", "/dev/null", "-r",
                                    f"{big[1] + i * step}-{big[1] + (i + 1) * step - 1}", url_big])
                  for i in range(pieces)]
            if any(p.wait() for p in ps):
                raise Failed("a parallel curl failed")
            return step * pieces

        def one_curl():
            subprocess.run(["curl", "-sSf", "-o", "/dev/null", "-r", f"{big[1]}-{big[1] + big[2] - 1}",
                            url_big], check=True)
            return big[2]

        # The link's measure varies by a fifth from run to run: the best of
        # at least three is the baseline (the ratios are the lower for it).
        log("the link")
        for _ in range(max(3, a.reps)):
            record("big", f"curl x{pieces} (the link)", parallel_curl)
        for _ in range(a.reps):
            record("big", "curl, one stream", one_curl)

        # ztfs, and ztfs by http:// with a smaller cache (its memory follows
        # --cache-mib).
        small = ["--cache-mib", str(a.small_cache_mib)]
        ztfs_runs = [("s3", [], "ztfs s3://"), ("http", [], "ztfs http://")]
        if a.small_cache_mib:
            ztfs_runs.append(("http", small, f"ztfs http:// --cache-mib {a.small_cache_mib}"))
        for _ in range(a.reps):
            for scheme, flags, reader in ztfs_runs:
                src = urls[scheme] + "big.safetensors"
                with_mount(lambda: peers.ztfs_mount(a.ztfs, src, mnt, s3env, flags),
                           lambda m: record("big", reader, lambda: dd(
                               os.path.join(m.mnt, "t000", "data"), 0, big[2]), m))
        # Peers: the sweep on the big read, then the best for the loads.
        best = {}
        if "rclone" in peer_names:
            for backend in ("s3", "http"):
                for mode, sets in (("off", RCLONE_OFF), ("full", RCLONE_FULL)):
                    cands = sets[:1] if a.no_sweep else sets
                    for flags in cands:
                        name = f"rclone {backend} {mode} [{' '.join(flags)}]"
                        run = with_mount(
                            lambda: peers.rclone_mount(servers, backend, mnt, os.path.join(work, "rc-cache"),
                                                       flags, work),
                            lambda m: record("sweep", name, lambda: dd(
                                os.path.join(m.mnt, "big.safetensors"), big[1], big[2]), m))
                        key = f"rclone {backend} {mode}"
                        if key not in best or run.rate > best[key][1].rate:
                            best[key] = (flags, run)
        if "s3fs" in peer_names:
            for opts in (S3FS[:1] if a.no_sweep else S3FS):
                name = f"s3fs [{' '.join(opts)}]"
                run = with_mount(lambda: peers.s3fs_mount(servers, mnt, opts, work),
                                 lambda m: record("sweep", name, lambda: dd(
                                     os.path.join(m.mnt, "big.safetensors"), big[1], big[2]), m))
                if "s3fs" not in best or run.rate > best["s3fs"][1].rate:
                    best["s3fs"] = (opts, run)
        for key, (flags, run) in best.items():
            results[("big", f"{key} (best)")] = [run]
            log(f"best {key}: {' '.join(flags)}")

        # The model loads.
        shuffled = tensors[:]
        random.Random(4).shuffle(shuffled)
        names = [t[0] for t in tensors]

        def loads(reader, make, path_of, st_path):
            for _ in range(a.reps):
                for order_name, order in (("file order", tensors), ("shuffled", shuffled)):
                    with_mount(make, lambda m: record(f"load {order_name}", reader,
                                                      lambda: read_ranges(lambda t: path_of(m, t), order), m))
                with_mount(make, lambda m: record("safe_open", reader,
                                                  lambda: safe_open_all(st_path(m), names), m))

        for scheme, flags, reader in ztfs_runs:
            src = urls[scheme] + "model.safetensors"
            loads(reader, lambda: peers.ztfs_mount(a.ztfs, src, mnt, s3env, flags),
                  lambda m, t: (os.path.join(m.mnt, t[0], "data"), 0, t[2]),
                  lambda m: os.path.join(m.mnt, "model.safetensors"))
        raw = lambda m, t: (os.path.join(m.mnt, "model.safetensors"), t[1], t[2])  # noqa: E731
        for key, (flags, _) in best.items():
            if key.startswith("rclone"):
                backend, mode = key.split()[1:]
                make = lambda: peers.rclone_mount(servers, backend, mnt,  # noqa: E731
                                                  os.path.join(work, "rc-cache"), flags, work)
            else:
                make = lambda: peers.s3fs_mount(servers, mnt, flags, work)  # noqa: E731
            # The best setting's big read again, so that its figure is a
            # median of as many runs as ztfs's.
            for _ in range(a.reps - 1):
                with_mount(make, lambda m: record("big", f"{key} (best)", lambda: dd(
                    os.path.join(m.mnt, "big.safetensors"), big[1], big[2]), m))
            loads(key, make, raw, lambda m: os.path.join(m.mnt, "model.safetensors"))

        # Latency: mount to first ls, and to a tensor's first byte.
        log("latency")
        rtt = min(ranged_get(servers.http_url("model.safetensors"), tensors[0][1], 1)
                  for _ in range(3))
        def mount_to_ls(src, then=lambda m: None):
            """Seconds and requests from `ztfs mount SRC` to its first answered
            ls, and what `then(mount)` gives after it."""
            r0, t0 = servers.requests(), time.perf_counter()

            def body(m):
                os.listdir(m.mnt)
                return time.perf_counter() - t0, servers.requests() - r0, then(m)

            return with_mount(lambda: peers.ztfs_mount(a.ztfs, src, mnt, s3env), body)

        # The same mounts of the local files: what a mount costs without
        # the network (the fork, FUSE's start), taken off before round
        # trips are counted.
        local = {}
        for scheme in ("local", "s3", "http"):
            for what, name in (("a .zt file", "model.zt"), ("a checkpoint index, 2 files",
                                                            CHECKPOINT_INDEX)):
                src = os.path.join(files, name) if scheme == "local" else urls[scheme] + name
                t_ls, r_ls, _ = mount_to_ls(src)
                if scheme == "local":
                    local[what] = t_ls
                    continue
                opened[f"ztfs {scheme}://, {what}"] = (t_ls, r_ls, local[what])
                log(f"  ztfs {scheme}:// {what}: mount to ls {t_ls * 1000:.0f} ms, {r_ls} requests")
        mid = tensors[len(tensors) // 2]

        def first_byte(m):
            r1, t1 = servers.requests(), time.perf_counter()
            with open(os.path.join(m.mnt, mid[0], "data"), "rb") as f:
                f.read(1)
            return time.perf_counter() - t1, servers.requests() - r1

        for scheme in ("s3", "http"):
            t_ls, r_ls, (t_byte, r_byte) = mount_to_ls(urls[scheme] + "model.safetensors",
                                                       first_byte)
            # One round trip of that read: the tensor's first block by one
            # ranged GET (what a reader that knew where to ask would wait).
            t_trip = min(ranged_get(servers.http_url("model.safetensors"), mid[1], MIB)
                         for _ in range(3))
            latency[f"ztfs {scheme}://"] = (t_ls, r_ls, t_byte, r_byte, t_trip)
            log(f"  ztfs {scheme}:// mount to ls {t_ls * 1000:.0f} ms, {r_ls} requests; "
                f"first byte {t_byte * 1000:.0f} ms, {r_byte} requests; one ranged GET of "
                f"its first MiB {t_trip * 1000:.0f} ms")
        # The bound of a reader taking the tensors in an order it does not
        # tell: each costs a round trip (a 1-byte ranged GET) before its
        # bytes come at the link's rate.
        shape = (len(tensors), sum(t[2] for t in tensors), rtt)
    finally:
        for m in list(mounts):
            m.close()
        link.close()
        if a.work is None:
            shutil.rmtree(work, ignore_errors=True)
    report(a, results, latency, pieces, shape, opened)


def median(runs):
    """The run of median rate (the lower of the two middle ones)."""
    return sorted(runs, key=lambda r: r.rate)[(len(runs) - 1) // 2]


def report(a, results, latency, pieces, shape, opened):
    the_link = ("big", f"curl x{pieces} (the link)")
    results = {k: (max(v, key=lambda r: r.rate) if k == the_link else median(v), len(v))
               for k, v in results.items()}
    link = results[the_link][0].rate
    cap = a.link_mbs * 1e6
    print(f"\n**The link**: {a.link_mbs:g} MB/s (tc tbf), {a.conn_mbs:g} MB/s per connection (nginx "
          f"limit_rate), first byte {a.delay_ms:g} ms late; {pieces} parallel curl pieces measured "
          f"{link / 1e6:.0f} MB/s at best. Ratios: to that measurement and to the cap; the other "
          f"figures are medians.\n")
    print("| figure | reader | MB/s | x link (measured) | x cap | CPU | daemon peak RSS | requests | runs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (figure, reader), (run, n) in results.items():
        rss = f"{run.rss:.0f} MiB" if run.rss else ""
        # Measured with the CPU near its limit: the CPU, not the link, may
        # have set the figure; no ratio is claimed for it.
        if run.cpu * 100 > a.max_cpu:
            ratios = f"refused (CPU above {a.max_cpu:g}%) | "
        else:
            ratios = f"{run.rate / link:.2f} | {run.rate / cap:.2f}"
        print(f"| {figure} | {reader} | {run.rate / 1e6:.0f} | {ratios} | "
              f"{run.cpu * 100:.0f}% | {rss} | {run.requests} | {n} |")
    n, total, rtt = shape
    bound = total / (n * rtt + total / link)
    print(f"\nThe latency bound of the shuffled loads: {n} tensors, {total / 1e9:.2f} GB, a round trip "
          f"(a 1-byte ranged GET) of {rtt * 1000:.0f} ms, the link above: one round trip per tensor "
          f"plus its bytes at the link's rate give {bound / 1e6:.0f} MB/s "
          f"({bound / link:.2f}x the link) to a reader that does not tell its order.")
    for (figure, reader), (run, _) in results.items():
        if figure == "load shuffled" and run.cpu * 100 <= a.max_cpu:
            print(f"- {reader}: {run.rate / bound:.2f}x that bound")
    print(f"\n| mount to the first answered ls | time | the same file mounted locally | round trips "
          f"(the difference, in {rtt * 1000:.0f} ms round trips) | requests |")
    print("|---|---|---|---|---|")
    for reader, (t_ls, r_ls, t_local) in opened.items():
        print(f"| {reader} | {t_ls * 1000:.0f} ms | {t_local * 1000:.0f} ms | "
              f"{(t_ls - t_local) / rtt:.1f} | {r_ls} |")
    print("\n| latency | mount to first ls | requests | first byte of a tensor | round trips "
          "| requests (with its read-ahead) |")
    print("|---|---|---|---|---|---|")
    for reader, (t_ls, r_ls, t_byte, r_byte, t_trip) in latency.items():
        print(f"| {reader} | {t_ls * 1000:.0f} ms | {r_ls} | {t_byte * 1000:.0f} ms | "
              f"{t_byte / t_trip:.1f} (a ranged GET of 1 MiB: {t_trip * 1000:.0f} ms) | {r_byte} |")


def stop(sig, _frame):
    raise KeyboardInterrupt(f"signal {sig}")


if __name__ == "__main__":
    # SIGTERM undoes the mounts and the namespace as Ctrl-C does.
    signal.signal(signal.SIGTERM, stop)
    try:
        main()
    except Failed as e:
        sys.exit(f"bench-remote-link: {e}")
    except KeyboardInterrupt:
        sys.exit(130)
