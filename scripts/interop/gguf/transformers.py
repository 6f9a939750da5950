"""A GGUF mount as transformers loads the GGUF, against transformers itself.

`ztfs mount --dequantize f32` of a GGUF of an architecture ztfs maps has
`config.json` at its root, and its `model.safetensors` names the tensors as
the model's parameters, with the values the loader makes (llama's q and k
rows un-permuted, Gemma's norms less one). The oracle is
`from_pretrained(dir, gguf_file=...)` of transformers 5.25 with torch:

- for a tiny random model of each architecture (llama, mistral, qwen2,
  qwen3, gemma2, gemma3), written as llama.cpp's converter writes it
  (gguf-py's tensor names, q and k permuted for llama, Gemma's norms plus
  one, weights quantized to Q8_0 or Q4_0, some kept f32 or f16, a tied or an
  untied head, a tensor the loader drops): `AutoConfig.from_pretrained` of
  the mount equals the loader's config, and `from_pretrained` of the mount
  gives the state dict the loader gives, key for key, bit for bit; the
  unquantized q and k weights are the original model's again;
- a llama named exactly "mistral", which the loader renames and then
  fails on: the mount has no `config.json` either;
- `ztfs pack --dequantize f32 --to-folder` of one of them loads the same;
- the real gemma-3-270m Q4_K_M (real.py), whole.
"""

from __future__ import annotations

import os
import tempfile
import zlib

import numpy as np

from ..mount import mounted
from ..results import Results, short

# (architecture as general.architecture says, transformers config class
# name, extra config, the tensors' storage) per tiny model.
MODELS = [
    ("llama", "LlamaConfig", {}, "q8_0"),
    ("mistral", "MistralConfig", {}, "q4_0"),
    ("qwen2", "Qwen2Config", {}, "q8_0"),
    # The loader maps no head_dim for qwen3: Qwen3Config's default (128) it is.
    ("qwen3", "Qwen3Config", {"head_dim": 128}, "f16"),
    ("gemma2", "Gemma2Config", {"head_dim": 16}, "q8_0"),
    ("gemma3", "Gemma3TextConfig", {"head_dim": 16}, "f32"),
]
VOCAB = 64


def tiny(arch: str, cls: str, extra: dict):
    """A seeded random causal LM of `arch`, and its config."""
    import torch
    import transformers

    torch.manual_seed(zlib.crc32(arch.encode()))
    config = getattr(transformers, cls)(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        tie_word_embeddings=arch != "llama", **extra)
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for p in model.parameters():  # norms random too, so an offset shows
            p.copy_(torch.randn_like(p) * 0.5)
    return model, config


def permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's `LlamaModel.permute` of q or k rows."""
    return (w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def write_gguf(path: str, arch: str, model, config, storage: str):
    """`model` as llama.cpp's converter writes it."""
    import gguf
    from gguf import quants

    file_arch = "llama" if arch == "mistral" else arch
    w = gguf.GGUFWriter(path, file_arch)
    w.add_name("mistral" if arch == "mistral" else f"tiny {arch}")
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    w.add_rope_freq_base(10000.0)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    if file_arch == "llama":
        w.add_rope_dimension_count(head_dim)
    if file_arch.startswith("gemma"):
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
        w.add_sliding_window(32)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"t{i}" for i in range(VOCAB)])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    names = gguf.get_tensor_name_map(
        next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == file_arch),
        config.num_hidden_layers)
    for key, t in model.state_dict().items():
        if key == "lm_head.weight" and config.tie_word_embeddings:
            continue
        base, suffix = key.rsplit(".", 1)
        name = names.get_name(base) + "." + suffix
        a = t.detach().numpy().astype(np.float32)
        if file_arch == "llama" and ".attn_q." in name:
            a = permute(a, config.num_attention_heads)
        if file_arch == "llama" and ".attn_k." in name:
            a = permute(a, config.num_key_value_heads)
        if file_arch.startswith("gemma") and "norm.weight" in name:
            a = a + 1
        kind = storage if a.ndim == 2 else "f32"
        if kind == "f16":
            w.add_tensor(name, a.astype(np.float16))
        elif kind == "f32":
            w.add_tensor(name, a)
        else:
            ty = getattr(gguf.GGMLQuantizationType, kind.upper())
            w.add_tensor(name, quants.quantize(a, ty), raw_dtype=ty)
    if file_arch == "llama":
        # llama 3's rope table: a tensor the loader drops.
        w.add_tensor("rope_freqs.weight", np.ones(head_dim // 2, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def state(model) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def compare(want: dict, got: dict, where: str, res: Results):
    import torch

    res.check(sorted(want) == sorted(got), where,
              f"keys differ: {sorted(set(want) ^ set(got))[:6]}")
    for k in sorted(set(want) & set(got)):
        a, b = want[k].float(), got[k].float()
        res.check(a.shape == b.shape and torch.equal(a, b), f"{where} {k}",
                  f"{tuple(b.shape)} differs from the loader's {tuple(a.shape)}")


def config_dict(c) -> dict:
    d = c.to_dict()
    for k in ("_name_or_path", "transformers_version", "dtype", "torch_dtype"):
        d.pop(k, None)
    return d


def check_one(z, path: str, res: Results, where: str, original=None):
    """The mount of GGUF `path` against the loader; `original`'s q and k
    weights too, when given (as the file stores them: f32, or rounded to f16)."""
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    folder, name = os.path.split(path)
    want_config = AutoConfig.from_pretrained(folder, gguf_file=name)
    want = state(AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype="float32"))
    with mounted(z, path, res, where, ("--dequantize", "f32")) as (rc, err, mnt):
        if not res.check(rc == 0, where, f"mount: {short(err)}"):
            return
        got_config = AutoConfig.from_pretrained(mnt)
        res.check(config_dict(got_config) == config_dict(want_config), where,
                  f"config.json gives {config_dict(got_config)} for the loader's {config_dict(want_config)}")
        transformers.logging.set_verbosity_error()
        got = state(AutoModelForCausalLM.from_pretrained(mnt, dtype="float32"))
        compare(want, got, where, res)
    if original is not None:
        for k, v in original.items():
            if (".q_proj." in k or ".k_proj." in k) and k in got:
                res.check(bool((got[k] == v).all()), f"{where} {k}",
                          "not the original model's weight again")
    return want


def check_refused(z, path: str, res: Results, where: str):
    """A GGUF the loader fails on: the mount has no config.json and keeps
    the file's names."""
    from transformers import AutoModelForCausalLM

    folder, name = os.path.split(path)
    try:
        AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
        res.fail(where, "the loader reads it: the test's premise is gone")
    except Exception:  # noqa: BLE001 - any refusal is the premise
        res.ok()
    with mounted(z, path, res, where, ("--dequantize", "f32")) as (rc, err, mnt):
        if res.check(rc == 0, where, f"mount: {short(err)}"):
            res.check(not os.path.exists(os.path.join(mnt, "config.json")), where,
                      "a config.json for a file transformers cannot load")


def run_transformers(z, tmp: str, res: Results):
    import torch

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print("\n== gguf transformers form: mount --dequantize f32 against from_pretrained(gguf_file=)")
    for arch, cls, extra, storage in MODELS:
        where = f"gguf transformers {arch} ({storage})"
        model, config = tiny(arch, cls, extra)
        d = tempfile.mkdtemp(prefix=f"gguf-{arch}-", dir=tmp)
        path = os.path.join(d, f"{arch}.gguf")
        write_gguf(path, arch, model, config, storage)
        if arch == "mistral":  # the loader fails on it: so must the form
            check_refused(z, path, res, where)
            continue
        original = None
        if storage in ("f16", "f32"):
            dtype = torch.float16 if storage == "f16" else torch.float32
            original = {k: v.to(dtype).float() for k, v in state(model).items()}
        want = check_one(z, path, res, where, original)
        if arch == "llama" and want is not None:
            check_folder(z, path, want, os.path.join(tmp, "llama-folder"), res)
    from .real import fetch

    check_one(z, fetch(), res, "gguf transformers gemma-3-270m Q4_K_M")


def check_folder(z, path: str, want: dict, folder: str, res: Results):
    from transformers import AutoModelForCausalLM

    where = "gguf transformers: pack --dequantize f32 --to-folder"
    rc, _, err = z.run("pack", [path], ("--dequantize", "f32", "--to-folder", folder))
    if res.check(rc == 0, where, short(err)):
        res.check(os.path.exists(os.path.join(folder, "config.json")), where, "no config.json")
        compare(want, state(AutoModelForCausalLM.from_pretrained(folder, dtype="float32")), where, res)
