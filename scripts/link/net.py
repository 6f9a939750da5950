"""The link: a network namespace holding the servers, joined to this one by
a veth pair whose server side sends through a token bucket (`tc tbf`), so
that everything the readers receive shares one capped link.

Made by `Link(...)`, undone by `close()` (the namespace, and with it the
pair, its qdisc and every process still in it).
"""

import os
import signal
import subprocess
import time


class Failed(Exception):
    """The link could not be made; the benchmark exits 2."""


def sh(*argv, ns=None, check=True):
    if ns is not None:
        argv = ("ip", "netns", "exec", ns) + argv
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise Failed(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


class Link:
    """Namespace `ztfs-link-PID`: the servers listen on `self.server`
    (10.201.N.2), the readers here reach it from 10.201.N.1; what the
    servers send is capped at `rate` bytes/s."""

    def __init__(self, rate):
        if os.geteuid() != 0:
            raise Failed("the link needs root (a network namespace, a veth pair, tc)")
        for tool in ("ip", "tc"):
            if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
                raise Failed(f"no {tool} on PATH (apt-get install iproute2)")
        n = os.getpid() % 250 + 1
        self.ns = f"ztfs-link-{os.getpid()}"
        self.host_if, self.ns_if = f"ztl{os.getpid()}h", f"ztl{os.getpid()}n"
        self.client, self.server = f"10.201.{n}.1", f"10.201.{n}.2"
        self.procs = []
        sh("ip", "netns", "add", self.ns)
        try:
            sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
            sh("ip", "link", "set", self.ns_if, "netns", self.ns)
            sh("ip", "addr", "add", f"{self.client}/24", "dev", self.host_if)
            sh("ip", "link", "set", self.host_if, "up")
            sh("ip", "addr", "add", f"{self.server}/24", "dev", self.ns_if, ns=self.ns)
            sh("ip", "link", "set", self.ns_if, "up", ns=self.ns)
            sh("ip", "link", "set", "lo", "up", ns=self.ns)
            # A bucket of 4 ms of the rate (at least 64 KiB): short enough
            # that a 16 MiB read sees the cap, big enough for the timer.
            burst = max(int(rate * 0.004), 64 << 10)
            sh("tc", "qdisc", "add", "dev", self.ns_if, "root", "tbf", "rate", f"{int(rate)}bps",
               "burst", str(burst), "latency", "200ms", ns=self.ns)
        except BaseException:
            self.close()
            raise

    def spawn(self, argv, log, env=None, cwd=None):
        """Starts `argv` in the namespace, its output to `log`; stopped by
        close(). Returns the Popen."""
        with open(log, "ab") as out:
            p = subprocess.Popen(["ip", "netns", "exec", self.ns, *argv], stdout=out,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=env, cwd=cwd, start_new_session=True)
        self.procs.append(p)
        return p

    def close(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + 10
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()
        self.procs = []
        # Whatever is left in the namespace (a daemonised server) goes too.
        pids = sh("ip", "netns", "pids", self.ns, check=False).split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        sh("ip", "link", "del", self.host_if, check=False)
        sh("ip", "netns", "del", self.ns, check=False)

