"""`ztfs.open` needs no FUSE and no privilege: run in a mount namespace
where /dev/fuse is /dev/null, and as an unprivileged user."""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

from conftest import CORPUS

SAMPLE = CORPUS / "samples" / "tiny-llama.zt"

READ = textwrap.dedent("""
    import sys, ztfs
    with ztfs.open(sys.argv[1]) as m:
        n = sum(m.get_tensor(k).size for k in m.keys())
        assert n > 0
        print("read", len(m.keys()), "tensors,", n, "values")
""")


def needs_root():
    if os.geteuid() != 0:
        pytest.fail("these tests run as root (CI does): they make a mount namespace and drop to nobody")


def test_reads_with_no_fuse_device():
    needs_root()
    # Mounting over /dev/fuse needs one there: CI's machines have it.
    assert os.path.exists("/dev/fuse")
    script = (f"mount --bind /dev/null /dev/fuse && "
              f"exec {sys.executable} -c '{READ}' {SAMPLE}")
    out = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("read ")


def test_reads_as_an_unprivileged_user():
    needs_root()
    # The venv and the model where nobody can read them.
    venv = os.path.dirname(os.path.dirname(sys.executable))
    for d in (venv, os.path.dirname(venv)):
        os.chmod(d, os.stat(d).st_mode | 0o755)
    # pytest's own temporary folders are root's alone.
    d = tempfile.mkdtemp(prefix="ztfs-nobody-")
    os.chmod(d, 0o755)
    model = os.path.join(d, "m.zt")
    shutil.copy(SAMPLE, model)
    os.chmod(model, 0o644)
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          sys.executable, "-c", READ, str(model)], capture_output=True, text=True)
    shutil.rmtree(d)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("read ")
