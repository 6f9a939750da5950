"""How ztfs is asked about a Hurray file: the one place that knows the CLI's
spelling and the mount's file names for it, so adapting to the CLI as it
lands is a change here only.
"""

from __future__ import annotations

from ..ztfs import Ztfs


def ztfs_hurray(z: Ztfs, what: str, path: str, name: str | None = None,
                part: str | None = None) -> tuple[int, bytes, bytes]:
    """Runs one ztfs command on a Hurray file; returns (exit, stdout, stderr).

      check           ztfs check FILE
      ls              ztfs ls FILE --json
      cat, part None  ztfs cat FILE NAME                  (row-major data)
      cat, "bufferK"  ztfs cat --raw FILE NAME bufferK    (buffer K, raw)

    The buffer form is the zTensor CLI's `cat FILE OBJECT [PART] --raw`
    with a tensor's buffers as its parts, as the mount's `bufferK.raw`.
    """
    if what == "check":
        return z.run("check", [path])
    if what == "ls":
        return z.run("ls", [path], ("--json",))
    if what == "cat":
        if part is None:
            return z.run("cat", [path, name])
        return z.run("cat", [path, name, part], ("--raw",))
    raise ValueError(f"unknown command {what!r}")


def mount_files(buffer_count: int) -> tuple[str, list[str]]:
    """The files of one tensor's directory: (data file, buffer files)."""
    return "data", [f"buffer{i}.raw" for i in range(buffer_count)]


def buffer_part(i: int) -> str:
    return f"buffer{i}"
