"""`ztfs.open` by URL through a link with the shape of S3, in one run:

  load     a model of --tensors tensors (1-16 MiB) read whole, in file order:
           each tensor's `data` through a ztfs mount of its http:// URL, and
           `get_tensor` of each by `ztfs.open` of the same URL in-process
           (a fresh process each run: no cache carries over); the link's own
           measure (16 concurrent curl --range pieces, the best of 3)
  threads  four tensors read by `ztfs.open`, four threads at once against
           one after another (each response's first byte --delay-ms late):
           of 1 MiB each, where one after another waits a round trip for
           each; and of 16 MiB each, where each read already keeps the
           object's requests in flight (the store's pace, shared by its
           readers), so threads can only match it

Run by scripts/bench-python.sh as root (a network namespace and tc, as
scripts/link/bench.py), with the wheel's venv python (--python).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from link import peers  # noqa: E402
from link.bench import read_ranges, write_model  # noqa: E402
from link.net import Failed, Link  # noqa: E402
from link.servers import Servers  # noqa: E402

MIB = 1 << 20
# The sizes of the four tensors the threads read.
THREAD_MIB = (1, 16)

# In a process of its own: the library's caches are the process's.
LOAD = """
import sys, time, ztfs
n = 0
with ztfs.open(sys.argv[1], cache_mib=int(sys.argv[2])) as m:
    t0 = time.perf_counter()
    for k in m.keys():
        n += m.get_tensor(k).nbytes
print(n, time.perf_counter() - t0)
"""

THREADS = """
import sys, threading, time, ztfs
with ztfs.open(sys.argv[1], cache_mib=int(sys.argv[3])) as m:
    keys = m.keys()
    t0 = time.perf_counter()
    if sys.argv[2] == "threads":
        ts = [threading.Thread(target=m.get_tensor, args=(k,)) for k in keys]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    else:
        for k in keys:
            m.get_tensor(k)
    print(time.perf_counter() - t0)
"""


def in_process(python, script, *args):
    r = subprocess.run([python, "-c", script, *args], capture_output=True, text=True)
    if r.returncode:
        raise Failed(f"ztfs.open: {r.stderr.strip()[-800:]}")
    return [float(x) for x in r.stdout.split()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True, help="a python whose `import ztfs` is the wheel's")
    ap.add_argument("--ztfs", required=True, help="the ztfs command of the same build")
    ap.add_argument("--link-mbs", type=float, default=400)
    ap.add_argument("--conn-mbs", type=float, default=50)
    ap.add_argument("--delay-ms", type=float, default=50)
    ap.add_argument("--tensors", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cache-mib", type=int, default=64, help="ztfs.open's cache_mib (the mount's is 256)")
    a = ap.parse_args()
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    import random

    work = tempfile.mkdtemp(prefix="ztfs-link-py-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    files = os.path.join(work, "files")
    os.makedirs(files)
    rnd = random.Random(1)
    sizes = [rnd.randint(1, 16) * MIB - rnd.randrange(0, 4096) for _ in range(a.tensors)]
    tensors = write_model(os.path.join(files, "model.safetensors"), sizes, 2)
    # A copy per run of the threads: fresh bytes, fresh ETag, nothing cached.
    for mib in THREAD_MIB:
        for i in range(2 * a.reps):
            write_model(os.path.join(files, f"four-{mib}-{i}.safetensors"), [mib * MIB] * 4, 10 + i)
    total = sum(sizes)
    link = Link(a.link_mbs * 1e6)
    mnt = os.path.join(work, "mnt")
    times = {"mount": [], "ztfs.open": [], "link": []}
    for mib in THREAD_MIB:
        times[f"serial {mib}"], times[f"threads {mib}"] = [], []
    try:
        servers = Servers(link, work, files, a.conn_mbs * 1e6, a.delay_ms)
        url = servers.http_url("model.safetensors")
        for _ in range(3):
            pieces, step = 16, total // 16
            t0 = time.perf_counter()
            ps = [subprocess.Popen(["curl", "-sSf", "-o", "/dev/null", "-r",
                                    f"{i * step}-{(i + 1) * step - 1}", url]) for i in range(pieces)]
            if any(p.wait() for p in ps):
                raise Failed("a parallel curl failed")
            times["link"].append(time.perf_counter() - t0)
        for rep in range(a.reps):
            m = peers.ztfs_mount(a.ztfs, url, mnt, dict(os.environ))
            try:
                t0 = time.perf_counter()
                read_ranges(lambda t: (os.path.join(mnt, t[0], "data"), 0, t[2]), tensors)
                times["mount"].append(time.perf_counter() - t0)
            finally:
                m.close()
            n, dt = in_process(a.python, LOAD, url, str(a.cache_mib))
            if n != total:
                raise Failed(f"ztfs.open read {n} bytes of {total}")
            times["ztfs.open"].append(dt)
            for mib in THREAD_MIB:
                for k, how in enumerate(("serial", "threads")):
                    four = servers.http_url(f"four-{mib}-{2 * rep + k}.safetensors")
                    dt = in_process(a.python, THREADS, four, how, str(a.cache_mib))[0]
                    times[f"{how} {mib}"].append(dt)
            log(f"run {rep + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items() if v))
    finally:
        link.close()
    best_link = min(times["link"])
    med = {k: statistics.median(v) for k, v in times.items() if k != "link"}
    print(f"\nby http:// through the link ({a.link_mbs:.0f} MB/s, {a.conn_mbs:.0f} MB/s a connection, "
          f"first byte {a.delay_ms:.0f} ms late); medians of {a.reps}")
    print(f"{'load of ' + str(a.tensors) + ' tensors, ' + format(total / 2**30, '.2f') + ' GiB':<40}{'MB/s':>8}")
    print(f"{'the link (curl x16, best of 3)':<40}{total / best_link / 1e6:>8.0f}")
    for k in ("mount", "ztfs.open"):
        print(f"{'ztfs ' + k if k == 'mount' else k:<40}{total / med[k] / 1e6:>8.0f}")
    print(f"ratio ztfs.open / mount: {med['mount'] / med['ztfs.open']:.2f}x (goal: the mount's figure, >= 1.0x)")
    print(f"ratio ztfs.open / link:  {best_link / med['ztfs.open']:.2f}x")
    for mib in THREAD_MIB:
        one, four = med[f"serial {mib}"], med[f"threads {mib}"]
        print(f"four tensors of {mib} MiB: one after another {one:.3f} s, four threads {four:.3f} s: "
              f"{four / one:.2f}x the time (goal < 0.6x)")


if __name__ == "__main__":
    try:
        main()
    except Failed as e:
        print(f"python.py: {e}", file=sys.stderr)
        sys.exit(2)
