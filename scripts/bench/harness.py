"""The harness every benchmark shares: the mounts it makes (a ztfs daemon
or the bare fuser server) and undoes on every way out, and what it reads of
a process in /proc (its command line, whether it lives, its CPU time and
resident memory)."""

import os
import select
import signal
import subprocess
import sys
import time


class Failed(Exception):
    """Something did not run; the benchmark exits 2."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def proc_argv(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[:-1]
    except OSError:
        return None


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cpu_ns(pid):
    """CPU time of all threads of `pid`, in ns (schedstat, not ticks)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def rss_kib(pid, field="VmRSS"):
    """`field` of /proc/PID/status in KiB: VmRSS (resident now) or VmHWM
    (the most ever resident)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise Failed(f"no {field} for pid {pid}")


def mounted(mnt):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mnt for line in f)


def read_ahead_kb(mnt):
    dev = os.stat(mnt).st_dev
    with open(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb") as f:
        return int(f.read())


class Mount:
    """One mount we made and must undo: a ztfs daemon or a bare server.
    Every one made is in `live` until unmounted, so a benchmark's exit
    path unmounts whatever is left (`unmount_all`)."""

    live = []
    ztfs_bin = "ztfs"

    def __init__(self, kind, mnt, pid, popen=None, path=None, started_s=0.0):
        self.kind, self.mnt, self.pid, self.popen = kind, mnt, pid, popen
        self.path, self.started_s = path, started_s
        Mount.live.append(self)

    @staticmethod
    def _mount(argv, mnt):
        """Runs a `ztfs mount` command line; its daemon's pid and the time
        it took."""
        t0 = time.perf_counter()
        r = subprocess.run(argv, capture_output=True)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            raise Failed(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.decode().strip()}")
        want = [a.encode() for a in argv]
        pids = [p for p in os.listdir("/proc") if p.isdigit() and proc_argv(p) == want]
        if len(pids) != 1:
            subprocess.run([argv[0], "unmount", mnt])
            raise Failed(f"found {len(pids)} daemons for {mnt}")
        return int(pids[0]), dt

    @classmethod
    def ztfs(cls, bins, file, mnt, direct_io=False, flags=("--passthrough", "off")):
        """`ztfs mount` with `flags`: by default without passthrough, so
        reads reach the daemon (the buffered figures)."""
        argv = [bins.ztfs, "mount", file, mnt, *flags] + (["--direct-io"] if direct_io else [])
        pid, dt = cls._mount(argv, mnt)
        return cls("ztfs", mnt, pid, None, os.path.join(mnt, "big", "data"), dt)

    @classmethod
    def fresh(cls, file, mnt, opts=()):
        """`ztfs mount` of `file` with `opts`, without passthrough clones
        (the daemon's own work is what is measured)."""
        argv = [cls.ztfs_bin, "mount", file, mnt, "--passthrough", "off", *opts]
        pid, dt = cls._mount(argv, mnt)
        return cls("ztfs", mnt, pid, started_s=dt)

    def data_of(self, obj):
        """The `data` file of object `obj` in this mount."""
        return os.path.join(self.mnt, obj, "data")

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.unmount()

    @classmethod
    def bare(cls, bins, file, mnt, offset, length, direct_io=False):
        argv = [bins.bare, file, mnt, str(offset), str(length)]
        argv += ["--direct-io"] if direct_io else []
        t0 = time.perf_counter()
        # Its own session, like the ztfs daemon (setsid): with scheduler
        # autogroups, which session a daemon is in changes where its threads
        # are woken, and so the latency of small reads.
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, start_new_session=True)
        ready, _, _ = select.select([p.stdout], [], [], 30)
        line = p.stdout.readline() if ready else b""
        dt = time.perf_counter() - t0
        if line.strip() != b"ready":
            p.terminate()
            raise Failed(f"bare_server did not mount on {mnt} (exit {p.wait()})")
        return cls("bare", mnt, p.pid, p, os.path.join(mnt, "blob"), dt)

    def unmount(self, bins=None):
        ztfs_bin = bins.ztfs if bins is not None else Mount.ztfs_bin
        if self not in Mount.live:
            return
        Mount.live.remove(self)
        if self.popen is not None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
                raise Failed(f"bare_server on {self.mnt} ignored SIGTERM")
        else:
            r = subprocess.run([ztfs_bin, "unmount", self.mnt], capture_output=True)
            # Wait for the daemon to be gone before anything is mounted here
            # again: on its way out it unmounts its mount point by path
            # (fuser 0.18), which would detach a newer mount.
            deadline = time.monotonic() + 20
            while alive(self.pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            if r.returncode != 0 or alive(self.pid):
                if alive(self.pid):
                    os.kill(self.pid, signal.SIGTERM)
                raise Failed(f"ztfs unmount {self.mnt}: {r.stderr.decode().strip()}")
        if mounted(self.mnt):
            subprocess.run(["umount", "-l", self.mnt])

    @classmethod
    def unmount_all(cls):
        for m in list(cls.live):
            try:
                m.unmount()
            except Failed as e:
                log(f"cleanup: {e}")


def run(main, name):
    """Runs a benchmark's `main` as its command: SIGTERM stops it as Ctrl-C
    does, whatever it mounted is unmounted on every way out, and the exit
    status is 0, 2 when something failed to run, 130 when interrupted."""
    def stop(sig, _frame):
        raise KeyboardInterrupt(f"signal {sig}")

    signal.signal(signal.SIGTERM, stop)
    code = 0
    try:
        main()
    except Failed as e:
        log(f"{name}: {e}")
        code = 2
    except KeyboardInterrupt:
        log(f"{name}: interrupted")
        code = 130
    finally:
        Mount.unmount_all()
    sys.exit(code)
