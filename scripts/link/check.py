"""The link's harness, checked (tests/remote/link.rs runs it in CI): a 16
MiB file through the namespace, with small caps so that each shows:

  - the first byte of an answer comes no sooner than the delay;
  - one connection reads no faster than its cap (nginx limit_rate);
  - many connections together read no faster than the link (tc tbf),
    which is below the sum of their caps;
  - `ztfs mount` of the file by URL through the link serves its bytes
    exactly, no faster than the link.

Only upper bounds of speed and a lower bound of delay are asserted: a busy
machine makes reads slower and answers later, never the other way.

    python3 check.py ZTFS_BINARY [WORK_DIR]
"""

import hashlib
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from link.net import Failed, Link  # noqa: E402
from link.servers import Servers  # noqa: E402

MIB = 1 << 20
SIZE = 16 * MIB
PER_CONN = 8e6       # bytes/s per connection
LINK = 24e6          # bytes/s for the whole link: below 8 connections' 64e6
DELAY_MS = 40
SLACK = 1.15         # a token bucket lets a burst through at the start


def curl(url, rng=None):
    argv = ["curl", "-sSf", "-o", "/dev/null", "-w", "%{time_starttransfer} %{size_download}", url]
    if rng:
        argv[1:1] = ["-r", rng]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode:
        raise Failed(f"curl {url}: {r.stderr.strip()}")
    ttfb, size = r.stdout.split()
    return float(ttfb), int(size)


def parallel(url, pieces):
    step = SIZE // pieces
    t0 = time.perf_counter()
    ps = [subprocess.Popen(["curl", "-sSf", "-o", "/dev/null", "-r",
                            f"{i * step}-{(i + 1) * step - 1}", url]) for i in range(pieces)]
    if any(p.wait() for p in ps):
        raise Failed("a parallel curl failed")
    return SIZE / (time.perf_counter() - t0)


def main():
    ztfs = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="ztfs-link-check-")
    files = os.path.join(work, "files")
    os.makedirs(files, exist_ok=True)
    body = os.urandom(SIZE)
    # A safetensors file of one u8 tensor: its data is the file after the header.
    header = b'{"blob":{"dtype":"U8","shape":[%d],"data_offsets":[0,%d]}}' % (SIZE, SIZE)
    header += b" " * (-len(header) % 8)
    with open(os.path.join(files, "one.safetensors"), "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header + body)
    failures = []

    def want(ok, what):
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            failures.append(what)

    link = Link(LINK)
    try:
        srv = Servers(link, work, files, PER_CONN, DELAY_MS)
        url = srv.http_url("one.safetensors")
        ttfb, _ = curl(url, "0-0")
        want(ttfb >= DELAY_MS / 1000, f"first byte after {ttfb * 1000:.0f} ms >= the delay, {DELAY_MS} ms")
        t0 = time.perf_counter()
        _, n = curl(url, f"0-{SIZE - 1}")
        one = n / (time.perf_counter() - t0)
        want(n == SIZE and one <= PER_CONN * SLACK,
             f"one connection: {one / 1e6:.1f} MB/s <= its cap, {PER_CONN / 1e6:.0f} MB/s")
        many = parallel(url, 8)
        want(many <= LINK * SLACK,
             f"8 connections: {many / 1e6:.1f} MB/s <= the link, {LINK / 1e6:.0f} MB/s "
             f"(their caps add up to {8 * PER_CONN / 1e6:.0f})")
        mnt = os.path.join(work, "mnt")
        os.makedirs(mnt, exist_ok=True)
        r = subprocess.run([ztfs, "mount", url, mnt], capture_output=True, text=True)
        if r.returncode:
            raise Failed(f"ztfs mount {url}: {r.stderr.strip()}")
        try:
            t0 = time.perf_counter()
            with open(os.path.join(mnt, "blob", "data"), "rb") as f:
                got = f.read()
            rate = len(got) / (time.perf_counter() - t0)
        finally:
            subprocess.run([ztfs, "unmount", mnt], capture_output=True)
        want(hashlib.sha256(got).digest() == hashlib.sha256(body).digest(),
             "ztfs mount by URL through the link serves the tensor's bytes exactly")
        want(rate <= LINK * SLACK, f"ztfs read {rate / 1e6:.1f} MB/s <= the link, {LINK / 1e6:.0f} MB/s")
    finally:
        link.close()
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    try:
        main()
    except Failed as e:
        sys.exit(f"check.py: {e}")
