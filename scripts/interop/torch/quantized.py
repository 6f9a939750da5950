"""PyTorch's quantized tensors, against torch itself (2.15, in the venv).

A checkpoint torch.save writes with quantized tensors of every scheme and
integer type ztfs reads (per_tensor_affine and per_channel_affine over
qint8, quint8 and qint32; per channel along the first, a middle and the
last dimension; a transposed one and a slice with a storage offset, which
are strided views of their storage), then through one mount: each
tensor's `data.npy` is `Tensor.dequantize()` bit for bit (float32, its
shape), `ls -l` names its dtype as torch does (`qint8`), `meta.json` names the scheme it is dequantized from, `ztfs cat
--values` gives the same bytes, and `mount --dequantize f32` puts them in
`model.safetensors`. The schemes ztfs does not read (float zero points,
4-bit storage) are refused with the rule `TorchTensor`, naming the call.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np

from ..mount import mounted
from ..results import Results, short


def quantized_tensors() -> dict:
    import torch

    warnings.filterwarnings("ignore", message=".*quantized.*deprecated.*")
    g = torch.Generator().manual_seed(11)

    def rand(*shape):
        return torch.randn(*shape, generator=g) * 3

    def channel(x, axis, dtype):
        n = x.shape[axis]
        scales = torch.rand(n, dtype=torch.float64, generator=g) * 0.2 + 0.01
        zps = torch.randint(0, 10, (n,), generator=g)
        return torch.quantize_per_channel(x, scales, zps, axis, dtype)

    t = {
        "pt.qint8": torch.quantize_per_tensor(rand(16, 24), 0.1, 3, torch.qint8),
        "pt.quint8": torch.quantize_per_tensor(rand(7, 5), 0.037, 128, torch.quint8),
        "pt.qint32": torch.quantize_per_tensor(rand(33), 1e-4, -5, torch.qint32),
        "pc.axis0": channel(rand(12, 10), 0, torch.qint8),
        "pc.conv": channel(rand(6, 3, 4, 5), 0, torch.quint8),
        "pc.middle": channel(rand(4, 6, 5), 1, torch.qint8),
        "pc.last": channel(rand(5, 9), 1, torch.qint32),
    }
    t["view.transposed"] = t["pt.qint8"].t()
    t["view.slice"] = t["pt.quint8"][2:5]
    return t


def run_quantized(z, outdir: str, res: Results):
    import torch
    from safetensors.numpy import load_file

    print("\n== PyTorch quantized tensors: data.npy against Tensor.dequantize()")
    os.makedirs(outdir, exist_ok=True)
    tensors = quantized_tensors()
    path = os.path.join(outdir, "quantized.pt")
    torch.save(tensors, path)
    want = {k: v.dequantize().numpy() for k, v in torch.load(path, weights_only=True).items()}
    res.check(not tensors["view.transposed"].is_contiguous(), "torch quantized", "the view is contiguous")
    where = "torch quantized"
    rc, _, err = z.run("check", [path])
    if not res.check(rc == 0, where, f"check: {short(err)}"):
        return
    rc, listing, err = z.run("ls", [path], ("-l",))
    lines = {ln.split()[-1]: ln for ln in listing.decode().splitlines() if ln.strip()}
    for name, t in tensors.items():
        kind = str(t.dtype).removeprefix("torch.")
        res.check(f" {kind} " in lines.get(name, ""), f"{where} {name}", f"ls -l: {lines.get(name)!r}")
    with mounted(z, path, res, where) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"mount: {short(err)}"):
            return
        for name, w in want.items():
            d = os.path.join(mnt, name)
            got = np.load(os.path.join(d, "data.npy"))
            res.check(got.dtype == np.float32 and got.shape == w.shape and got.tobytes() == w.tobytes(),
                      f"{where} {name}", f"data.npy {got.dtype}{got.shape} is not dequantize()'s {w.shape}")
            with open(os.path.join(d, "meta.json")) as f:
                values = json.load(f).get("values") or {}
            scheme = "per_channel_affine" if name.startswith("pc.") else "per_tensor_affine"
            res.check(scheme in str(values.get("dequantized_from")), f"{where} {name}",
                      f"meta.json values {values}")
            rc, data, err = z.run("cat", [path, name], ("--values",))
            res.check(rc == 0 and data == w.astype("<f4").tobytes(), f"{where} {name}",
                      f"cat --values: {short(err)}")
    with mounted(z, path, res, where, ("--dequantize", "f32")) as (rc, err, mnt):
        if res.check(rc == 0, where, f"mount --dequantize: {short(err)}"):
            st = load_file(os.path.join(mnt, "model.safetensors"))
            for name, w in want.items():
                res.check(name in st and st[name].tobytes() == w.tobytes(), f"{where} {name}",
                          "model.safetensors of mount --dequantize f32")
    check_refused(z, outdir, res)


def check_refused(z, outdir: str, res: Results):
    """The schemes ztfs does not read: refused, naming the call."""
    import torch

    x = torch.randn(4, 8)
    cases = {
        # Float zero points: embedding-bag quantization's scheme.
        "float-qparams": torch.quantize_per_channel(
            x, torch.rand(4, dtype=torch.float64) + 0.1, torch.rand(4), 0, torch.quint8),
        "quint4x2": torch.quantize_per_tensor(x, 0.1, 2, torch.quint4x2),
    }
    for name, t in cases.items():
        path = os.path.join(outdir, f"quantized-{name}.pt")
        torch.save({"w": t}, path)
        torch.load(path, weights_only=True)  # torch reads it
        rc, _, err = z.run("check", [path])
        res.check(rc != 0 and b"TorchTensor" in err, f"torch quantized refused {name}",
                  f"exit {rc}: {short(err)}")
