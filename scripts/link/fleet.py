"""A fleet reading one model: N ztfs daemons (simulated nodes) each read a
model whole from an origin behind the S3-shaped link (net.py, servers.py:
the whole link capped, each connection capped, each answer's first byte
late), with and without a shared cache tier (a SeaweedFS on loopback, a
fast link), the nodes started one after another (each --stagger-s after
the last) and all at once.

Printed first: the tier alone, as the nodes load it (1 MiB PUTs by as
many writers as the nodes have and a claim's conditional PUT meanwhile,
then 1 MiB GETs as many at once), what the runs with it can ask of it. Then for each run, in one table: the bytes the origin sent (nginx's
log) as a multiple of the model, and the time until the last node was
done, with the tier as a ratio of the same start without it; and the
machine's CPU use (a run above --max-cpu is marked: the CPU, not the link,
may have been the limit). Goals (docs/fleet.md): origin bytes <= 1.3x the
model staggered and <= 2.5x together, against ~Nx without; time until the
last node <= 0.5x without the tier.

Run by scripts/bench-fleet.sh (root: a network namespace and tc).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.remote import busy_s  # noqa: E402
from link.bench import write_model  # noqa: E402
from link.net import Failed, Link  # noqa: E402
from link.servers import ACCESS_KEY, BUCKET, REGION, SECRET_KEY, Servers, wait_port  # noqa: E402

MIB = 1 << 20


def origin_bytes(access_log):
    """Body bytes nginx has sent so far (its log's fourth field)."""
    try:
        with open(access_log) as f:
            return sum(int(line.split()[3]) for line in f if len(line.split()) > 3)
    except FileNotFoundError:
        return 0


def start_tier(work, weed):
    """A SeaweedFS on loopback in this namespace (not behind the link):
    the tier. Returns (process, endpoint)."""
    d = os.path.join(work, "tier")
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, TMPDIR=d)
    log = open(os.path.join(d, "weed.log"), "ab")
    p = subprocess.Popen([weed, "-logtostderr", "mini", f"-dir={d}/data", "-ip=127.0.0.1",
                          "-ip.bind=127.0.0.1", f"-bucket={BUCKET}", "-admin.ui=false",
                          "-webdav=false", "-master.telemetry=false", "-s3.port=18334",
                          "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.port=19333",
                          "-volume.port=18080", "-filer.port=18888",
                          "-volume.preStopSeconds=0", f"-filer.localSocket={d}/filer.sock",
                          f"-s3.localSocket={d}/s3.sock"],
                         stdout=log, stderr=subprocess.STDOUT, env=env, cwd=d,
                         start_new_session=True)
    wait_port("127.0.0.1", 18334, "the tier's SeaweedFS", 120, p)
    endpoint = "http://127.0.0.1:18334"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                            "--aws-sigv4", f"aws:amz:{REGION}:s3", "--user",
                            f"{ACCESS_KEY}:{SECRET_KEY}",
                            f"{endpoint}/{BUCKET}?list-type=2&max-keys=1"],
                           capture_output=True, text=True)
        if r.stdout.strip() == "200":
            return p, endpoint
        time.sleep(0.5)
    raise Failed("the tier's bucket did not answer a listing")


def tier_capacity(endpoint, work, writers, blocks=96):
    """The tier alone, as the nodes use it: `blocks` objects of 1 MiB put
    by `writers` at once, then read back as many at once (one curl each
    way, its requests in parallel on kept connections, signed), and the
    time a small conditional PUT (a claim, `If-None-Match: *`) takes while
    the puts run. Returns (PUT MB/s, GET MB/s, claim times in ms, sorted)."""
    import threading

    body, small = os.path.join(work, "block.bin"), os.path.join(work, "claim.txt")
    with open(body, "wb") as f:
        f.write(os.urandom(MIB))
    with open(small, "w") as f:
        f.write(str(int(time.time())))
    sign = ["--aws-sigv4", f"aws:amz:{REGION}:s3", "--user", f"{ACCESS_KEY}:{SECRET_KEY}"]

    def many(lines):
        """One curl, `writers` requests at once; its wall time."""
        cfg = os.path.join(work, "curl.cfg")
        with open(cfg, "w") as f:
            for i in range(blocks):
                f.write(f'url = "{endpoint}/{BUCKET}/capacity/b{i}"\noutput = "/dev/null"\n')
                f.write("".join(x + "\n" for x in lines(i)))
        t = time.monotonic()
        subprocess.run(["curl", "-sS", "-f", "-Z", "--parallel-max", str(writers), *sign, "-K", cfg],
                       check=True, capture_output=True)
        return time.monotonic() - t

    claims, done = [], threading.Event()

    def claim_meanwhile():
        i = 0
        while not done.is_set():
            t = time.monotonic()
            r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", *sign,
                                "-H", "If-None-Match: *", "-T", small,
                                f"{endpoint}/{BUCKET}/capacity/c{i}"], capture_output=True, text=True)
            if r.stdout.strip() == "200":
                claims.append((time.monotonic() - t) * 1000)
            i += 1

    claimer = threading.Thread(target=claim_meanwhile)
    claimer.start()
    try:
        puts = blocks * MIB / many(lambda i: [f'upload-file = "{body}"']) / 1e6
    finally:
        done.set()
        claimer.join()
    gets = blocks * MIB / many(lambda i: []) / 1e6
    return puts, gets, sorted(claims) or [0.0]


def node(ztfs, url, mnt, tier, env, cache_mib):
    """One node: mounts `url` on `mnt` (with the tier when given) and reads
    every tensor's data whole; returns the Popen of the reading shell."""
    os.makedirs(mnt, exist_ok=True)
    flags = ["--cache-mib", str(cache_mib), "--log-file", mnt + ".log"]
    if tier:
        flags += ["--shared-cache", tier]
    script = (f"{ztfs} mount {' '.join(flags)} {url} {mnt} && "
              f"cat {mnt}/*/data > /dev/null; s=$?; {ztfs} unmount {mnt}; exit $s")
    return subprocess.Popen(["sh", "-c", script], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def tier_counts(logs, wait_s=10):
    """The tier's counts summed over the nodes' daemons, from the line each
    logs as it exits (`caches of remote blocks: {JSON}`), waited for."""
    import json
    total = {}
    deadline = time.monotonic() + wait_s
    for log in logs:
        said = []
        while not said and time.monotonic() < deadline:
            try:
                with open(log, errors="replace") as f:
                    said = [x for x in f if "caches of remote blocks: " in x]
            except FileNotFoundError:
                pass
            if not said:
                time.sleep(0.2)
        if said:
            caches = json.loads(said[-1].split("caches of remote blocks: ", 1)[1])
            for what, n in ((caches.get("shared") or {}).get("counts") or {}).items():
                total[what] = total.get(what, 0) + n
    return total


def run(a, servers, url, tier, together, label, env):
    before, cpu0, t0 = origin_bytes(servers.access), busy_s(), time.monotonic()
    procs = []
    work = tempfile.mkdtemp(prefix="ztfs-fleet-")
    for i in range(a.nodes):
        if not together and i:
            time.sleep(a.stagger_s)
        procs.append(node(a.ztfs, url, os.path.join(work, f"n{i}"), tier, env, a.cache_mib))
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise Failed(f"{label}: a node failed: {err.decode(errors='replace')[-500:]}")
    wall = time.monotonic() - t0
    cpu = (busy_s() - cpu0) / wall / os.cpu_count() * 100
    counts = tier_counts([os.path.join(work, f"n{i}.log") for i in range(a.nodes)]) if tier else {}
    shutil.rmtree(work, ignore_errors=True)
    return origin_bytes(servers.access) - before, wall, cpu, counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ztfs", required=True)
    ap.add_argument("--weed", required=True)
    ap.add_argument("--nodes", type=int, default=6)
    ap.add_argument("--model-mib", type=int, default=512)
    ap.add_argument("--link-mbs", type=float, default=100)
    ap.add_argument("--conn-mbs", type=float, default=12.5)
    ap.add_argument("--delay-ms", type=int, default=30)
    ap.add_argument("--stagger-s", type=float, default=3)
    ap.add_argument("--cache-mib", type=int, default=128)
    ap.add_argument("--max-cpu", type=float, default=80)
    ap.add_argument("--only", choices=("staggered", "together"),
                    help="run only the nodes started so (with and without the tier)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ztfs-bench-fleet-", dir="/dev/shm")
    link = None
    tier_proc = None
    try:
        root = os.path.join(work, "models")
        os.makedirs(root)
        sizes = [16 * MIB] * (a.model_mib // 16)
        write_model(os.path.join(root, "m.safetensors"), sizes, seed=7)
        model = sum(sizes)
        link = Link(a.link_mbs * 1e6)
        servers = Servers(link, work, root, int(a.conn_mbs * 1e6), a.delay_ms)
        tier_proc, endpoint = start_tier(work, a.weed)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
                   AWS_REGION=REGION, ZTFS_SHARED_CACHE_ENDPOINT=endpoint)
        url = servers.http_url("m.safetensors")
        writers = 2 * a.nodes  # each node's writer threads (tier.rs: WRITERS)
        mbs, gets, claims = tier_capacity(endpoint, work, writers)
        q = lambda f: claims[min(len(claims) - 1, int(f * len(claims)))]  # noqa: E731
        print(f"== the tier alone: 1 MiB PUTs, {writers} at once: {mbs:.0f} MB/s; a claim "
              f"(conditional PUT) meanwhile: median {q(0.5):.0f} ms, 90th {q(0.9):.0f} ms, "
              f"slowest {claims[-1]:.0f} ms of {len(claims)} (the deadline is 2000 ms); "
              f"1 MiB GETs, {writers} at once: {gets:.0f} MB/s")
        bound = (a.nodes - 1) * model / (gets * 1e6)
        print(f"== so the tier alone takes about {bound:.1f} s to give {a.nodes - 1} nodes the model "
              f"(each node but the one that fetches a block reads it from the tier), with the "
              f"nodes' own work aside")
        print(f"== a fleet of {a.nodes} nodes reading a {a.model_mib} MiB model: origin behind "
              f"a link of {a.link_mbs:g} MB/s ({a.conn_mbs:g} MB/s a connection, "
              f"{a.delay_ms} ms to the first byte), the tier a SeaweedFS on loopback")
        rows = {}
        starts = {"staggered": (False,), "together": (True,)}.get(a.only, (False, True))
        for together in starts:
            start = "together" if together else f"staggered {a.stagger_s:g} s"
            for n, tier in enumerate((None, f"s3://{BUCKET}/run-{int(together)}")):
                label = f"{'tier' if tier else 'no tier'}, {start}"
                sent, wall, cpu, counts = run(a, servers, url, tier, together, label, env)
                rows[(together, bool(tier))] = (sent, wall)
                base = rows.get((together, False))
                ratio = f", {wall / base[1]:.2f}x the time without" if tier and base else ""
                hot = f"  (CPU {cpu:.0f}% > {a.max_cpu:g}%: may be CPU-bound)" if cpu > a.max_cpu else ""
                print(f"  {label:<28} origin {sent / model:5.2f}x the model, last node done "
                      f"in {wall:6.1f} s{ratio}; CPU {cpu:.0f}%{hot}")
                if counts:
                    said = ", ".join(f"{n} {w}" for w, n in counts.items())
                    print(f"    the tier, summed over the nodes: {said}")
    except Failed as e:
        print(f"bench-fleet: {e}", file=sys.stderr)
        sys.exit(2)
    finally:
        if tier_proc is not None:
            tier_proc.terminate()
            try:
                tier_proc.wait(10)
            except subprocess.TimeoutExpired:
                tier_proc.kill()
        if link is not None:
            link.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
