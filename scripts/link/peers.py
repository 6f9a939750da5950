"""The mounts compared through the link: ztfs (by s3:// and http://), rclone
(S3 and HTTP backends, `--vfs-cache-mode off` and `full`) and s3fs, each
made fresh for one measurement and undone after it. A mount knows its
daemon's pid, for the peak resident memory printed beside each figure."""

import os
import shutil
import signal
import subprocess
import time

from .net import Failed
from .servers import ACCESS_KEY, BUCKET, REGION, SECRET_KEY


def mounted(mnt):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mnt for line in f)


def peak_rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def pids_of(pattern_argv0, mnt):
    """Processes whose command line holds `pattern_argv0` and `mnt`."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and pattern_argv0.encode() in os.path.basename(argv[0]) and mnt.encode() in argv:
            out.append(int(p))
    return out


class Mounted:
    """A peer's mount on `mnt`, its daemon `pid`, and how to undo it."""

    def __init__(self, name, mnt, pid, env=None, ztfs=None):
        self.name, self.mnt, self.pid, self.env, self.ztfs = name, mnt, pid, env, ztfs

    def rss(self):
        return peak_rss_mib(self.pid) if self.pid else None

    def close(self):
        if self.ztfs:
            subprocess.run([self.ztfs, "unmount", self.mnt], capture_output=True)
        elif mounted(self.mnt):
            subprocess.run(["umount", self.mnt], capture_output=True)
        deadline = time.monotonic() + 20
        while self.pid and os.path.exists(f"/proc/{self.pid}") and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.pid and os.path.exists(f"/proc/{self.pid}"):
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        if mounted(self.mnt):
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)


def tail(path, n=5):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().splitlines()[-n:])
    except OSError:
        return ""


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def ztfs_mount(ztfs, url, mnt, env, flags=()):
    fresh_dir(mnt)
    r = subprocess.run([ztfs, "mount", url, mnt, "--passthrough", "off", *flags],
                       capture_output=True, text=True, env=env)
    if r.returncode:
        raise Failed(f"ztfs mount {url}: {r.stderr.strip()}")
    pids = pids_of("ztfs", mnt)
    return Mounted("ztfs", mnt, pids[0] if pids else None, env, ztfs=ztfs)


def rclone_env(servers):
    # Only our settings: rclone 1.60 fails on an AWS_CA_BUNDLE of the host.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RCLONE_"))}
    env.update({
        "RCLONE_CONFIG_LINKS3_TYPE": "s3", "RCLONE_CONFIG_LINKS3_PROVIDER": "Other",
        "RCLONE_CONFIG_LINKS3_ENDPOINT": servers.s3_endpoint(),
        "RCLONE_CONFIG_LINKS3_ACCESS_KEY_ID": ACCESS_KEY,
        "RCLONE_CONFIG_LINKS3_SECRET_ACCESS_KEY": SECRET_KEY,
        "RCLONE_CONFIG_LINKS3_REGION": REGION, "RCLONE_CONFIG_LINKS3_FORCE_PATH_STYLE": "true",
        "RCLONE_CONFIG_LINKHTTP_TYPE": "http",
        "RCLONE_CONFIG_LINKHTTP_URL": servers.http_url(""),
    })
    return env


def rclone_mount(servers, backend, mnt, cache, flags, work):
    """`rclone mount` of the bucket (backend "s3") or the served folder
    ("http") with `flags`, in the background; a fresh cache directory."""
    if shutil.which("rclone") is None:
        raise Failed("no rclone (apt-get install rclone)")
    fresh_dir(mnt)
    remote = f"links3:{BUCKET}" if backend == "s3" else "linkhttp:"
    argv = ["rclone", "mount", remote, mnt, "--read-only", "--daemon", "--config", "/dev/null",
            "--cache-dir", fresh_dir(cache), "--dir-cache-time", "1h", "--no-checksum",
            "--log-file", os.path.join(work, "rclone.log"), *flags]
    return daemon_mount("rclone", argv, rclone_env(servers), mnt, os.path.join(work, "rclone.log"))


def daemon_mount(name, argv, env, mnt, log):
    """Runs a peer's mount command, which leaves a daemon behind, and waits
    for the mount; failures say the end of its log."""
    # Not through pipes: the daemon it forks would hold them open.
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env)
    if r.returncode:
        raise Failed(f"{' '.join(argv)}: exit {r.returncode}: {tail(log)}")
    deadline = time.monotonic() + 30
    while not mounted(mnt):
        if time.monotonic() > deadline:
            raise Failed(f"{name} did not mount {mnt}: {tail(log)}")
        time.sleep(0.05)
    pids = pids_of(name, mnt)
    return Mounted(name, mnt, pids[0] if pids else None)


def s3fs_mount(servers, mnt, options, work):
    """s3fs of the bucket with `-o` options (a list of "k=v")."""
    if shutil.which("s3fs") is None:
        raise Failed("no s3fs (apt-get install s3fs)")
    fresh_dir(mnt)
    passwd = os.path.join(work, "s3fs.passwd")
    with open(passwd, "w") as f:
        f.write(f"{ACCESS_KEY}:{SECRET_KEY}\n")
    os.chmod(passwd, 0o600)
    argv = ["s3fs", BUCKET, mnt, "-o", f"url={servers.s3_endpoint()}", "-o",
            "use_path_request_style", "-o", f"passwd_file={passwd}", "-o", "ro",
            "-o", f"endpoint={REGION}", "-o", "logfile=" + os.path.join(work, "s3fs.log")]
    for o in options:
        argv += ["-o", o]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return daemon_mount("s3fs", argv, env, mnt, os.path.join(work, "s3fs.log"))
