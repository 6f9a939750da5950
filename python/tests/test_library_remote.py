"""`ztfs.open` by URL: a model on nginx (ranges, ETags) and a repository
on the Hub emulator (`hf://`), read in-process, equal to the local file;
a slice reads by range, not the whole tensor."""

import shutil
import time

import numpy as np

import ztfs
from conftest import CORPUS

SAMPLE = CORPUS / "samples" / "tiny-llama.zt"


def test_a_model_on_an_http_server_is_the_local_file(nginx, tmp_path):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(6)
    big = rng.standard_normal((4096, 256)).astype(np.float32)  # 4 MiB
    save_file({"big": big, "b": np.arange(5, dtype=np.int64)}, nginx.root / "m.safetensors")
    shutil.copy(SAMPLE, nginx.root / "s.zt")
    with ztfs.open(nginx.url("s.zt")) as remote, ztfs.open(SAMPLE) as local:
        assert remote.keys() == local.keys()
        for k in local.keys():
            a = remote.get_tensor(k)
            assert a.flags.writeable  # fetched into its own array
            assert a.tobytes() == local.get_tensor(k).tobytes()
        assert remote.manifest() == local.manifest()
    with ztfs.open(nginx.url("m.safetensors"), cache_mib=8) as m:
        assert np.array_equal(m.get_tensor("big"), big)
        assert np.array_equal(m.get_slice("big")[4000:4010], big[4000:4010])
        assert np.array_equal(m.get_slice("big")[::-512], big[::-512])


def test_a_hub_repository_by_hf_url(hub, tmp_path):
    from safetensors.numpy import save_file

    folder = tmp_path / "repo"
    folder.mkdir()
    w = np.arange(24, dtype=np.float32).reshape(4, 6)
    save_file({"w": w}, folder / "model.safetensors", metadata={"format": "pt"})
    (folder / "config.json").write_text('{"model_type": "test"}')
    hub.add("org/tiny", folder)
    with ztfs.open("hf://org/tiny") as m:
        assert m.keys() == ["w"]
        assert np.array_equal(m.get_tensor("w"), w)
        assert np.array_equal(m.get_slice("w")[2:], w[2:])
        assert m.metadata() == {"format": "pt"}
        assert "config.json" in m.files()
        assert m.read_file("config.json") == b'{"model_type": "test"}'


def test_a_slice_by_url_fetches_its_rows_and_nothing_ahead(nginx):
    from safetensors.numpy import save_file

    rows = np.arange(8192 * 1024, dtype=np.float32).reshape(8192, 1024)  # 32 MiB, 4 KiB rows
    save_file({"rows": rows}, nginx.root / "r.safetensors")
    mib = 1 << 20
    with ztfs.open(nginx.url("r.safetensors")) as m:
        s = m.get_slice("rows")
        for key in (slice(0, 4), slice(4000, 4004), slice(8188, None)):
            before = nginx.bytes_sent()
            assert np.array_equal(s[key], rows[key])
            time.sleep(0.3)  # a fetch ahead, had one started, would show by now
            sent = nginx.bytes_sent() - before
            # At most the two 1 MiB blocks the rows may straddle.
            assert sent <= 2 * mib, (key, sent)
        # A whole tensor is read with the read-ahead a loader wants.
        before = nginx.bytes_sent()
        assert np.array_equal(m.get_tensor("rows"), rows)
        assert nginx.bytes_sent() - before >= 30 * mib


def test_a_read_waiting_on_the_server_lets_other_threads_run(hub, tmp_path):
    import threading

    from safetensors.numpy import save_file

    folder = tmp_path / "repo"
    folder.mkdir()
    w = np.arange(1 << 22, dtype=np.float32)  # 16 MiB: past what the open reads
    save_file({"w": w}, folder / "model.safetensors")
    hub.add("org/slow", folder)
    with ztfs.open("hf://org/slow") as m:
        hub.delay(400)
        done = threading.Event()
        got = []
        t = threading.Thread(target=lambda: (got.append(m.get_tensor("w")), done.set()))
        t.start()
        # While the reader waits on the server, this thread runs: the read
        # holds no GIL (were it held, no iteration would happen until it
        # returned, and `done` would be set at the first check).
        spins = 0
        while not done.is_set():
            spins += 1
            time.sleep(0.001)
        t.join()
        hub.delay(0)
    assert np.array_equal(got[0], w)
    assert spins >= 50, spins


def test_a_shared_cache_that_is_down_leaves_reads_right(nginx, tmp_path):
    """`shared_cache=` reaches the tier (here nothing listens at its
    endpoint): the read comes from the origin, and the log says once that
    the tier is unavailable. In a child process: the tier is the process's."""
    import os
    import subprocess
    import sys

    from safetensors.numpy import save_file

    big = np.arange(1 << 20, dtype=np.float32)  # 4 MiB: blocks past the open's tail
    save_file({"big": big}, nginx.root / "m.safetensors")
    code = f"""
import numpy as np, ztfs
with ztfs.open({nginx.url("m.safetensors")!r}, shared_cache="s3://tier/p") as m:
    assert np.array_equal(m.get_tensor("big"), np.arange(1 << 20, dtype=np.float32))
print("same")
"""
    env = dict(os.environ, ZTFS_SHARED_CACHE_ENDPOINT="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="k",
               AWS_SECRET_ACCESS_KEY="s", AWS_REGION="us-east-1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "same", out.stderr
    assert out.stderr.count("shared cache is unavailable") == 1, out.stderr
