"""The Hub emulator checked with the real tools:

    python scripts/hub/check_emulator.py

makes a repository with make_repo.py, stores it with store.py (models
org/tiny at main and tag v1; the same files as the private org/secret and
the gated org/gated), starts emulator.py on a free port with a token and
tree pages of 5 entries, and checks that huggingface_hub (snapshot_download,
hf_hub_download, repo_info, list_repo_tree) and transformers (AutoConfig,
AutoTokenizer) get from it what the source folder holds, that its errors
are the ones huggingface_hub names, and raw HTTP: ranges through the LFS
302, conditions, signatures, faults, counts, keep-alive, SIGTERM. Prints a
line per check and `N passed, N failed`; exit 0 when all pass. Run it with
the venv's Python (scripts/venv.sh).
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "hf_check_emulator_secret"
SENTENCES = ["The quick brown fox jumps over the lazy dog.",
             "tensor shard index: a mount reads ranges",
             "Ünïcödé and digits 0123456789?"]
SHARD = "model-00002-of-00003.safetensors"

results: list[tuple[str, str | None]] = []


def check(name: str):
    """Runs the decorated function now: a pass, or a failure with its cause."""
    def run(fn):
        try:
            fn()
            results.append((name, None))
            print(f"ok   {name}", flush=True)
        except Exception as e:
            results.append((name, f"{type(e).__name__}: {e}"))
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(file=sys.stderr)
        return fn
    return run


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def files(folder: str) -> dict[str, bytes]:
    """Every file under a folder (symlinks followed, as a snapshot's are)."""
    out = {}
    for top, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(top, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, folder).replace(os.sep, "/")] = f.read()
    return out


def same_files(got: str, want: dict[str, bytes]) -> None:
    g = files(got)
    expect(sorted(g) == sorted(want), f"files {sorted(set(g) ^ set(want))} in one only")
    bad = [p for p in want if g[p] != want[p]]
    expect(not bad, f"{bad} differ from the source")


def raises(cls, fn, but_not=None) -> Exception:
    try:
        fn()
    except cls as e:
        expect(but_not is None or not isinstance(e, but_not), f"raised {type(e).__name__}")
        return e
    raise AssertionError(f"no {cls.__name__}")


class Emulator:
    def __init__(self, repos: str):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "emulator.py"), "--repos", repos, "--port", "0",
             "--token", TOKEN, "--page-size", "5"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise SystemExit(f"the emulator did not start: {line!r} {self.proc.stderr.read()}")
        self.addr = line.removeprefix("listening on ")
        self.url = "http://" + self.addr

    def post(self, path: str, body: dict) -> None:
        urllib.request.urlopen(urllib.request.Request(self.url + path, data=json.dumps(body).encode())).read()

    def counts(self) -> dict:
        with urllib.request.urlopen(self.url + "/_emulator/requests") as r:
            return json.load(r)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def raw(url: str, headers: dict | None = None, method: str = "GET", follow: bool = True):
    """(status, headers, body) of one request; HTTP errors are answers too."""
    opener = urllib.request.build_opener(*([] if follow else [NoRedirect()]))
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with opener.open(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def main() -> int:
    started = time.monotonic()
    tmp = tempfile.TemporaryDirectory(prefix="check-emulator-")
    t = tmp.name
    src, repos = os.path.join(t, "src"), os.path.join(t, "repos")
    py = sys.executable
    subprocess.run([py, os.path.join(HERE, "make_repo.py"), src], check=True, stderr=subprocess.DEVNULL)
    want = files(src)

    def add(kind: str, repo: str, folder: str, *refs: str) -> str:
        args = [a for r in refs for a in ("--ref", r)]
        out = subprocess.run([py, os.path.join(HERE, "store.py"), "add", repos, kind, repo, folder, *args],
                             check=True, capture_output=True, text=True)
        return out.stdout.strip()

    sha = add("models", "org/tiny", src, "main", "v1")
    add("models", "org/secret", src)
    add("models", "org/gated", src)
    add("datasets", "org/data", src, "main", "release/2024")
    open(os.path.join(repos, "models", "org", "secret", "private"), "w").close()
    open(os.path.join(repos, "models", "org", "gated", "gated"), "w").close()

    emu = Emulator(repos)
    # Read at import by huggingface_hub and transformers: set them first.
    os.environ.update(HF_ENDPOINT=emu.url, HF_HOME=os.path.join(t, "home"), HF_HUB_DISABLE_XET="1",
                      HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_TELEMETRY="1",
                      TRANSFORMERS_VERBOSITY="error")
    os.environ.pop("HF_TOKEN", None)
    os.environ.pop("HF_HUB_OFFLINE", None)
    import huggingface_hub as hub
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
    from transformers import AutoConfig, AutoTokenizer

    snaps = {}
    try:
        for rev in ("main", "v1", sha):
            @check(f"snapshot_download revision={rev[:12]} equals the source byte for byte")
            def _():
                path = hub.snapshot_download("org/tiny", revision=rev)
                expect(os.path.basename(path) == sha, f"snapshot {path} is not commit {sha}")
                same_files(path, want)
                snaps[rev] = path

        @check("snapshot_download with endpoint= alone (no HF_ENDPOINT) equals the source")
        def _():
            code = ("import sys\nfrom huggingface_hub import snapshot_download\n"
                    "print(snapshot_download('org/tiny', revision='v1', endpoint=sys.argv[1]))")
            env = {k: v for k, v in os.environ.items() if k != "HF_ENDPOINT"}
            env["HF_HOME"] = os.path.join(t, "home-endpoint")
            out = subprocess.run([py, "-c", code, emu.url], env=env, capture_output=True, text=True, timeout=60)
            expect(out.returncode == 0, out.stderr[-2000:])
            same_files(out.stdout.strip(), want)

        @check(f"hf_hub_download of {SHARD} (LFS: HEAD 302, GET storage) equals the source")
        def _():
            emu.post("/_emulator/reset", {})
            path = hub.hf_hub_download("org/tiny", SHARD, endpoint=emu.url, cache_dir=os.path.join(t, "c1"))
            with open(path, "rb") as f:
                expect(f.read() == want[SHARD], "the shard differs")
            by = emu.counts()["by_method"]
            expect(by.get("HEAD", {}).get("resolve") == 1 and by.get("GET", {}).get("storage") == 1,
                   f"requests {by}")

        @check("repo_info: sha, siblings, files_metadata; list_repo_tree paged, oids and lfs")
        def _():
            api = hub.HfApi(endpoint=emu.url)
            info = api.repo_info("org/tiny", revision="v1", files_metadata=True)
            expect(info.sha == sha and info.id == "org/tiny" and not info.private, f"{info.sha} {info.id}")
            sib = {s.rfilename: s for s in info.siblings}
            expect(sorted(sib) == sorted(want), f"siblings {sorted(sib)}")
            expect(sib[SHARD].lfs is not None and sib[SHARD].size == len(want[SHARD]), f"{sib[SHARD]}")
            expect(sib["config.json"].lfs is None, "config.json listed as LFS")
            emu.post("/_emulator/reset", {})
            tree = list(api.list_repo_tree("org/tiny", recursive=True))
            expect(emu.counts()["api-tree"] == -(-len(want) // 5), f"not paged: {emu.counts()}")
            got = {e.path: e for e in tree}
            expect(sorted(got) == sorted(want), f"tree {sorted(got)}")
            import hashlib
            for p, data in want.items():
                e = got[p]
                expect(e.size == len(data), f"{p}: size {e.size}")
                if p.endswith(".safetensors"):
                    expect(e.lfs is not None and e.lfs.sha256 == hashlib.sha256(data).hexdigest(), f"{p}: lfs")
                else:
                    git = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
                    expect(e.lfs is None and e.blob_id == git, f"{p}: oid {e.blob_id} vs {git}")
            ds = api.repo_info("org/data", repo_type="dataset", revision="release/2024")
            expect(ds.sha is not None and len(ds.siblings) == len(want), "dataset repo_info")

        @check("a private repository: RepositoryNotFoundError without token, the files with it")
        def _():
            raises(RepositoryNotFoundError, lambda: hub.snapshot_download("org/secret"), but_not=GatedRepoError)
            raises(RepositoryNotFoundError, lambda: hub.hf_hub_download("org/secret", "config.json"),
                   but_not=GatedRepoError)
            raises(RepositoryNotFoundError, lambda: hub.snapshot_download("org/nobody"), but_not=GatedRepoError)
            same_files(hub.snapshot_download("org/secret", token=TOKEN), want)

        @check("a gated repository: GatedRepoError without token, the files with it")
        def _():
            raises(GatedRepoError, lambda: hub.snapshot_download("org/gated"))
            raises(GatedRepoError, lambda: hub.hf_hub_download("org/gated", "config.json"))
            same_files(hub.snapshot_download("org/gated", token=TOKEN), want)

        @check("an unknown revision: RevisionNotFoundError")
        def _():
            raises(RevisionNotFoundError, lambda: hub.snapshot_download("org/tiny", revision="nope"))
            raises(RevisionNotFoundError, lambda: hub.hf_hub_download("org/tiny", "config.json", revision="nope"))
            raises(RevisionNotFoundError, lambda: hub.snapshot_download("org/tiny", revision="0" * 40))

        @check("an unknown file: EntryNotFoundError, its absence cached under the commit")
        def _():
            from huggingface_hub.errors import RemoteEntryNotFoundError
            cache = os.path.join(t, "c4")
            raises(RemoteEntryNotFoundError, lambda: hub.hf_hub_download("org/tiny", "no.txt", cache_dir=cache))
            marker = os.path.join(cache, "models--org--tiny", ".no_exist", sha, "no.txt")
            expect(os.path.exists(marker), f"no {marker}")

        @check("AutoConfig and AutoTokenizer of the snapshot (and by repo id) equal the source's")
        def _():
            def cfg(x, **kw):
                return {k: v for k, v in AutoConfig.from_pretrained(x, **kw).to_dict().items()
                        if k != "_name_or_path"}

            want_cfg, want_tok = cfg(src), AutoTokenizer.from_pretrained(src)
            by_id = os.path.join(t, "c2")
            for x, kw in ((snaps["main"], {}), ("org/tiny", {"revision": "v1", "cache_dir": by_id})):
                expect(cfg(x, **kw) == want_cfg, f"config of {x} differs")
                tok = AutoTokenizer.from_pretrained(x, **kw)
                for s in SENTENCES:
                    a, b = tok(s)["input_ids"], want_tok(s)["input_ids"]
                    expect(a == b, f"{x} encodes {s!r} as {a}, the source as {b}")
                expect(tok.get_vocab() == want_tok.get_vocab(), f"vocabularies of {x} differ")

        @check("raw ranges: the LFS 302's headers, the storage blob by range, a plain file by range")
        def _():
            import hashlib
            url = f"{emu.url}/org/tiny/resolve/v1/{SHARD}"
            data = want[SHARD]
            st, h, _ = raw(url, method="HEAD", follow=False)
            expect(st == 302 and h["X-Repo-Commit"] == sha and h["Content-Length"] == "0", f"HEAD {st} {h}")
            expect(h["X-Linked-Etag"] == f'"{hashlib.sha256(data).hexdigest()}"', "X-Linked-Etag")
            expect(h["X-Linked-Size"] == str(len(data)), "X-Linked-Size")
            loc = h["Location"]
            st, h, body = raw(url, {"Range": "bytes=100-1099"})  # urllib follows the 302, Range kept
            expect(st == 206 and body == data[100:1100], f"followed range: {st}, {len(body)} bytes")
            expect(h["Content-Range"] == f"bytes 100-1099/{len(data)}", h["Content-Range"])
            for rng, part in (("bytes=-64", data[-64:]), (f"bytes={len(data) - 10}-", data[-10:])):
                st, _, body = raw(loc, {"Range": rng})
                expect(st == 206 and body == part, f"{rng}: {st}")
            st, _, _ = raw(loc, {"Range": f"bytes={len(data)}-"})
            expect(st == 416, f"unsatisfiable range: {st}")
            etag = f'"{hashlib.sha256(data).hexdigest()}"'
            expect(raw(loc, {"If-Match": etag, "Range": "bytes=0-7"})[0] == 206, "If-Match of its etag")
            expect(raw(loc, {"If-Match": '"other"'})[0] == 412, "If-Match of another etag")
            expect(raw(loc, {"If-None-Match": etag})[0] == 304, "If-None-Match")
            expect(raw(loc.replace("sig=", "sig=0"))[0] == 403, "a bad signature")
            expect(raw(loc.split("?")[0])[0] == 403, "no signature")
            cfg = want["config.json"]
            st, h, body = raw(f"{emu.url}/org/tiny/resolve/{sha}/config.json", {"Range": "bytes=5-24"})
            expect(st == 206 and body == cfg[5:25] and h["X-Repo-Commit"] == sha, f"config range {st}")
            git = hashlib.sha1(b"blob %d\0" % len(cfg) + cfg).hexdigest()
            expect(h["ETag"] == f'"{git}"' and h["Accept-Ranges"] == "bytes" and h["Last-Modified"], "headers")

        @check("keep-alive: three answers on one connection, every one with its Content-Length")
        def _():
            c = http.client.HTTPConnection(emu.addr, timeout=10)
            for method, path in (("HEAD", "/org/tiny/resolve/main/config.json"), ("GET", "/api/models/org/tiny"),
                                 ("GET", "/api/models/org/none")):
                c.request(method, path)
                r = c.getresponse()
                body = r.read()
                expect(r.getheader("Content-Length") is not None, f"{method} {path}: no Content-Length")
                expect(method == "HEAD" or len(body) == int(r.getheader("Content-Length")), f"{path} length")
            c.close()

        @check("fault knobs (503 once, 429 with Retry-After, delay) and request counts")
        def _():
            emu.post("/_emulator/reset", {})
            emu.post("/_emulator/fail", {"prefix": "/api/", "status": 503, "count": 1})
            api = f"{emu.url}/api/models/org/tiny"
            expect(raw(api)[0] == 503 and raw(api)[0] == 200, "503 then 200")
            emu.post("/_emulator/fail", {"prefix": "/org/", "status": 429, "count": 1, "retry_after": 1})
            st, h, _ = raw(f"{emu.url}/org/tiny/resolve/main/README.md")
            expect(st == 429 and h["Retry-After"] == "1", f"{st} {h.get('Retry-After')}")
            emu.post("/_emulator/fail", {"delay_ms": 300})
            t0 = time.monotonic()
            raw(api)
            expect(time.monotonic() - t0 >= 0.3, "no delay")
            emu.post("/_emulator/fail", {"delay_ms": 0})
            c = emu.counts()
            expect(c["api-revision"] == 3 and c["resolve"] == 1 and c["by_method"]["GET"]["api-revision"] == 3, f"{c}")

        @check("a ref moved by a new commit: main follows, the tag v1 stays")
        def _():
            newer = os.path.join(t, "newer")
            os.makedirs(newer)
            for p, data in want.items():
                os.makedirs(os.path.dirname(os.path.join(newer, p)), exist_ok=True)
                with open(os.path.join(newer, p), "wb") as f:
                    f.write(b"changed\n" if p == "README.md" else data)
            new = add("models", "org/tiny", newer, "main")
            api = hub.HfApi()
            expect(new != sha and api.repo_info("org/tiny").sha == new, "main did not move")
            expect(api.repo_info("org/tiny", revision="v1").sha == sha, "v1 moved")
            path = hub.hf_hub_download("org/tiny", "README.md", cache_dir=os.path.join(t, "c3"))
            with open(path, "rb") as f:
                expect(f.read() == b"changed\n", "main's README.md is not the new one")
    finally:
        emu.proc.terminate()
        try:
            # Generous: on a loaded machine (a CI run beside other builds)
            # 10 s once ran out, and the kill made this check fail.
            rc = emu.proc.wait(60)
        except subprocess.TimeoutExpired:
            emu.proc.kill()
            rc = emu.proc.wait()
        err = emu.proc.stderr.read()

    @check("SIGTERM: the emulator exits 0, having written nothing to stderr (so not the token)")
    def _():
        expect(rc == 0, f"exit status {rc}")
        expect(TOKEN not in err, "the token is in its stderr")
        expect(not err.strip(), f"its stderr: {err[-2000:]}")

    failed = [n for n, e in results if e]
    print(f"check_emulator: {len(results) - len(failed)} passed, {len(failed)} failed "
          f"({time.monotonic() - started:.1f} s)")
    tmp.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
