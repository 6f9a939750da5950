"""The commands: thin over the command line and its JSON outputs."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from ._run import Error, OptionValue, Rejected, error_of, flags, run

PathArg = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class CheckResult:
    """What `ztfs check` says of a model: `valid`, else the `rule` it breaks
    (None for a file ztfs does not read or will not interpret) and the
    `message`."""

    valid: bool
    rule: Optional[str]
    message: str

    def __bool__(self) -> bool:
        return self.valid


@dataclass(frozen=True)
class MountInfo:
    """One ztfs mount, as `ztfs status --json` lists it. `state` is ``ok``,
    ``stale`` (its daemon is gone: `fix` says the command that cleans it
    up) or ``not answering``; `started` is in seconds since the epoch."""

    mountpoint: Path
    source: str
    state: str
    uid: int
    pid: Optional[int] = None
    started: Optional[int] = None
    log: Optional[Path] = None
    options: list[str] = field(default_factory=list)
    fix: Optional[str] = None


def _model(model: PathArg) -> str:
    return os.fspath(model)


def check(model: PathArg, verify: bool = False, **options: OptionValue) -> CheckResult:
    """Checks a model (a file, a folder, or a URL) as `ztfs check` does;
    `verify=True` also reads every part and checks its digest. A rejected or
    unreadable-format file gives a result with `valid` False; a file that
    cannot be read at all (missing, I/O, a bad option) raises `Error`."""
    proc = run(["check", *flags(dict(options, verify=verify)), "--", _model(model)], check=False)
    if proc.returncode == 0:
        return CheckResult(True, None, proc.stdout.strip())
    e = error_of(proc)
    if proc.returncode == 1:
        return CheckResult(False, e.rule, e.message)
    raise e


def ls(model: PathArg, **options: OptionValue) -> list[dict[str, Any]]:
    """The model's objects as `ztfs ls --json` gives them: for each its
    `name`, `layout`, `shape`, `size`, `attributes` and `parts` (each with
    `dtype`, `offset`, `stored_length`, `digest`, ...). Raises `Rejected` for
    a rejected file."""
    proc = run(["ls", "--json", *flags(options), "--", _model(model)])
    objects: list[dict[str, Any]] = json.loads(proc.stdout)["objects"]
    return objects


def pack(inputs: Union[PathArg, Sequence[PathArg]], output: Optional[PathArg] = None,
         **options: OptionValue) -> Path:
    """Writes `inputs` (a model, or .npy files) as a zTensor file at `output`
    (`ztfs pack`), or as a Hugging Face folder with `to_folder=DIR`.
    Options are pack's flags: `zstd=True` or `zstd=19`, `digest="sha256"`,
    `shard_size="2G"`, `cache_dir=...`. Returns the path written."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    paths = [_model(i) for i in inputs]
    args = ["pack"]
    zstd = options.pop("zstd", None)
    if zstd is True:
        args.append("--zstd")
    elif zstd not in (None, False):
        args.append(f"--zstd={zstd}")
    folder = options.get("to_folder")
    if output is not None:
        target = os.fspath(output)
        args.append(f"--output={target}")
    elif isinstance(folder, (str, os.PathLike)):
        target = os.fspath(folder)
    else:
        raise Error("pack needs an output file (or to_folder=DIR)", kind="usage")
    # Paths after `--`: a name that starts with `-` is a path, not a flag.
    run([*args, *flags(options), "--", *paths])
    return Path(target)


def unmount(path: PathArg) -> None:
    """Unmounts a ztfs mount (`ztfs unmount`); a busy one is detached and
    goes away when its last file is closed."""
    run(["unmount", "--", os.fspath(path)])


def mounts() -> list[MountInfo]:
    """The ztfs mounts of this user (every user's for root), as
    `ztfs status --json` lists them: a list of `MountInfo`."""
    out: list[MountInfo] = []
    for m in json.loads(run(["status", "--json"]).stdout):
        out.append(MountInfo(
            mountpoint=Path(m["mountpoint"]), source=m["source"], state=m["state"], uid=m["uid"],
            pid=m.get("pid"), started=m.get("started"),
            log=Path(m["log"]) if m.get("log") else None,
            options=list(m.get("options") or []), fix=m.get("fix"),
        ))
    return out


class Mount:
    """A mounted model: `path` is its mount point. A context manager that
    unmounts on exit (also on an exception and on Ctrl-C), or unmount it
    with `unmount()`; a mount left mounted is unmounted when the
    interpreter exits. A temporary mount point (none given) is removed
    after the unmount."""

    def __init__(self, model: PathArg, mountpoint: Optional[PathArg] = None,
                 **options: OptionValue) -> None:
        if options.get("foreground") or options.get("f"):
            raise Error("foreground=True would not return until unmounted; run `ztfs mount -f` itself",
                        kind="usage")
        # The arguments first: one that is wrong leaves no folder behind.
        self.model = _model(model)
        args = flags(options)
        self._temp = mountpoint is None
        self.path = Path(tempfile.mkdtemp(prefix="ztfs-")) if mountpoint is None else Path(mountpoint)
        try:
            run(["mount", *args, "--", self.model, os.fspath(self.path)])
        except Error:
            self._remove_temp()
            raise
        except BaseException:
            # Ctrl-C while `ztfs mount` waited: its daemon may have mounted
            # all the same.
            if os.path.ismount(self.path):
                try:
                    unmount(self.path)
                except Error:
                    pass
            self._remove_temp()
            raise
        self._mounted = True
        _live.add(self)

    def unmount(self) -> None:
        """Unmounts (once; later calls do nothing) and removes a temporary
        mount point."""
        if not getattr(self, "_mounted", False):
            return
        try:
            unmount(self.path)
        except Error:
            # Unmounted already (by `ztfs unmount --all`, say) is done; a
            # failure leaves it mounted, for another try.
            if os.path.ismount(self.path):
                raise
        self._mounted = False
        _live.discard(self)
        self._remove_temp()

    @property
    def mounted(self) -> bool:
        return getattr(self, "_mounted", False)

    def _remove_temp(self) -> None:
        # Never into a mount that is still there.
        if self._temp and not os.path.ismount(self.path):
            shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: Any) -> None:
        self.unmount()

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __repr__(self) -> str:
        state = "mounted" if self.mounted else "unmounted"
        return f"<ztfs.Mount {self.model!r} on {str(self.path)!r} ({state})>"


def mount(model: PathArg, mountpoint: Optional[PathArg] = None, **options: OptionValue) -> Mount:
    """Mounts `model` (a file, a folder, an index, or a URL: https://, s3://,
    hf://) read-only at `mountpoint`, a new temporary directory when None,
    and returns once it answers. Options are `ztfs mount`'s flags:
    `verify=True`, `passthrough="off"`, `cache_dir="/var/cache/ztfs"`,
    `uid=1000`, `file_mode="0444"`, `shard={"NAME": path}`, ...

        with ztfs.mount("model.zt") as mnt:
            w = np.load(mnt / "lm_head.weight" / "data.npy")

    Raises `Rejected` (with its `rule`) for a file its format refuses,
    `Refused` for one ztfs does not read, `Error` otherwise."""
    return Mount(model, mountpoint, **options)


_live: set[Mount] = set()


def _unmount_live() -> None:
    for m in list(_live):
        try:
            m.unmount()
        except Error:
            pass


atexit.register(_unmount_live)
