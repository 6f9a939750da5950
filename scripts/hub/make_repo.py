"""A small real Hugging Face model repository, deterministic:

    python scripts/hub/make_repo.py OUT_DIR [--tensors N] [--shards K] [--seed S]

writes config.json (transformers' LlamaConfig) and generation_config.json,
a BPE tokenizer trained with `tokenizers` on text made here and saved by
transformers' PreTrainedTokenizerFast (tokenizer.json, tokenizer_config.json,
no special_tokens_map.json: transformers 5 writes none), the weights with the
safetensors package (one model.safetensors with K=1; else K shards and the
index as transformers writes it), a README.md and a .gitattributes like the
Hub's. Same arguments, same bytes. Defaults: 24 tensors in 3 shards.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

WORDS = ("tensor model file mount read range shard index token layer weight bias norm "
         "attention head embedding vocabulary merge byte pair encoding checkpoint repository "
         "commit revision config loader safetensors zTensor fuse kernel page cache").split()

# The Hub's .gitattributes of a new repository, and the formats ztfs mounts.
LFS = ("*.7z *.arrow *.bin *.bz2 *.ckpt *.ftz *.gz *.h5 *.joblib *.lfs.* *.mlmodel *.model *.msgpack "
       "*.npy *.npz *.onnx *.ot *.parquet *.pb *.pickle *.pkl *.pt *.pth *.rar *.safetensors "
       "saved_model/**/* *.tar.* *.tar *.tflite *.tgz *.wasm *.xz *.zip *.zst *tfevents* "
       "*.gguf *.zt *.hrry").split()
GITATTRIBUTES = "".join(f"{p} filter=lfs diff=lfs merge=lfs -text\n" for p in LFS)


def text(rng: np.random.Generator, lines: int = 400) -> list[str]:
    return [" ".join(WORDS[i] for i in rng.integers(0, len(WORDS), rng.integers(4, 14)))
            for _ in range(lines)]


def write_tokenizer(out: str, rng: np.random.Generator) -> int:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(text(rng), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>", model_max_length=2048)
    fast.save_pretrained(out)
    return len(fast)


def write_config(out: str, vocab: int) -> None:
    from transformers import GenerationConfig, LlamaConfig

    cfg = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                      bos_token_id=1, eos_token_id=2)
    cfg.save_pretrained(out)
    GenerationConfig(bos_token_id=1, eos_token_id=2, max_new_tokens=32).save_pretrained(out)


def write_weights(out: str, rng: np.random.Generator, n: int, k: int) -> None:
    from safetensors.numpy import save_file

    tensors = {}
    for i in range(n):
        rows = int(rng.integers(8, 256))
        cols = int(rng.choice([16, 64, 256, 512]))
        dtype = np.float16 if i % 3 else np.float32
        tensors[f"model.layers.{i}.weight"] = rng.standard_normal((rows, cols)).astype(dtype)
    if k <= 1:
        save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
        return
    names = list(tensors)
    total = sum(t.nbytes for t in tensors.values())
    shards, cur, size = [], [], 0
    for name in names:
        cur.append(name)
        size += tensors[name].nbytes
        if size >= total * (len(shards) + 1) / k and len(shards) < k - 1:
            shards.append(cur)
            cur = []
    shards.append(cur)
    while len(shards) < k:
        shards.append([])
    weight_map = {}
    for i, members in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{k:05d}.safetensors"
        save_file({m: tensors[m] for m in members}, os.path.join(out, fname), metadata={"format": "pt"})
        weight_map.update({m: fname for m in members})
    # As transformers 5's save_pretrained writes it: parameters and bytes.
    params = sum(t.size for t in tensors.values())
    index = {"metadata": {"total_parameters": params, "total_size": total},
             "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)
        f.write("\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--tensors", type=int, default=24)
    p.add_argument("--shards", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    vocab = write_tokenizer(args.out, np.random.default_rng(1234))
    write_config(args.out, vocab)
    write_weights(args.out, rng, args.tensors, args.shards)
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(f"---\nlicense: apache-2.0\n---\n# A tiny Llama for ztfs's tests (seed {args.seed})\n")
    with open(os.path.join(args.out, ".gitattributes"), "w") as f:
        f.write(GITATTRIBUTES)


if __name__ == "__main__":
    main()
