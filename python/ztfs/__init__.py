"""Read a tensor model of any format, from a file or a URL, as numpy
arrays, in-process (`open`, `safe_open`: no FUSE, no daemon); or mount it
as a read-only directory tree, check it, list it and pack it, through the
`ztfs` program the same wheel installs.

    import numpy as np, ztfs

    with ztfs.open("model.gguf") as m:           # .zt .safetensors .pt .npz ..., https:// hf://
        w = m.get_tensor("token_embd.weight")     # numpy, bfloat16 as ml_dtypes'
        rows = m.get_slice("output.weight")[:128] # reads those rows only

    with ztfs.mount("model.zt") as mnt:          # a temporary mount point
        w = np.load(mnt / "lm_head.weight" / "data.npy")

    ztfs.check("model.safetensors").valid        # or .rule and .message
    [o["name"] for o in ztfs.ls("model.gguf")]
    ztfs.pack("model.safetensors", "model.zt")

Errors are exceptions: `Rejected` (its `rule`, as `ztfs check` names it)
for a file its format refuses, `Refused` for a file ztfs does not read,
`Error` (their base) for the rest.
"""

from ._library import Model, Slice, open, safe_open
from ._api import CheckResult, Mount, MountInfo, check, ls, mount, mounts, pack, unmount
from ._run import Error, Refused, Rejected, binary

try:
    from importlib.metadata import version as _version

    __version__ = _version("ztfs")
except Exception:  # not installed as a distribution (a source tree)
    __version__ = "0+unknown"

__all__ = [
    "Model", "Slice", "open", "safe_open",
    "CheckResult", "Mount", "MountInfo", "check", "ls", "mount", "mounts", "pack", "unmount",
    "Error", "Refused", "Rejected", "binary", "__version__",
]
