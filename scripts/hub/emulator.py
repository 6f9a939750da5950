"""A Hugging Face Hub emulator on 127.0.0.1, faithful enough that the real
`huggingface_hub` (`snapshot_download`, `hf_hub_download`, `repo_info`,
`list_repo_tree`) works against it, and so that ztfs reads `hf://`
repositories from it by range. It serves the repositories that
scripts/hub/store.py keeps on disk, read again on every request.

    python scripts/hub/emulator.py --repos DIR [--host 127.0.0.1] [--port 0] [--token T] [--page-size N]

prints `listening on HOST:PORT` as its first line, then serves until killed.

What it answers, as the Hub does:
- GET /api/{models,datasets,spaces}/ORG/NAME[/revision/REV]: id, sha, siblings, ...
  (with ?blobs=true, as repo_info(files_metadata=True) asks, each sibling's
  blobId, size and lfs too);
- GET /api/{type}/ORG/NAME/tree/REV[/PATH]?recursive=...: files (oid, size, lfs)
  and folders, paginated past --page-size with a Link rel="next" header;
- HEAD/GET /[datasets/|spaces/]ORG/NAME/resolve/REV/PATH: a plain file with
  ETag (its git blob id), X-Repo-Commit, ranges, If-Match; an LFS file
  (by .gitattributes, or past 10 MB) as a 302 to a signed storage URL on
  another host (a second listener on 127.0.0.2, as the Hub's CDN is not
  the Hub: huggingface_hub follows a redirect only on the same host), with
  X-Linked-Etag (sha256) and X-Linked-Size;
- GET/HEAD /storage/SHA256?expires=..&sig=..: the blob, ETag its sha256;
  a missing or wrong signature is 403. No token needed (clients drop it).
- A repository marked private or gated answers 401 (RepoNotFound or
  GatedRepo) without `Authorization: Bearer T`, and private 401 / gated 403
  with another token. Unknown repository: 401 RepoNotFound; unknown
  revision: 404 RevisionNotFound; unknown file: 404 EntryNotFound (with
  X-Repo-Commit).
- Control: GET /_emulator/requests gives counts by kind (api-revision,
  api-tree, resolve, storage, other) since POST /_emulator/reset, and the
  same split by method under "by_method" ({"HEAD": {"resolve": 3}, ...}),
  and the most requests served at once, "max_in_flight"; POST
  /_emulator/fail {"prefix": P, "status": S, "count": N, "retry_after": s}
  fails the next N requests whose path starts with P; {"delay_ms": D}
  delays every answer.
The access log is off: no token is ever written down. SIGTERM (or ^C)
exits 0.
"""

from __future__ import annotations

import argparse
import email.utils
import fnmatch
import hashlib
import hmac
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import store  # noqa: E402

LFS_SIZE = 10 << 20
HEX40 = re.compile(r"^[0-9a-f]{40}$")


class State:
    def __init__(self, repos: str, token: str | None, page_size: int):
        self.repos = repos
        self.token = token
        self.page_size = page_size
        self.secret = secrets.token_bytes(32)
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.by_method: dict[str, dict[str, int]] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self.faults: list[dict] = []
        self.delay_ms = 0
        self.blobs: dict[str, str] = {}  # sha256 -> a path holding it
        self.storage = ""  # the storage host's base URL

    def count(self, method: str, kind: str) -> None:
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            m = self.by_method.setdefault(method, {})
            m[kind] = m.get(kind, 0) + 1

    def fault_for(self, path: str) -> dict | None:
        with self.lock:
            for f in self.faults:
                if path.startswith(f.get("prefix", "")) and f["count"] > 0:
                    f["count"] -= 1
                    return f
        return None

    def sign(self, sha256: str, expires: str) -> str:
        return hmac.new(self.secret, f"{sha256}:{expires}".encode(), hashlib.sha256).hexdigest()


def git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


class File:
    """A file of a commit, with what the Hub says of it."""

    def __init__(self, path: str, full: str, lfs_patterns: list[str]):
        self.path = path
        self.full = full
        st = os.stat(full)
        self.size = st.st_size
        self.mtime = st.st_mtime
        name = path.rsplit("/", 1)[-1]
        self.lfs = self.size > LFS_SIZE or any(
            fnmatch.fnmatch(name, p) or fnmatch.fnmatch(path, p) for p in lfs_patterns)
        self._sha256 = None
        self._oid = None

    def data(self) -> bytes:
        with open(self.full, "rb") as f:
            return f.read()

    @property
    def sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = hashlib.sha256(self.data()).hexdigest()
        return self._sha256

    @property
    def oid(self) -> str:
        """The git blob id: of the LFS pointer for an LFS file."""
        if self._oid is None:
            self._oid = git_oid(lfs_pointer(self.sha256, self.size) if self.lfs else self.data())
        return self._oid


def lfs_patterns(commit_dir: str) -> list[str]:
    path = os.path.join(commit_dir, ".gitattributes")
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and "filter=lfs" in parts[1:]:
                    out.append(parts[0])
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hub-emulator"
    state: State

    def log_message(self, *args) -> None:  # no access log: tokens stay unwritten
        pass

    # --- answers -----------------------------------------------------------

    def answer(self, status: int, body: bytes = b"", headers: dict | None = None,
               head: bool = False, length: int | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if not head and body:
            self.wfile.write(body)

    def json(self, status: int, value, headers: dict | None = None, head: bool = False) -> None:
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        self.answer(status, json.dumps(value).encode(), h, head)

    def error(self, status: int, code: str, message: str, head: bool = False, headers: dict | None = None) -> None:
        h = {"X-Error-Code": code, "X-Error-Message": message}
        h.update(headers or {})
        self.json(status, {"error": message}, h, head)

    # --- dispatch ----------------------------------------------------------

    def do_GET(self) -> None:
        self.route(head=False)

    def do_HEAD(self) -> None:
        self.route(head=True)

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        path = urllib.parse.urlsplit(self.path).path
        st = self.state
        if path == "/_emulator/reset":
            with st.lock:
                st.counts = {}
                st.by_method = {}
                st.max_in_flight = st.in_flight
                st.faults = []
                st.delay_ms = 0
            return self.json(200, {"ok": True})
        if path == "/_emulator/fail":
            spec = json.loads(body or b"{}")
            with st.lock:
                if "delay_ms" in spec:
                    st.delay_ms = int(spec["delay_ms"])
                if "status" in spec:
                    st.faults.append({"prefix": spec.get("prefix", "/"), "status": int(spec["status"]),
                                      "count": int(spec.get("count", 1)),
                                      "retry_after": spec.get("retry_after")})
            return self.json(200, {"ok": True})
        self.error(404, "EntryNotFound", "no such endpoint")

    def route(self, head: bool) -> None:
        url = urllib.parse.urlsplit(self.path)
        path, query = url.path, urllib.parse.parse_qs(url.query)
        st = self.state
        if path == "/_emulator/requests":
            with st.lock:
                counts = dict(st.counts, by_method={m: dict(c) for m, c in st.by_method.items()},
                              max_in_flight=st.max_in_flight)
            return self.json(200, counts)
        with st.lock:
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            self.serve_route(path, query, head)
        finally:
            with st.lock:
                st.in_flight -= 1

    def serve_route(self, path: str, query: dict, head: bool) -> None:
        st = self.state
        parts = [urllib.parse.unquote(p) for p in path.split("/")[1:]]
        kind = self.kind_of(parts)
        st.count(self.command, kind)
        if st.delay_ms:
            time.sleep(st.delay_ms / 1000)
        fault = st.fault_for(path)
        if fault:
            h = {"Retry-After": fault["retry_after"]} if fault.get("retry_after") is not None else {}
            return self.answer(fault["status"], b"injected fault", h, head)
        try:
            if parts[:1] == ["api"]:
                return self.api(parts[1:], query, head)
            if parts[:1] == ["storage"]:
                return self.storage(parts[1:], query, head)
            return self.resolve(parts, head)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as e:  # a bug here: say it, and keep the connection usable
            print(f"emulator: {self.command} {path}: {e!r}", file=sys.stderr, flush=True)
            self.error(500, "InternalError", "emulator error", head)

    @staticmethod
    def kind_of(parts: list[str]) -> str:
        if parts[:1] == ["api"]:
            return "api-tree" if "tree" in parts else "api-revision"
        if parts[:1] == ["storage"]:
            return "storage"
        return "resolve" if "resolve" in parts else "other"

    # --- repositories ------------------------------------------------------

    def repo(self, kind: str, org: str, name: str, head: bool):
        """The repository's folder, or None after answering an error."""
        d = store.repo_dir(self.state.repos, kind, f"{org}/{name}")
        if not os.path.isdir(os.path.join(d, "commits")):
            self.error(401, "RepoNotFound", "Repository Not Found", head)
            return None
        auth = self.headers.get("Authorization", "")
        good = self.state.token is not None and auth == f"Bearer {self.state.token}"
        if os.path.exists(os.path.join(d, "private")) and not good:
            self.error(401, "RepoNotFound", "Repository Not Found", head)
            return None
        if os.path.exists(os.path.join(d, "gated")) and not good:
            status = 403 if auth else 401
            self.error(status, "GatedRepo", "Access to this model is restricted", head)
            return None
        return d

    def commit(self, d: str, rev: str, head: bool):
        """(sha, commit folder) of `rev`, or None after answering 404."""
        if HEX40.match(rev) and os.path.isdir(os.path.join(d, "commits", rev)):
            return rev, os.path.join(d, "commits", rev)
        ref = os.path.join(d, "refs", urllib.parse.quote(rev, safe=""))
        if os.path.exists(ref):
            with open(ref) as f:
                sha = f.read().strip()
            return sha, os.path.join(d, "commits", sha)
        self.error(404, "RevisionNotFound", f"Invalid rev id: {rev}", head)
        return None

    def files(self, commit_dir: str) -> list[File]:
        patterns = lfs_patterns(commit_dir)
        out = []
        for p in store.files_of(commit_dir):
            f = File(p, os.path.join(commit_dir, p), patterns)
            out.append(f)
        return out

    # --- /api ----------------------------------------------------------------

    def api(self, parts: list[str], query: dict, head: bool) -> None:
        if len(parts) < 3 or parts[0] not in store.KINDS:
            return self.error(404, "EntryNotFound", "no such endpoint", head)
        kind, org, name, rest = parts[0], parts[1], parts[2], parts[3:]
        d = self.repo(kind, org, name, head)
        if d is None:
            return
        if not rest or rest[0] == "revision":
            rev = "/".join(rest[1:]) if len(rest) > 1 else "main"
            found = self.commit(d, rev, head)
            if found is None:
                return
            sha, cdir = found
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(os.stat(cdir).st_mtime))
            info = {"_id": sha[:24], "id": f"{org}/{name}", "modelId": f"{org}/{name}",
                    "author": org, "sha": sha, "lastModified": stamp, "createdAt": stamp,
                    "private": os.path.exists(os.path.join(d, "private")),
                    "gated": "auto" if os.path.exists(os.path.join(d, "gated")) else False,
                    "disabled": False, "downloads": 0, "likes": 0, "tags": [],
                    "siblings": [self.sibling(f, query) for f in self.files(cdir)]}
            return self.json(200, info, head=head)
        if rest[0] == "tree" and len(rest) >= 2:
            found = self.commit(d, rest[1], head)
            if found is None:
                return
            sha, cdir = found
            sub = "/".join(rest[2:]).strip("/")
            recursive = query.get("recursive", ["false"])[0].lower() == "true"
            return self.tree(cdir, sub, recursive, query, head)
        self.error(404, "EntryNotFound", "no such endpoint", head)

    @staticmethod
    def sibling(f: File, query: dict) -> dict:
        if query.get("blobs", ["false"])[0].lower() != "true":
            return {"rfilename": f.path}
        out = {"rfilename": f.path, "blobId": f.oid, "size": f.size}
        if f.lfs:
            out["lfs"] = {"sha256": f.sha256, "size": f.size, "pointerSize": len(lfs_pointer(f.sha256, f.size))}
        return out

    def tree(self, cdir: str, sub: str, recursive: bool, query: dict, head: bool) -> None:
        prefix = sub + "/" if sub else ""
        entries, dirs = [], set()
        for f in self.files(cdir):
            if not f.path.startswith(prefix):
                continue
            rest = f.path[len(prefix):]
            comps = rest.split("/")
            for i in range(1, len(comps)):
                if recursive or i == 1:
                    dirs.add(prefix + "/".join(comps[:i]))
            if not recursive and len(comps) > 1:
                continue
            e = {"type": "file", "oid": f.oid, "size": f.size, "path": f.path}
            if f.lfs:
                e["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": len(lfs_pointer(f.sha256, f.size))}
            entries.append(e)
        if sub and not entries and not dirs:
            return self.error(404, "EntryNotFound", f"{sub} does not exist", head)
        for d in dirs:
            entries.append({"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0, "path": d})
        entries.sort(key=lambda e: e["path"])
        start = int(query.get("cursor", ["0"])[0] or 0)
        page = entries[start:start + self.state.page_size]
        headers = {}
        if start + self.state.page_size < len(entries):
            q = dict((k, v[0]) for k, v in query.items())
            q["cursor"] = str(start + self.state.page_size)
            host = self.headers.get("Host", "127.0.0.1")
            nxt = f"http://{host}{urllib.parse.urlsplit(self.path).path}?{urllib.parse.urlencode(q)}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        self.json(200, page, headers, head)

    # --- /resolve and /storage ---------------------------------------------

    def resolve(self, parts: list[str], head: bool) -> None:
        kind = "models"
        if parts[:1] in (["datasets"], ["spaces"]):
            kind, parts = parts[0], parts[1:]
        if len(parts) < 5 or parts[2] != "resolve":
            return self.error(404, "EntryNotFound", "no such endpoint", head)
        org, name, rev, path = parts[0], parts[1], parts[3], "/".join(parts[4:])
        d = self.repo(kind, org, name, head)
        if d is None:
            return
        found = self.commit(d, rev, head)
        if found is None:
            return
        sha, cdir = found
        full = os.path.join(cdir, *path.split("/"))
        if ".." in path.split("/") or not os.path.isfile(full):
            # With the commit, as the Hub: huggingface_hub caches the absence under it (.no_exist/SHA/PATH).
            return self.error(404, "EntryNotFound", f"{path} does not exist at {sha}", head,
                              {"X-Repo-Commit": sha})
        f = File(path, full, lfs_patterns(cdir))
        common = {"X-Repo-Commit": sha, "Accept-Ranges": "bytes"}
        if f.lfs:
            expires = str(int(time.time()) + 3600)
            with self.state.lock:
                self.state.blobs[f.sha256] = full
            loc = (f"{self.state.storage}/storage/{f.sha256}?expires={expires}"
                   f"&sig={self.state.sign(f.sha256, expires)}")
            h = dict(common, **{"Location": loc, "ETag": f'"{f.oid}"', "X-Linked-Etag": f'"{f.sha256}"',
                                "X-Linked-Size": f.size})
            return self.answer(302, b"", h, head)
        self.serve(f.full, f'"{f.oid}"', f.mtime, common, head)

    def storage(self, parts: list[str], query: dict, head: bool) -> None:
        sha256 = parts[0] if parts else ""
        expires = query.get("expires", [""])[0]
        sig = query.get("sig", [""])[0]
        good = expires.isdigit() and int(expires) > time.time() and hmac.compare_digest(
            sig, self.state.sign(sha256, expires))
        if not good:
            return self.answer(403, b"<Error>AccessDenied: bad signature</Error>",
                               {"Content-Type": "application/xml"}, head)
        with self.state.lock:
            full = self.state.blobs.get(sha256)
        if full is None or not os.path.isfile(full):
            return self.answer(404, b"<Error>NoSuchKey</Error>", {"Content-Type": "application/xml"}, head)
        self.serve(full, f'"{sha256}"', os.stat(full).st_mtime, {"Accept-Ranges": "bytes"}, head)

    def serve(self, full: str, etag: str, mtime: float, headers: dict, head: bool) -> None:
        """The file's bytes: whole, or the range asked; conditions honoured."""
        size = os.stat(full).st_size
        h = dict(headers, **{"ETag": etag, "Last-Modified": email.utils.formatdate(mtime, usegmt=True),
                             "Content-Type": "application/octet-stream"})
        match = self.headers.get("If-Match")
        if match and not any(t.strip() in ("*", etag, etag.strip('"')) for t in match.split(",")):
            return self.answer(412, b"precondition failed", {"ETag": etag}, head)
        none = self.headers.get("If-None-Match")
        if none and any(t.strip() in ("*", etag) for t in none.split(",")):
            return self.answer(304, b"", {"ETag": etag}, head, length=0)
        rng = self.headers.get("Range")
        start, end, status = 0, size, 200
        if rng:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if not m or (m.group(1) == "" and m.group(2) == ""):
                return self.answer(416, b"", dict(h, **{"Content-Range": f"bytes */{size}"}), head)
            a, b = m.group(1), m.group(2)
            if a == "":
                start, end = max(0, size - int(b)), size
            else:
                start, end = int(a), size if b == "" else min(size, int(b) + 1)
            if start >= size or start >= end:
                return self.answer(416, b"", dict(h, **{"Content-Range": f"bytes */{size}"}), head)
            status = 206
            h["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
        if head:
            return self.answer(status, b"", h, True, length=end - start)
        with open(full, "rb") as f:
            f.seek(start)
            body = f.read(end - start)
        self.answer(status, body, h)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repos", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--token")
    p.add_argument("--page-size", type=int, default=1000)
    args = p.parse_args()
    Handler.state = State(args.repos, args.token, args.page_size)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    # The storage: the same handler on another address of the loopback.
    other = "127.0.0.2" if args.host == "127.0.0.1" else args.host
    storage = ThreadingHTTPServer((other, 0), Handler)
    storage.daemon_threads = True
    Handler.state.storage = f"http://{other}:{storage.server_address[1]}"
    threading.Thread(target=storage.serve_forever, daemon=True).start()
    # SIGTERM ends it as ^C does: exit 0, the daemon threads with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening on {host}:{port}", flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass


if __name__ == "__main__":
    main()
