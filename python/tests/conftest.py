"""Shared pieces of the package's tests: the repository's corpus, and the
servers the library reads URLs from (nginx, the Hub emulator), each
started here on 127.0.0.1 and stopped after its test."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "corpus"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited at start ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


class Nginx:
    """nginx serving `root` on 127.0.0.1 (ranges, ETags), as a model's
    server: `url(name)`."""

    def __init__(self, root):
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(exe):
            raise RuntimeError("nginx is not installed (scripts/test.sh installs nginx-light)")
        self.dir = tempfile.mkdtemp(prefix="ztfs-nginx-")
        self.port = free_port()
        conf = Path(self.dir) / "nginx.conf"
        tmp = Path(self.dir) / "tmp"
        tmp.mkdir()
        conf.write_text(f"""daemon off; master_process off; worker_processes 1;
error_log {self.dir}/error.log; pid {self.dir}/nginx.pid;
events {{ worker_connections 256; }}
http {{
  log_format sent '$body_bytes_sent';
  access_log {self.dir}/access.log sent; sendfile on; etag on;
  client_body_temp_path {tmp}; proxy_temp_path {tmp}; fastcgi_temp_path {tmp};
  uwsgi_temp_path {tmp}; scgi_temp_path {tmp};
  server {{ listen 127.0.0.1:{self.port}; root {root}; }}
}}
""")
        self.proc = subprocess.Popen([exe, "-c", str(conf), "-p", self.dir],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc, "nginx")

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def bytes_sent(self):
        """Body bytes nginx has sent so far, by its access log."""
        try:
            with open(Path(self.dir) / "access.log") as f:
                return sum(int(line) for line in f if line.strip())
        except FileNotFoundError:
            return 0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


class Hub:
    """scripts/hub/emulator.py on 127.0.0.1, its repositories in a
    temporary folder: `add(repo, folder)`, `HF_ENDPOINT` set meanwhile."""

    def __init__(self):
        self.repos = tempfile.mkdtemp(prefix="ztfs-hub-")
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "scripts" / "hub" / "emulator.py"), "--repos", self.repos,
             "--port", "0"], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        host, port = line.strip().rsplit(" ", 1)[-1].rsplit(":", 1)
        self.endpoint = f"http://{host}:{port}"
        self.old = os.environ.get("HF_ENDPOINT")
        os.environ["HF_ENDPOINT"] = self.endpoint

    def add(self, repo, folder):
        subprocess.run([sys.executable, str(REPO / "scripts" / "hub" / "store.py"), "add", self.repos,
                        "models", repo, str(folder)], check=True, capture_output=True)

    def delay(self, ms):
        """Every answer from now on `ms` late."""
        import json
        import urllib.request

        req = urllib.request.Request(f"{self.endpoint}/_emulator/fail", method="POST",
                                     data=json.dumps({"delay_ms": ms}).encode())
        urllib.request.urlopen(req, timeout=10).read()

    def stop(self):
        if self.old is None:
            os.environ.pop("HF_ENDPOINT", None)
        else:
            os.environ["HF_ENDPOINT"] = self.old
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.repos, ignore_errors=True)


@pytest.fixture
def nginx(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    server = Nginx(root)
    server.root = root
    yield server
    server.stop()


@pytest.fixture
def hub():
    h = Hub()
    yield h
    h.stop()
