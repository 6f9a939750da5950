"""A model by URL in the read benchmark (`--only remote`).

Run by bench/mount.py, which hands over itself (`bm`: the harness's Mount,
readers and table helpers, so that its exit path unmounts what this module
mounts). nginx (apt nginx-light) serves the work directory on a free port of
127.0.0.1, one process, its access log in the work directory; each figure
is measured in the same run as its baselines, the readers' order rotating
from one repetition to the next. The big file's page cache is warm for all.

  curl     `curl -r` of the blob's range from the same server, to /dev/null
  local    `ztfs mount big.zt` (`--passthrough off`), read through the mount
  url      `ztfs mount http://127.0.0.1:PORT/big.zt` (`--passthrough off`)

Rows: the mount command's wall time and the requests nginx logged for it
(the floor is one, the tail read; two when the model's first block is not
in it); a 1st read of the part after a fresh mount (dd bs=1M, wall clock)
and the CPU time the whole machine spent on it (every process: nginx, the
reader, the daemon, the kernel's work for them; from /proc/stat, so other
load on the machine counts too); a 2nd read on the same mount (the
kernel's page cache and the daemon's block cache).

Under the table, a bound from the same run: a mount by URL does at least
the work of curl (receive the bytes from nginx) and of the local mount
(reply to FUSE, the reader's copy), so with the machine's CPUs all busy
it reads at most CPUs / (curl's CPU + local's CPU per byte). A benchmark,
not a test: nothing is asserted about time.
"""

import os
import shutil
import socket
import subprocess
import time

COLS = ("curl", "local", "url")
HEAD = ["figure", "unit", "curl", "ztfs local", "ztfs url", "url/curl", "url/local"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx serving `root` on 127.0.0.1 in the foreground, one process
    (no worker to outlive it), stopped by stop()."""

    def __init__(self, bm, root, work):
        if shutil.which("nginx") is None:
            raise bm.Failed("no nginx on PATH: the remote section serves the model with it "
                            "(apt-get install nginx-light; .ci/run installs it)")
        self.dir = os.path.join(work, "nginx")
        os.makedirs(os.path.join(self.dir, "tmp"), exist_ok=True)
        self.port = free_port()
        self.access = os.path.join(self.dir, "access.log")
        conf = os.path.join(self.dir, "nginx.conf")
        tmp = os.path.join(self.dir, "tmp")
        with open(conf, "w") as f:
            f.write(f"""daemon off; master_process off; worker_processes 1;
error_log {self.dir}/error.log; pid {self.dir}/nginx.pid;
events {{}}
http {{
  access_log {self.access}; sendfile on; etag on;
  client_body_temp_path {tmp}; proxy_temp_path {tmp}; fastcgi_temp_path {tmp};
  uwsgi_temp_path {tmp}; scgi_temp_path {tmp};
  server {{ listen 127.0.0.1:{self.port}; root {root}; }}
}}
""")
        self.p = subprocess.Popen(["nginx", "-p", self.dir, "-c", conf, "-e",
                                   os.path.join(self.dir, "error.log")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise bm.Failed(f"nginx did not start on port {self.port}")

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def requests(self):
        return logged(self.access)

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def logged(access_log):
    """Requests nginx has logged in `access_log` (none before its first)."""
    try:
        with open(access_log) as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def busy_s():
    """CPU seconds the machine has spent busy (user, nice, system, irq,
    softirq; not steal, which is other guests' time)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def cpu_per_gib(n, read):
    """Runs read(); returns its result and the machine's busy CPU seconds
    per GiB read meanwhile."""
    b0 = busy_s()
    got = read()
    return got, (busy_s() - b0) / (n / 2**30)


def curl_read(bm, url, offset, n):
    argv = ["curl", "-sSf", "-r", f"{offset}-{offset + n - 1}", "-o", "/dev/null",
            "-w", "%{size_download}", url]
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0 or int(r.stdout or b"0") != n:
        raise bm.Failed(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.decode().strip()}")
    return n / dt / 1e9


def bench(a, bins, bm, big, n):
    """Returns the rows print_tables prints."""
    if shutil.which("curl") is None:
        raise bm.Failed("no curl on PATH: the remote section's baseline (apt-get install curl)")
    server = Nginx(bm, os.path.dirname(big), a.work)
    url = server.url(os.path.basename(big))
    rows = []

    def row(figure, unit, higher=True):
        cols = {c: [] for c in COLS}
        rows.append((figure, unit, cols, higher))
        return cols

    opened = row("`ztfs mount` (open, validate, fork, mount)", "ms", higher=False)
    requests = row("requests the mount made before any read", "", higher=None)
    first = row("1st read after a fresh mount (dd bs=1M)", "GB/s")
    cpu = row("CPU time of the machine during the 1st read", "s/GiB", higher=False)
    second = row("2nd read, same mount", "GB/s")
    try:
        for i in range(a.reps):
            bm.log(f"remote, rep {i + 1}/{a.reps}")
            for who in COLS[i % 3:] + COLS[:i % 3]:
                if who == "curl":
                    rate, used = cpu_per_gib(n, lambda: curl_read(bm, url, bm.BLOB_OFFSET, n))
                    first["curl"].append(rate)
                    cpu["curl"].append(used)
                    second["curl"].append(curl_read(bm, url, bm.BLOB_OFFSET, n))
                    continue
                mnt = os.path.join(a.work, f"mnt-{who}")
                os.makedirs(mnt, exist_ok=True)
                before = server.requests()
                m = bm.Mount.ztfs(bins, url if who == "url" else big, mnt)
                try:
                    opened[who].append(m.started_s * 1e3)
                    if who == "url":
                        requests[who].append(server.requests() - before)
                    rate, used = cpu_per_gib(n, lambda: bm.dd_seq(m.path, 0, n))
                    first[who].append(rate)
                    cpu[who].append(used)
                    second[who].append(bm.dd_seq(m.path, 0, n))
                finally:
                    m.unmount(bins)
    finally:
        server.stop()
    return rows


def print_tables(bm, rows, n, reps, out=None):
    import sys
    out = out or sys.stdout
    print(f"**remote** (blob {n / 2**30:.3g} GiB served by nginx on 127.0.0.1, page cache warm; "
          f"medians of {reps} [min–max]; ratios are speed ratios, for times baseline/ztfs)",
          file=out)
    print(file=out)
    print("| " + " | ".join(HEAD) + " |", file=out)
    print("|" + "|".join("---" for _ in HEAD) + "|", file=out)
    for figure, unit, cols, higher in rows:
        cells = [figure, unit] + [bm.fmt_cell(cols[c]) for c in COLS]
        cells += [bm.ratio(cols["url"], cols[c], higher) for c in ("curl", "local")]
        print("| " + " | ".join(cells) + " |", file=out)
    cpu = next(cols for figure, _, cols, _ in rows if figure.startswith("CPU time"))
    first = next(cols for figure, _, cols, _ in rows if figure.startswith("1st read"))
    if cpu["curl"] and cpu["local"]:
        cpus = os.cpu_count()
        both = bm.med(cpu["curl"]) + bm.med(cpu["local"])
        bound = cpus / both * 2**30 / 1e9
        print(file=out)
        print(f"Bound on a 1st read by URL from these CPU figures: {cpus} CPUs / "
              f"({bm.med(cpu['curl']):.2f} + {bm.med(cpu['local']):.2f} s/GiB) = "
              f"{bound:.2f} GB/s = {bound / bm.med(first['curl']):.2f}x curl "
              f"(the work of both, on every CPU at once, with no overhead)", file=out)
