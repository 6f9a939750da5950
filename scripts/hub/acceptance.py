"""The acceptance check of a mounted model repository with the real tools:
`python scripts/hub/acceptance.py MOUNT SOURCE` loads the config and the
tokenizer with transformers from both folders and compares them, and
every tensor of the mount's `model.safetensors` (or its index) with the
source's safetensors files through the safetensors package. Exit 0 and one
`ok` line when they agree; otherwise each difference on stderr and exit 1.
No torch is needed: numpy arrays and raw bytes are compared.
"""

from __future__ import annotations

import json
import os
import sys

SENTENCES = ["The quick brown fox jumps over the lazy dog.",
             "ztfs mounts a model file as a read-only directory tree.",
             "Ünïcödé and digits 0123456789 survive the round trip?"]


def weights(folder: str) -> dict:
    """Every tensor of a folder's safetensors files: name -> (dtype, shape,
    bytes), read through safe_open (bytes by the header where numpy lacks
    the dtype)."""
    from safetensors import safe_open

    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = sorted(n for n in os.listdir(folder) if n.endswith(".safetensors"))
    out = {}
    for name in files:
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n))
            body = f.read()
        header.pop("__metadata__", None)
        with safe_open(path, framework="numpy") as st:
            for key, e in header.items():
                a, b = e["data_offsets"]
                data = body[a:b]
                try:
                    arr = st.get_tensor(key)
                    if arr.tobytes() != data:
                        raise ValueError(f"{path}: {key}: safe_open differs from the header's range")
                except TypeError:
                    pass
                out[key] = (e["dtype"], e["shape"], data)
    return out


def main() -> int:
    mount, source = sys.argv[1], sys.argv[2]
    from transformers import AutoConfig, AutoTokenizer

    problems = []
    got, want = AutoConfig.from_pretrained(mount), AutoConfig.from_pretrained(source)
    # Each names the folder it was read from; everything else must agree.
    got, want = ({k: v for k, v in c.to_dict().items() if k != "_name_or_path"} for c in (got, want))
    if got != want:
        problems.append(f"AutoConfig differs: {got} vs {want}")
    tok_got, tok_want = AutoTokenizer.from_pretrained(mount), AutoTokenizer.from_pretrained(source)
    for s in SENTENCES:
        a, b = tok_got(s)["input_ids"], tok_want(s)["input_ids"]
        if a != b:
            problems.append(f"AutoTokenizer encodes {s!r} as {a}, the source's as {b}")
    if tok_got.get_vocab() != tok_want.get_vocab():
        problems.append("AutoTokenizer vocabularies differ")
    w_got, w_want = weights(mount), weights(source)
    if sorted(w_got) != sorted(w_want):
        problems.append(f"tensors {sorted(set(w_got) ^ set(w_want))[:8]} in one only")
    for k in sorted(set(w_got) & set(w_want)):
        if w_got[k] != w_want[k]:
            problems.append(f"tensor {k!r} differs (dtype, shape or bytes)")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"ok   {mount}: config, tokenizer and {len(w_got)} tensors equal the source's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
