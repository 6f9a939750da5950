"""`ztfs.open` against each format's own reader, value for value and dtype
for dtype: safetensors, the PyPI ztensor package, gguf-py (its
`quants.dequantize` for block types), numpy (`.npz`), torch (`torch.load`,
the oracle of a PyTorch checkpoint), onnx (`numpy_helper.to_array`). The files are the corpus's, and
files the reference writers make here."""

import numpy as np
import pytest

import ztfs
from conftest import CORPUS


def same(a, b):
    """Equal in dtype, shape and bits (NaNs included)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.tobytes() == b.tobytes()


def corpus(folder, suffix):
    return sorted((CORPUS / folder).glob(f"*{suffix}"))


def verify_verdict(path):
    """What the corpus table says `ztfs check --verify` makes of `path`:
    ``valid`` or ``reject:RULE``."""
    for row in (CORPUS / "expected.tsv").read_text().splitlines()[1:]:
        name, folder, _, verify = row.split("\t")
        if (CORPUS / folder / name) in (path, path.with_suffix("")):
            return verify
    raise AssertionError(f"{path} is not in corpus/expected.tsv")


def read_all(m):
    """Each tensor's array, or the ztfs.Error its read raised."""
    out = {}
    for k in m.keys():
        try:
            out[k] = m.get_tensor(k)
        except ztfs.Error as e:
            out[k] = e
    return out


def check_verdict(path, m, got):
    """With verify=True: a file the table calls valid reads whole; of one it
    rejects or refuses on verify, a tensor's read fails or an object is
    left out (saying why)."""
    verdict = verify_verdict(path)
    failed = [k for k, v in got.items() if isinstance(v, ztfs.Error)]
    if verdict == "valid":
        assert not failed, (path, failed)
    else:
        assert failed or m.left_out(), (path, verdict)


@pytest.mark.parametrize("path", corpus("valid", ".zt") + corpus("samples", ".zt"), ids=lambda p: p.name)
def test_zt_dense_tensors_are_the_ztensor_packages(path):
    import ztensor

    with ztfs.open(path, no_files=True, verify=True) as m:
        got = read_all(m)
        names = {o["name"] for o in ztfs.ls(path)}
    assert set(got) | set(m.left_out()) == names
    if path.parent.name != "samples":
        check_verdict(path, m, got)
    try:
        ref = ztensor.open(str(path))
    except OSError:
        # The package opens every shard at once, ztfs a shard when a part
        # needs it: nothing to compare with.
        return
    with ref:
        for name in ref.keys():
            t = ref[name]
            if t.layout != "dense" or "data" not in t.parts or not isinstance(got.get(name), np.ndarray):
                continue
            try:
                want = t["data"].tobytes()
            except ValueError:
                continue  # the package refuses what ztfs reads: a decision of the table's
            assert list(got[name].shape) == list(t.shape), name
            assert got[name].tobytes() == want, name


def test_hurray_row_major_tensors_are_pyhurrays():
    import hurray as hr

    files = corpus("hurray/valid", ".hrry") + [CORPUS / "samples" / "tiny-llama.hrry"]
    compared = 0
    for path in files:
        try:
            ref = hr.load(str(path))
        except Exception:  # noqa: BLE001 - pyhurray's refusals are scripts/interop's business
            continue
        with ztfs.open(path) as m:
            for name, t in ref.items():
                # Quantized tensors' values are computed here, pyhurray gives blocks.
                plain = type(t.layout).__name__ == "RowMajorLayout" and t.quantization is None
                if not plain or name not in m:
                    continue
                got = m.get_tensor(name)
                assert tuple(got.shape) == tuple(t.shape), (path, name)
                assert got.tobytes() == np.asarray(t.buffer(0)).tobytes(), (path, name)
                compared += 1
    assert compared > 20, compared


@pytest.mark.parametrize("path", corpus("safetensors/valid", ".safetensors"), ids=lambda p: p.name)
def test_safetensors_files_are_the_safetensors_packages(path):
    import torch
    from safetensors import safe_open

    with ztfs.open(path, verify=True) as m, safe_open(str(path), framework="pt") as ref:
        # A type numpy has no dtype for (float4, float6: packed) is left out, saying why.
        assert sorted(m.keys() + list(m.left_out())) == sorted(ref.keys())
        assert m.metadata() == ref.metadata()
        got = read_all(m)
        check_verdict(path, m, got)
        for name in m.keys():
            if isinstance(got[name], ztfs.Error):
                continue
            want = ref.get_tensor(name)
            got_name = got[name]
            assert list(got_name.shape) == list(want.shape), name
            bits = want.contiguous().view(-1).view(torch.uint8).numpy()
            assert got_name.tobytes() == bits.tobytes(), name


def test_safetensors_written_by_numpy_and_torch(tmp_path):
    import ml_dtypes
    import torch
    from safetensors.numpy import save_file
    from safetensors.torch import save_file as save_torch

    rng = np.random.default_rng(1)
    arrays = {
        "f32": rng.standard_normal((5, 7)).astype(np.float32),
        "f16": rng.standard_normal((3, 4, 2)).astype(np.float16),
        "i64": rng.integers(-9, 9, (6,)),
        "u8": rng.integers(0, 255, (2, 2), dtype=np.uint8),
        "b": rng.random((4,)) > 0.5,
        "scalar": np.array(3.5, dtype=np.float64),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    save_file(arrays, tmp_path / "n.safetensors", metadata={"format": "np", "who": "test"})
    with ztfs.open(tmp_path / "n.safetensors") as m:
        assert m.metadata() == {"format": "np", "who": "test"}
        for k, v in arrays.items():
            same(m.get_tensor(k), v)
    bf = torch.randn(4, 6, dtype=torch.bfloat16)
    f8 = torch.randn(3, 3).to(torch.float8_e4m3fn)
    save_torch({"bf": bf, "f8": f8}, tmp_path / "t.safetensors")
    with ztfs.open(tmp_path / "t.safetensors") as m:
        got = m.get_tensor("bf")
        assert got.dtype == np.dtype(ml_dtypes.bfloat16)
        assert got.view(np.uint16).tobytes() == bf.view(torch.uint16).numpy().tobytes()
        got = m.get_tensor("f8")
        assert got.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
        assert got.view(np.uint8).tobytes() == f8.view(torch.uint8).numpy().tobytes()
        # Values, not only bits: as float32, as torch widens them.
        assert np.array_equal(got.astype(np.float32), f8.float().numpy())


GGUF_DENSE = {"F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64"}


def gguf_reference(t):
    """What gguf-py gives for tensor `t`: its values, row-major, in the
    numpy shape (the GGUF dims reversed); a block type dequantized."""
    from gguf import quants

    shape = tuple(int(d) for d in reversed(t.shape.tolist()))
    if t.tensor_type.name == "BF16":  # gguf-py gives its bytes
        return np.asarray(t.data).view(np.uint16).reshape(shape)
    if t.tensor_type.name in GGUF_DENSE:
        return np.asarray(t.data).reshape(shape)
    if 0 in shape:
        return np.zeros(shape, np.float32)
    return quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)


@pytest.mark.parametrize("path", corpus("gguf/valid", ".gguf"), ids=lambda p: p.name)
def test_gguf_tensors_are_gguf_pys(path):
    import gguf

    ref = gguf.GGUFReader(str(path))
    with ztfs.open(path) as m:
        for t in ref.tensors:
            if t.name not in m:
                assert t.name in m.left_out(), t.name
                continue
            want = gguf_reference(t)
            got = m.get_tensor(t.name)
            if t.tensor_type.name == "BF16":
                got = got.view(np.uint16)
            same(got, want)


def test_gguf_block_types_are_dequantized_as_gguf_py_does(tmp_path):
    import gguf
    from gguf import quants

    rng = np.random.default_rng(2)
    w = gguf.GGUFWriter(str(tmp_path / "q.gguf"), "llama")
    for ty in (gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0,
               gguf.GGMLQuantizationType.Q5_1):
        v = rng.standard_normal((4, 64)).astype(np.float32)
        w.add_tensor(f"t.{ty.name}", quants.quantize(v, ty), raw_dtype=ty)
    w.add_tensor("dense", rng.standard_normal((3, 5)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ref = gguf.GGUFReader(str(tmp_path / "q.gguf"))
    with ztfs.open(tmp_path / "q.gguf") as m:
        assert m.metadata()["general.architecture"] == "llama"
        for t in ref.tensors:
            same(m.get_tensor(t.name), gguf_reference(t))
    # Without dequantizing, block types are not arrays.
    with ztfs.open(tmp_path / "q.gguf", dequantize=None) as m:
        assert m.keys() == ["dense"]
        assert set(m.left_out()) == {"t.Q8_0", "t.Q4_0", "t.Q5_1"}
        with pytest.raises(ztfs.Refused):
            m.get_tensor("t.Q8_0")


def test_npz_arrays_are_numpys(tmp_path):
    rng = np.random.default_rng(3)
    arrays = {
        "a": rng.standard_normal((4, 3)).astype(np.float32),
        "c": (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64),
        "i": rng.integers(0, 100, (2, 3, 4), dtype=np.int16),
        "b": rng.random(7) > 0.3,
    }
    for save in (np.savez, np.savez_compressed):
        path = tmp_path / f"{save.__name__}.npz"
        save(path, **arrays)
        ref = np.load(path)
        with ztfs.open(path) as m:
            assert sorted(m.keys()) == sorted(ref.files)
            for k in ref.files:
                same(m.get_tensor(k), ref[k])


def test_onnx_tensors_are_onnx_numpy_helpers(tmp_path):
    """An ONNX model saved by the onnx package with external data: raw,
    typed and external tensors, each as `numpy_helper.to_array` gives it."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    tensors = [
        numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "/enc/w"),
        helper.make_tensor("h", TensorProto.FLOAT16, [3], [1.0, -2.0, 0.5], raw=False),
        helper.make_tensor("ids", TensorProto.INT64, [4], [1, -2, 3, 1 << 40], raw=False),
        numpy_helper.from_array(np.array([True, False]), "flags"),
    ]
    model = helper.make_model(helper.make_graph([], "g", [], [], tensors))
    path = tmp_path / "m.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, location="m.data",
                    size_threshold=64)
    loaded = onnx.load(str(path))
    want = {t.name: numpy_helper.to_array(t) for t in loaded.graph.initializer}
    with ztfs.open(path) as m:
        assert sorted(m.keys()) == sorted(want)
        for k, a in want.items():
            same(m.get_tensor(k), a)
        assert m.manifest()["external_files"] == ["m.data"]


def test_torch_checkpoints_are_torch_loads(tmp_path):
    import torch

    g = torch.Generator().manual_seed(4)
    base = torch.randn(6, 8, generator=g)
    sd = {
        "w": base,
        "t": base.t(),                       # strided: a view over base's storage
        "rows": base[2:5],                   # an offset into the storage
        "half": torch.randn(3, 3, generator=g).half(),
        "bf": torch.randn(2, 5, generator=g).bfloat16(),
        "i": torch.arange(10, dtype=torch.int64),
        "b": torch.tensor([True, False, True]),
        "q": torch.quantize_per_tensor(torch.randn(4, 4, generator=g), 0.05, 3, torch.qint8),
    }
    torch.save(sd, tmp_path / "m.pt")
    ref = torch.load(tmp_path / "m.pt", weights_only=True)
    with ztfs.open(tmp_path / "m.pt") as m:
        assert sorted(m.keys()) == sorted(ref)
        for k, v in ref.items():
            got = m.get_tensor(k)
            if v.is_quantized:
                same(got, v.dequantize().numpy())
            elif v.dtype == torch.bfloat16:
                assert got.shape == tuple(v.shape)
                assert got.view(np.uint16).tobytes() == v.contiguous().view(torch.uint16).numpy().tobytes()
            else:
                same(got, v.contiguous().numpy())
