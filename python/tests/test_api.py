"""The Python package, as installed from the wheel: run by scripts/test-python.sh
in a fresh venv that holds the wheel, numpy and pytest. Mounts need root or
fusermount3 and /dev/fuse, as the Rust mount tests do."""

import gzip
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import ztfs

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "corpus" / "samples" / "tiny-llama.zt"
HURRAY = REPO / "corpus" / "samples" / "tiny-llama.hrry"


def expected_rejections():
    """(file, rule) for each zTensor file the corpus table says is rejected
    on open."""
    rows = (REPO / "corpus" / "expected.tsv").read_text().splitlines()[1:]
    out = []
    for row in rows:
        name, folder, opened, _ = row.split("\t")
        if folder == "reject" and opened.startswith("reject:"):
            out.append((REPO / "corpus" / folder / f"{name}.zt", opened.split(":", 1)[1]))
    return out


def is_mounted(path):
    return os.path.ismount(path)


def part_bytes(name):
    """A raw part's bytes read straight from the sample, where `ls` says
    they are."""
    obj = next(o for o in ztfs.ls(SAMPLE) if o["name"] == name)
    part = obj["parts"][0]
    assert part["encoding"] is None
    with open(SAMPLE, "rb") as f:
        f.seek(part["offset"])
        return obj, f.read(part["stored_length"])


def test_the_installed_package_runs_the_wheels_program():
    # The package and the program come from the venv the wheel went into,
    # not from the source tree.
    assert "ZTFS_BIN" not in os.environ
    assert Path(ztfs.__file__).resolve().is_relative_to(Path(sysconfig.get_path("purelib")).resolve())
    assert Path(ztfs.binary()).parent.resolve() == Path(sysconfig.get_path("scripts")).resolve()
    out = subprocess.run([sys.executable, "-m", "ztfs", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.split()[:2] == ["ztfs", ztfs.__version__]


def test_mount_yields_a_path_np_load_reads_it_and_exit_unmounts():
    obj, raw = part_bytes("model.norm.weight")
    with ztfs.mount(SAMPLE) as mnt:
        assert isinstance(mnt, Path) and is_mounted(mnt)
        a = np.load(mnt / "model.norm.weight" / "data.npy")
        assert a.shape == tuple(obj["shape"]) and a.dtype == np.float32
        assert a.tobytes() == raw
        assert any(m.mountpoint == mnt and m.state == "ok" for m in ztfs.mounts())
    assert not is_mounted(mnt)
    assert not mnt.exists(), "the temporary mount point is removed"
    assert all(m.mountpoint != mnt for m in ztfs.mounts())


def test_a_plain_call_with_a_mount_point_and_options(tmp_path):
    m = ztfs.mount(HURRAY, tmp_path, passthrough="off", file_mode="0400", verify=True)
    try:
        assert m.mounted and is_mounted(tmp_path)
        info = next(i for i in ztfs.mounts() if i.mountpoint == tmp_path)
        assert info.pid and info.source.endswith("tiny-llama.hrry")
        assert "--verify" in info.options or "verify" in " ".join(info.options)
        data = tmp_path / "token_embd.weight" / "data"
        assert data.stat().st_mode & 0o777 == 0o400
    finally:
        m.unmount()
    assert not is_mounted(tmp_path) and tmp_path.is_dir(), "a given mount point stays"
    m.unmount()  # once only: a second call does nothing


def test_an_exception_in_the_block_unmounts_and_propagates():
    with pytest.raises(ZeroDivisionError):
        with ztfs.mount(SAMPLE) as mnt:
            1 / 0
    assert not is_mounted(mnt) and not mnt.exists()


def child(code, tmp_path):
    """A Python process running `code` (with ztfs imported), started in its
    own process group so that a signal reaches it alone."""
    script = tmp_path / "child.py"
    script.write_text("import sys, time, ztfs\n" + textwrap.dedent(code))
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)


def wait_gone(path, seconds=10):
    end = time.monotonic() + seconds
    while is_mounted(path) and time.monotonic() < end:
        time.sleep(0.05)
    return not is_mounted(path)


def test_ctrl_c_in_the_block_unmounts(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    # Ctrl-C is KeyboardInterrupt even where the child was started with
    # SIGINT ignored (a background job of a shell without job control,
    # as a CI runner may start the suite), which Python would keep.
    p = child(f"""
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with ztfs.mount({str(SAMPLE)!r}, {str(mnt)!r}):
            print("mounted", flush=True)
            time.sleep(600)
    """, tmp_path)
    assert p.stdout.readline().strip() == "mounted"
    assert is_mounted(mnt)
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        # Once seen in a loaded CI run (20 s then): say what was going on.
        p.kill()
        status = subprocess.run([ztfs._run.binary(), "status", "--json"], capture_output=True,
                                text=True).stdout
        procs = subprocess.run(["ps", "-ef", "--forest"], capture_output=True, text=True).stdout
        subprocess.run([ztfs._run.binary(), "unmount", str(mnt)], capture_output=True)
        raise AssertionError(f"no exit 60 s after SIGINT; mounted: {is_mounted(mnt)}; "
                             f"status: {status}; ps:\n{procs}")
    assert p.returncode != 0, "KeyboardInterrupt ends it"
    assert wait_gone(mnt)


def test_a_mount_left_mounted_goes_at_interpreter_exit(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    p = child(f"""
        m = ztfs.mount({str(SAMPLE)!r}, {str(mnt)!r})
        print(m.mounted, flush=True)
    """, tmp_path)
    assert p.stdout.readline().strip() == "True"
    p.wait(timeout=20)
    assert p.returncode == 0 and wait_gone(mnt)


@pytest.mark.parametrize("path,rule", expected_rejections()[:6], ids=lambda v: str(v).rsplit("/", 1)[-1])
def test_a_rejected_file_raises_rejected_with_its_rule(path, rule, tmp_path):
    with pytest.raises(ztfs.Rejected) as e:
        ztfs.mount(path, tmp_path)
    assert e.value.rule == rule and e.value.exit_code == 1
    assert rule in str(e.value) and e.value.file == str(path)
    assert not is_mounted(tmp_path)
    with pytest.raises(ztfs.Rejected) as e:
        ztfs.ls(path)
    assert e.value.rule == rule
    r = ztfs.check(path)
    assert (r.valid, r.rule, bool(r)) == (False, rule, False) and rule in r.message


def test_a_failed_mount_leaves_no_temporary_mount_point(tmp_path, monkeypatch):
    # Temporary folders made in a folder of this test's own.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path, rule = expected_rejections()[0]
    with pytest.raises(ztfs.Rejected):
        ztfs.mount(path)
    assert list(tmp_path.iterdir()) == []


def test_check_of_a_valid_file_and_with_verify():
    for verify in (False, True):
        r = ztfs.check(SAMPLE, verify=verify)
        assert r.valid and r.rule is None and "valid" in r.message


def test_a_foreign_file_is_refused_by_what_it_is(tmp_path):
    f = tmp_path / "model.zt"
    f.write_bytes(gzip.compress(b"not a model" * 100))
    with pytest.raises(ztfs.Refused) as e:
        ztfs.mount(f, tmp_path)
    assert e.value.kind == "foreign" and "gzip" in e.value.message and e.value.rule is None
    assert isinstance(e.value, ztfs.Error) and not isinstance(e.value, ztfs.Rejected)
    assert ztfs.check(f) == ztfs.CheckResult(False, None, e.value.message)


def test_a_failed_network_is_an_io_error_not_a_refusal(monkeypatch):
    # A socket bound and not listening: its port refuses connections.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed.getsockname()[1]}")
        monkeypatch.setenv("HF_TOKEN", "")
        with pytest.raises(ztfs.Error) as e:
            ztfs.check("hf://org/name")
    assert not isinstance(e.value, ztfs.Refused)
    assert e.value.kind == "io" and e.value.exit_code == 2
    assert "connection refused" in e.value.message


def test_other_failures_raise_error(tmp_path):
    with pytest.raises(ztfs.Error) as e:
        ztfs.check(tmp_path / "missing.zt")
    assert e.value.kind == "io" and e.value.exit_code == 2 and "missing.zt" in e.value.message
    with pytest.raises(ztfs.Error) as e:
        ztfs.mount(SAMPLE, tmp_path, no_such_flag=True)
    assert e.value.kind == "usage" and "--no-such-flag" in e.value.message
    with pytest.raises(ztfs.Error) as e:
        ztfs.unmount(tmp_path)
    assert "not a mount point" in e.value.message
    with pytest.raises(ztfs.Error) as e:
        ztfs.mount(SAMPLE, tmp_path, foreground=True)
    assert e.value.kind == "usage" and not is_mounted(tmp_path)


def test_pack_writes_a_canonical_file_with_the_same_tensors(tmp_path):
    out = ztfs.pack(HURRAY, tmp_path / "out.zt")
    assert out == tmp_path / "out.zt" and ztfs.check(out, verify=True).valid
    names = lambda m: sorted(o["name"] for o in ztfs.ls(m))  # noqa: E731
    assert names(out) == names(HURRAY)
    z = ztfs.pack(SAMPLE, tmp_path / "z.zt", zstd=19, digest="sha256")
    assert all(p["digest"].startswith("sha256:") for o in ztfs.ls(z) for p in o["parts"])
    folder = ztfs.pack(SAMPLE, to_folder=tmp_path / "hf")
    assert (folder / "model.safetensors").is_file()
    with pytest.raises(ztfs.Error):
        ztfs.pack(SAMPLE)


def test_options_become_flags():
    from ztfs._run import flags
    got = flags({"uid": 1000, "shard": {"a": Path("/x"), "b": 3}, "tag": [1, Path("/p")],
                 "verify": True, "quiet": False, "cache_dir": None})
    assert got == ["--uid=1000", "--shard=a=/x", "--shard=b=3", "--tag=1", "--tag=/p", "--verify"]


def test_paths_that_look_like_flags_stay_paths(tmp_path, monkeypatch):
    # A model named -model.zt, an output named like -o/PATH: paths, in
    # every function, never flags.
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "-model.zt"
    model.write_bytes(SAMPLE.read_bytes())
    assert ztfs.check("-model.zt").valid
    assert [o["name"] for o in ztfs.ls("-model.zt")] == [o["name"] for o in ztfs.ls(SAMPLE)]
    (tmp_path / "-o").mkdir()
    out = ztfs.pack(["-model.zt"], "-o/x.zt")
    assert out == Path("-o/x.zt") and ztfs.check(out).valid
    mnt = tmp_path / "-mnt"
    mnt.mkdir()
    with ztfs.mount("-model.zt", "-mnt") as m:
        assert (Path(m) / "manifest.json").is_file()
    assert not is_mounted(mnt)
    # A cache folder named like a flag is the flag's value.
    assert ztfs.check(SAMPLE, cache_dir="-cache").valid


def test_a_mount_refused_on_its_arguments_leaves_no_temporary_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(TypeError):
        ztfs.mount(12345)
    with pytest.raises(ztfs.Error):
        ztfs.mount(SAMPLE, foreground=True)
    assert list(tmp_path.iterdir()) == []
