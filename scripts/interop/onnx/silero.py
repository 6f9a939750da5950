"""Real ONNX files: the models inside the PyPI silero-vad wheel (package
data, silero_vad/data/*.onnx: exported by torch.onnx and by spox, opsets
15 to 18, Constants in If branches, a typed int64 Constant). Found through
the installed package's folder without importing it (its __init__ imports
torch, which these checks do not need).
"""

from __future__ import annotations

import importlib.util
import os


def silero_files() -> list:
    """(label, path) of every .onnx file the installed silero-vad ships;
    [] when it is not installed."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        return []
    d = os.path.join(list(spec.submodule_search_locations)[0], "data")
    if not os.path.isdir(d):
        return []
    return [(f"silero/{f}", os.path.join(d, f)) for f in sorted(os.listdir(d))
            if f.endswith(".onnx")]
