"""The hf:// benchmark (run by scripts/bench-hub.sh, which says what it
measures): a repository made by make_repo.py, served by emulator.py, read
through `ztfs mount hf://...` and by the baselines of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import store  # noqa: E402

WEIGHTS = ("*.safetensors", "*.safetensors.index.json")


class Emulator:
    def __init__(self, repos: str, delay_ms: int = 0):
        self.delay_ms = delay_ms
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "emulator.py"), "--repos", repos],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise SystemExit(f"the emulator did not start: {line!r}")
        self.url = "http://" + line.removeprefix("listening on ")

    def reset(self) -> None:
        """Counts cleared; every answer delayed by --delay-ms (a link's first-byte time)."""
        urllib.request.urlopen(urllib.request.Request(self.url + "/_emulator/reset", data=b"{}")).read()
        if self.delay_ms:
            body = json.dumps({"delay_ms": self.delay_ms}).encode()
            urllib.request.urlopen(urllib.request.Request(self.url + "/_emulator/fail", data=body)).read()

    def requests(self) -> dict:
        """Counts by kind (the split by method and the most at once left out, so they add up)."""
        with urllib.request.urlopen(self.url + "/_emulator/requests") as r:
            return {k: v for k, v in json.load(r).items() if k not in ("by_method", "max_in_flight")}

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def read_whole(path: str) -> int:
    n = 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(4 << 20):
            n += len(chunk)
    return n


def mount(ztfs: str, source: str, mnt: str, env: dict) -> None:
    subprocess.run([ztfs, "mount", source, mnt], check=True, env=env, capture_output=True)


def unmount(ztfs: str, mnt: str) -> None:
    subprocess.run([ztfs, "unmount", mnt], check=True, capture_output=True)


def download(emu: Emulator, home: str, patterns: dict) -> tuple[float, int]:
    """snapshot_download into a fresh HF_HOME: seconds and requests."""
    code = ("import sys, json\nfrom huggingface_hub import snapshot_download\n"
            "snapshot_download('org/bench', **json.loads(sys.argv[1]))")
    env = dict(os.environ, HF_ENDPOINT=emu.url, HF_HOME=home, HF_HUB_DISABLE_PROGRESS_BARS="1",
               HF_HUB_DISABLE_XET="1")
    emu.reset()
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", code, json.dumps(patterns)], check=True, env=env)
    return time.monotonic() - t0, sum(emu.requests().values())


def one_run(ztfs: str, emu: Emulator, sha: str, work: str, i: int) -> dict:
    env = dict(os.environ, HF_ENDPOINT=emu.url, HF_HOME=os.path.join(work, f"home-{i}"))
    env.pop("HF_TOKEN", None)
    mnt = os.path.join(work, f"mnt-{i}")
    os.makedirs(mnt)
    out = {}
    emu.reset()
    t0 = time.monotonic()
    mount(ztfs, "hf://org/bench", mnt, env)
    names = os.listdir(mnt)
    out["ls_s"] = time.monotonic() - t0
    out["ls_requests"] = sum(emu.requests().values())
    others = [n for n in names if os.path.isfile(os.path.join(mnt, n)) and n not in
              ("model.safetensors", "manifest.json", "digest")]
    for n in others:
        read_whole(os.path.join(mnt, n))
    out["files_s"] = time.monotonic() - t0
    out["files_requests"] = sum(emu.requests().values())
    t1 = time.monotonic()
    out["bytes"] = read_whole(os.path.join(mnt, "model.safetensors"))
    out["read_s"] = time.monotonic() - t1
    unmount(ztfs, mnt)
    # The https:// path hf:// builds on: the index by URL.
    index = f"{emu.url}/org/bench/resolve/{sha}/model.safetensors.index.json"
    mount(ztfs, index, mnt, env)
    t2 = time.monotonic()
    read_whole(os.path.join(mnt, "model.safetensors"))
    out["https_read_s"] = time.monotonic() - t2
    unmount(ztfs, mnt)
    out["dl_files_s"], out["dl_files_requests"] = download(
        emu, os.path.join(work, f"dl-files-{i}"), {"ignore_patterns": list(WEIGHTS)})
    out["dl_weights_s"], _ = download(emu, os.path.join(work, f"dl-weights-{i}"),
                                      {"allow_patterns": list(WEIGHTS)})
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ztfs", required=True)
    p.add_argument("--tensors", type=int, default=300)
    p.add_argument("--shards", type=int, default=3)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--delay-ms", type=int, default=0, help="delay every answer (first-byte latency)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="ztfs-bench-hub-") as work:
        src = os.path.join(work, "src")
        subprocess.run([sys.executable, os.path.join(HERE, "make_repo.py"), src, "--tensors",
                        str(args.tensors), "--shards", str(args.shards)], check=True, capture_output=True)
        repos = os.path.join(work, "repos")
        sha = store.add_commit(repos, "models", "org/bench", src)
        emu = Emulator(repos, args.delay_ms)
        try:
            runs = [one_run(args.ztfs, emu, sha, work, i) for i in range(args.reps)]
        finally:
            emu.stop()
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    mib = med["bytes"] / (1 << 20)
    print(f"hf:// benchmark: {args.tensors} tensors in {args.shards} shards ({mib:.1f} MiB), "
          f"every answer delayed {args.delay_ms} ms, medians of {args.reps} runs\n")
    print("| measure | ztfs mount hf:// | baseline (same run) | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| mount to first `ls` | {med['ls_s']*1000:.0f} ms, {med['ls_requests']:.0f} requests | "
          f"snapshot_download of the non-weight files: {med['dl_files_s']*1000:.0f} ms, "
          f"{med['dl_files_requests']:.0f} requests | {med['ls_s']/med['dl_files_s']:.2f} |")
    print(f"| mount, `ls` and every non-weight file read | {med['files_s']*1000:.0f} ms, "
          f"{med['files_requests']:.0f} requests | the same download | "
          f"{med['files_s']/med['dl_files_s']:.2f} |")
    print(f"| model.safetensors read whole | {mib/med['read_s']:.0f} MiB/s | https:// mount of the "
          f"index URL: {mib/med['https_read_s']:.0f} MiB/s | {med['https_read_s']/med['read_s']:.2f} |")
    print(f"| model.safetensors read whole | {mib/med['read_s']:.0f} MiB/s | snapshot_download of the "
          f"weights: {mib/med['dl_weights_s']:.0f} MiB/s | {med['dl_weights_s']/med['read_s']:.2f} |")
    print("\nratio: time of the baseline over time of ztfs for reads (above 1: ztfs faster); "
          "time of ztfs over the baseline's for the first two rows (below 1: ztfs faster).")


if __name__ == "__main__":
    main()
