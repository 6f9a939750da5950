"""Mount a tensor model file as a read-only directory tree, check it, list
it and pack it, from Python: a thin layer over the `ztfs` program that the
same wheel installs.

    import numpy as np, ztfs

    with ztfs.mount("model.zt") as mnt:          # a temporary mount point
        w = np.load(mnt / "lm_head.weight" / "data.npy")

    ztfs.check("model.safetensors").valid        # or .rule and .message
    [o["name"] for o in ztfs.ls("model.gguf")]
    ztfs.pack("model.safetensors", "model.zt")

Errors are exceptions: `Rejected` (its `rule`, as `ztfs check` names it)
for a file its format refuses, `Refused` for a file ztfs does not read,
`Error` (their base) for the rest.
"""

from ._api import CheckResult, Mount, MountInfo, check, ls, mount, mounts, pack, unmount
from ._run import Error, Refused, Rejected, binary

try:
    from importlib.metadata import version as _version

    __version__ = _version("ztfs")
except Exception:  # not installed as a distribution (a source tree)
    __version__ = "0+unknown"

__all__ = [
    "CheckResult", "Mount", "MountInfo", "check", "ls", "mount", "mounts", "pack", "unmount",
    "Error", "Refused", "Rejected", "binary", "__version__",
]
