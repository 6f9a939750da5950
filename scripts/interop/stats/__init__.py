"""The stats suite: `ztfs stats --json` against numpy on the reference
readers' values (safetensors, numpy for .npz, PyPI ztensor, onnx, gguf-py
with `quants.dequantize`, and the real gemma-3-270m Q4_K_M for the k-quants).

Per file (files.py writes them): every tensor's counts (values, NaN, +inf,
-inf, zeros) exact, min and max exact, mean and std within 1e-12 of
numpy's (oracle.py says of what scale), and the histogram's bins, range and
counts exactly `np.histogram`'s, with the default 64 bins and with 7; one
tensor asked by name gives only it; the text output names every tensor.
Then the same numbers in a mount's `TENSOR/stats.json`.
"""

from .check import run_stats  # noqa: F401
