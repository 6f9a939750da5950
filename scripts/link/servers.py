"""The servers in the link's namespace: the files by HTTP and a bucket by S3
(SeaweedFS), each behind nginx (one `limit_rate` per connection) behind the
delaying proxy (delay.py), so a reader meets: first byte late, each
connection capped, the whole link capped (net.Link).

    reader --> delay.py :80   --> nginx 127.0.0.1:8080 (limit_rate) --> files
    reader --> delay.py :8333 --> nginx 127.0.0.1:8090 (limit_rate) --> weed S3 127.0.0.1:8334
"""

import os
import socket
import subprocess
import sys
import time

from bench.remote import logged

from .net import Failed

HERE = os.path.dirname(os.path.abspath(__file__))
BUCKET = "models"
ACCESS_KEY, SECRET_KEY, REGION = "ztfs-link", "ztfs-link-secret", "us-east-1"


def nginx_conf(d, root, per_conn):
    tmp = os.path.join(d, "tmp")
    os.makedirs(tmp, exist_ok=True)
    rate = f"{max(1, int(per_conn // 1024))}k"
    return f"""daemon off; master_process off; worker_processes 1;
error_log {d}/error.log; pid {d}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  log_format timed '$request_method $uri $status $body_bytes_sent $http_range';
  access_log {d}/access.log timed; sendfile on; etag on; keepalive_requests 100000;
  client_body_temp_path {tmp}; proxy_temp_path {tmp}; fastcgi_temp_path {tmp};
  uwsgi_temp_path {tmp}; scgi_temp_path {tmp};
  upstream weed {{ server 127.0.0.1:8334; keepalive 64; }}
  server {{ listen 127.0.0.1:8080; root {root}; autoindex on; limit_rate {rate}; }}
  server {{
    listen 127.0.0.1:8090; limit_rate {rate}; client_max_body_size 0;
    location / {{
      proxy_pass http://weed; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_set_header Host $http_host; proxy_request_buffering off;
      proxy_buffers 16 64k; proxy_max_temp_file_size 0;
    }}
  }}
}}
"""


def wait_port(host, port, what, seconds=60, proc=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise Failed(f"{what} exited at start (exit {proc.returncode})")
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise Failed(f"{what} did not answer on {host}:{port} in {seconds} s")


class Servers:
    """Starts nginx serving `root` and, when `weed` is given (the venv's
    SeaweedFS binary), an S3 bucket; each behind a delay of `delay_ms`."""

    def __init__(self, link, work, root, per_conn, delay_ms, weed=None):
        self.link, self.work = link, work
        d = os.path.join(work, "nginx")
        os.makedirs(d, exist_ok=True)
        self.access = os.path.join(d, "access.log")
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(nginx_conf(d, root, per_conn))
        nginx = link.spawn(["nginx", "-p", d, "-c", conf, "-e", os.path.join(d, "error.log")],
                           os.path.join(d, "out.log"))
        self.weed = None
        if weed is not None:
            wd = os.path.join(work, "weed")
            os.makedirs(os.path.join(wd, "data"), exist_ok=True)
            env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
            env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, TMPDIR=wd)
            self.weed = link.spawn([weed, "-logtostderr", "mini", f"-dir={wd}/data",
                                    "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-bucket={BUCKET}",
                                    "-admin.ui=false", "-webdav=false", "-master.telemetry=false",
                                    "-s3.port=8334", "-s3.port.iceberg=0", "-s3.port.lance=0",
                                    "-volume.preStopSeconds=0",
                                    f"-filer.localSocket={wd}/filer.sock",
                                    f"-s3.localSocket={wd}/s3.sock"],
                                   os.path.join(wd, "weed.log"), env=env, cwd=wd)
        for port, upstream in ((80, 8080), (8333, 8090)):
            if port == 8333 and weed is None:
                continue
            link.spawn([sys.executable, os.path.join(HERE, "delay.py"), f"{link.server}:{port}",
                        f"127.0.0.1:{upstream}", str(delay_ms)],
                       os.path.join(work, f"delay-{port}.log"))
        self.in_ns(wait_port_script("127.0.0.1", 8080), "nginx")
        if nginx.poll() is not None:
            raise Failed(f"nginx exited at start: see {d}/error.log")
        wait_port(link.server, 80, "the delaying proxy")
        if weed is not None:
            self.in_ns(wait_port_script("127.0.0.1", 8334, 120), "weed mini")
            wait_port(link.server, 8333, "the delaying proxy of S3")
            self.wait_bucket()

    def in_ns(self, script, what):
        r = subprocess.run(["ip", "netns", "exec", self.link.ns, sys.executable, "-c", script],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Failed(f"{what} did not start: {r.stderr.strip()[-500:]}")

    def http_url(self, name):
        return f"http://{self.link.server}/{name}"

    def s3_endpoint(self):
        return f"http://{self.link.server}:8333"

    def s3_env(self):
        """The environment of an S3 reader of the bucket (ztfs, the AWS
        tools): credentials, region, endpoint, plain HTTP allowed."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
                   AWS_REGION=REGION, AWS_ENDPOINT_URL=self.s3_endpoint(), AWS_ALLOW_HTTP="true")
        return env

    def requests(self):
        """Requests nginx has answered so far (both servers)."""
        return logged(self.access)

    def wait_bucket(self):
        """weed answers before its bucket exists: a listing through the
        whole chain tells."""
        deadline = time.monotonic() + 120
        last = ""
        while time.monotonic() < deadline:
            r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                                "--aws-sigv4", f"aws:amz:{REGION}:s3", "--user",
                                f"{ACCESS_KEY}:{SECRET_KEY}",
                                f"{self.s3_endpoint()}/{BUCKET}?list-type=2&max-keys=1"],
                               capture_output=True, text=True)
            last = r.stdout + r.stderr
            if r.stdout.strip() == "200":
                return
            time.sleep(0.5)
        raise Failed(f"the bucket {BUCKET} did not answer a listing: {last.strip()}")

    def put(self, path, key):
        """Uploads `path` as `key`, straight to weed inside the namespace
        (not through the caps)."""
        r = subprocess.run(["ip", "netns", "exec", self.link.ns, "curl", "-sS", "-f",
                            "--aws-sigv4", f"aws:amz:{REGION}:s3", "--user",
                            f"{ACCESS_KEY}:{SECRET_KEY}", "-T", path,
                            f"http://127.0.0.1:8334/{BUCKET}/{key}"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Failed(f"upload of {key}: {r.stderr.strip()}")


def wait_port_script(host, port, seconds=60):
    return f"""
import socket, sys, time
end = time.monotonic() + {seconds}
while time.monotonic() < end:
    try:
        socket.create_connection(({host!r}, {port}), timeout=0.5).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("no answer on {host}:{port}")
"""
