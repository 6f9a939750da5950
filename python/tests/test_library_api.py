"""`ztfs.open`'s interface: slices that read only their rows, the
`safe_open` drop-in on three formats of the same tensors, errors as the
command line's, zero-copy arrays over the file's map, threads, a folder's
other files, the manifest."""

import json
import os
import threading

import numpy as np
import pytest

import ztfs
from conftest import CORPUS

SAMPLE = CORPUS / "samples" / "tiny-llama.zt"


def expected_rejections():
    """(file, rule) for every corpus file the table says is rejected on open."""
    rows = (CORPUS / "expected.tsv").read_text().splitlines()[1:]
    out = []
    for row in rows:
        name, folder, opened, _ = row.split("\t")
        if opened.startswith("reject:"):
            path = CORPUS / folder / name
            if not path.suffix:
                path = path.with_suffix(".zt")
            out.append((path, opened.split(":", 1)[1]))
    assert len(out) > 100
    return out


@pytest.mark.parametrize("path,rule", expected_rejections(), ids=lambda v: getattr(v, "name", v))
def test_a_rejected_file_raises_rejected_with_the_clis_rule(path, rule):
    with pytest.raises(ztfs.Rejected) as e:
        ztfs.open(path)
    assert e.value.rule == rule


def test_errors_are_the_packages_exceptions(tmp_path):
    with pytest.raises(FileNotFoundError):
        ztfs.open(tmp_path / "missing.safetensors")
    (tmp_path / "x.bin").write_bytes(b"not a model at all, not one byte of it" * 10)
    with pytest.raises(ztfs.Refused):
        ztfs.open(tmp_path / "x.bin")
    with ztfs.open(SAMPLE) as m:
        with pytest.raises(KeyError):
            m.get_tensor("no such tensor")
    with pytest.raises(ztfs.Error, match="closed"):
        m.get_tensor(m.keys()[0])


def test_slices_read_their_rows_and_index_as_numpy_does():
    with ztfs.open(SAMPLE) as m:
        for name in m.keys():
            whole = m.get_tensor(name)
            s = m.get_slice(name)
            assert s.get_shape() == list(whole.shape)
            assert tuple(s.shape) == whole.shape and s.dtype == whole.dtype
            if whole.ndim == 0:
                assert s[...].tobytes() == whole.tobytes()
                continue
            n = whole.shape[0]
            keys = [slice(None), slice(1, 3), slice(None, None, 2), slice(None, None, -1),
                    slice(-2, None), slice(3, 1), slice(1, -1, 3), 0, -1, n - 1, Ellipsis]
            if whole.ndim > 1:
                keys += [(slice(0, 2), slice(1, None)), (1, 0), (slice(None, None, -2), Ellipsis)]
            for k in keys:
                got, want = s[k], whole[k]
                assert got.shape == want.shape and got.tobytes() == want.tobytes(), (name, k)
            with pytest.raises(IndexError):
                s[n]


def test_get_dtype_names_as_safetensors_does(tmp_path):
    from safetensors import safe_open
    from safetensors.torch import save_file
    import torch

    save_file({"a": torch.zeros(2, 3, dtype=torch.bfloat16), "b": torch.zeros(4, dtype=torch.int32),
               "c": torch.zeros(1, dtype=torch.bool)}, tmp_path / "d.safetensors")
    with ztfs.safe_open(tmp_path / "d.safetensors") as f, \
            safe_open(str(tmp_path / "d.safetensors"), framework="np") as ref:
        for k in ("a", "b", "c"):
            assert f.get_slice(k).get_dtype() == ref.get_slice(k).get_dtype()
            assert f.get_slice(k).get_shape() == ref.get_slice(k).get_shape()


DROP_IN = """
def load(safe_open, path):
    out = {}
    with safe_open(path, framework="np") as f:
        meta = f.metadata()
        for k in f.keys():
            out[k] = f.get_tensor(k)
            sl = f.get_slice(k)
            if sl.get_shape():
                assert sl[0:1].shape[0] == min(1, sl.get_shape()[0])
    return out, meta
"""


def test_safe_open_is_a_drop_in_on_safetensors_zt_and_gguf(tmp_path):
    import gguf
    from safetensors import safe_open
    from safetensors.numpy import save_file

    rng = np.random.default_rng(5)
    tensors = {"a.weight": rng.standard_normal((8, 4)).astype(np.float32),
               "b.bias": rng.standard_normal(4).astype(np.float16),
               "c.ids": rng.integers(0, 9, (3, 2)).astype(np.int32)}
    st = tmp_path / "m.safetensors"
    save_file(tensors, st)
    zt = ztfs.pack(st, tmp_path / "m.zt")
    w = gguf.GGUFWriter(str(tmp_path / "m.gguf"), "llama")
    for k, v in tensors.items():
        w.add_tensor(k, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    scope = {}
    exec(DROP_IN, scope)
    ref, _ = scope["load"](safe_open, str(st))
    for path in (st, zt, tmp_path / "m.gguf"):
        got, _ = scope["load"](ztfs.safe_open, str(path))
        assert sorted(got) == sorted(ref), path
        for k in ref:
            assert got[k].dtype == ref[k].dtype and np.array_equal(got[k], ref[k]), (path, k)


def test_torch_framework_gives_torch_tensors(tmp_path):
    import torch
    from safetensors.torch import save_file

    sd = {"w": torch.randn(3, 4), "bf": torch.randn(2, 2).bfloat16()}
    save_file(sd, tmp_path / "t.safetensors")
    with ztfs.safe_open(tmp_path / "t.safetensors", framework="pt") as f:
        for k, v in sd.items():
            got = f.get_tensor(k)
            assert isinstance(got, torch.Tensor) and got.dtype == v.dtype and torch.equal(got, v)
            got[...] = 0  # writable: its own memory, not the file's map
        assert torch.equal(f.get_slice("w")[1:], sd["w"][1:])


def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_local_raw_tensor_is_zero_copy(tmp_path):
    from safetensors.numpy import save_file

    path = tmp_path / "big.safetensors"
    n = 512 << 20
    big = np.ones(n // 4, dtype=np.float32)
    big[-1] = 5
    save_file({"big": big, "small": np.arange(3, dtype=np.float32)}, path)
    del big
    with ztfs.open(path) as m:
        before = rss_kib()
        a = m.get_tensor("big")
        grew = rss_kib() - before
        assert grew < 32 << 10, f"RSS grew {grew} KiB before the array was touched"
        assert not a.flags.writeable and a.shape == (n // 4,)
        with pytest.raises(ValueError):
            a[0] = 1
    # The model is closed; the array keeps its map.
    assert float(a[-1]) == 5.0 and float(a.sum(dtype=np.float64)) == n // 4 - 1 + 5


def test_decoded_tensors_are_fresh_writable_arrays(tmp_path):
    zstd = ztfs.pack(SAMPLE, tmp_path / "z.zt", zstd=True)
    # pack stores a part that zstd does not shrink as it is.
    encoded = {o["name"] for o in ztfs.ls(zstd) if o["parts"][0]["encoding"]}
    assert encoded
    with ztfs.open(zstd) as m, ztfs.open(SAMPLE) as plain:
        for k in m.keys():
            a = m.get_tensor(k)
            assert a.flags.writeable == (k in encoded), k
            assert a.tobytes() == plain.get_tensor(k).tobytes()


def test_threads_read_in_parallel_and_agree(tmp_path):
    zstd = ztfs.pack(SAMPLE, tmp_path / "z.zt", zstd=True)
    with ztfs.open(zstd) as m:
        want = {k: m.get_tensor(k).tobytes() for k in m.keys()}
        errors = []

        def work(seed):
            rng = np.random.default_rng(seed)
            try:
                for k in rng.permutation(m.keys()).tolist() * 3:
                    assert m.get_tensor(k).tobytes() == want[k]
                    s = m.get_slice(k)
                    if s.shape:
                        assert s[1:].tobytes() == np.frombuffer(want[k], m.get_tensor(k).dtype).reshape(s.shape)[1:].tobytes()
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors


def test_a_folders_files_and_the_manifest(tmp_path):
    from safetensors.numpy import save_file

    d = tmp_path / "repo"
    (d / "sub").mkdir(parents=True)
    save_file({"w": np.ones((2, 2), np.float32)}, d / "model.safetensors")
    (d / "config.json").write_text('{"model_type": "llama"}')
    (d / "sub" / "notes.txt").write_text("hello")
    with ztfs.open(d) as m:
        assert sorted(m.files()) == ["config.json", "sub/notes.txt"]
        assert json.loads(m.read_file("config.json")) == {"model_type": "llama"}
        assert m.read_file("sub/notes.txt") == b"hello"
        with pytest.raises(FileNotFoundError):
            m.read_file("nope.txt")
        man = m.manifest()
        assert "w" in json.dumps(man)
    with ztfs.open(d, no_files=True) as m:
        assert m.files() == []
    with ztfs.open(SAMPLE) as m:
        assert m.manifest() == json.loads((__import__("subprocess").run(
            [ztfs.binary(), "manifest", str(SAMPLE)], capture_output=True, text=True, check=True)).stdout)


def test_left_out_objects_say_why():
    # A zTensor file of sparse and quantized layouts: each object is either a
    # tensor or left out with its reason, never both, never neither.
    for path in sorted((CORPUS / "valid").glob("*.zt")):
        with ztfs.open(path, no_files=True) as m:
            names = {o["name"] for o in ztfs.ls(path)}
            assert set(m.keys()) | set(m.left_out()) == names, path
            assert not set(m.keys()) & set(m.left_out()), path
            assert all(isinstance(v, str) and v for v in m.left_out().values())


def rejected_on_verify():
    """(file, rule) for every corpus file the table calls valid on open and
    rejected on verify."""
    out = []
    for row in (CORPUS / "expected.tsv").read_text().splitlines()[1:]:
        name, folder, opened, verify = row.split("\t")
        if opened == "valid" and verify.startswith("reject:"):
            path = CORPUS / folder / name
            out.append((path if path.suffix else path.with_suffix(".zt"), verify.split(":", 1)[1]))
    assert len(out) > 20
    return out


@pytest.mark.parametrize("path,rule", rejected_on_verify(), ids=lambda v: getattr(v, "name", v))
def test_a_read_the_format_rejects_raises_its_rule(path, rule):
    # With verify=True a tensor's first read checks it as `check --verify`
    # does: its error is a Rejected naming the same rule (or the object is
    # left out, saying why, where numpy has no dtype for it).
    with ztfs.open(path, verify=True, no_files=True) as m:
        rules = set()
        for k in m.keys():
            try:
                m.get_tensor(k)
            except ztfs.Rejected as e:
                rules.add(e.rule)
        assert rules == {rule} or (not rules and m.left_out()), (rules, m.left_out())
