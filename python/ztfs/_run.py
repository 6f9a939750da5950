"""Finding the `ztfs` program and running it: its errors as exceptions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

#: A flag's value: True gives the bare flag, False and None leave it out, a
#: list or tuple repeats it, a mapping gives NAME=VALUE pairs (``shard=``).
OptionValue = Union[bool, int, float, str, "os.PathLike[str]", Sequence[Any], Mapping[str, Any], None]


class Error(Exception):
    """ztfs failed: `kind` names why (``io``, ``usage``, ``not_found``,
    ``refused``, ``foreign``, ``rejected``, ...), `message` is what the
    command line says, `exit_code` its exit code (1 for a file rejected or
    refused, 2 otherwise)."""

    def __init__(self, message: str, kind: str = "error", exit_code: int = 2,
                 rule: Optional[str] = None, file: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.exit_code = exit_code
        self.rule = rule
        self.file = file


class Rejected(Error):
    """The file breaks a rule of its format: `rule` names it (``HeaderMagic``,
    ``BlobBounds``, ... the names `ztfs check` prints)."""

    rule: str


class Refused(Error):
    """The file is not one ztfs reads (`kind` ``foreign``: a gzip or zip
    file, say), or holds something ztfs will not interpret (``refused``)."""


def binary() -> str:
    """The `ztfs` program this package runs: `$ZTFS_BIN`, else the one the
    wheel installed beside this interpreter's scripts (or the user's),
    else the first on PATH."""
    env = os.environ.get("ZTFS_BIN")
    if env:
        return env
    exe = "ztfs.exe" if os.name == "nt" else "ztfs"
    dirs = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        dirs.append(sysconfig.get_path("scripts", user_scheme))
    for d in dirs:
        p = Path(d) / exe
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    found = shutil.which(exe)
    if found:
        return found
    raise Error("the ztfs program is not installed: the wheel scripts/wheel.sh builds carries it (`pip install .` from a clone builds the library alone); or set ZTFS_BIN", kind="io")


def text(value: Any) -> str:
    """A flag's value as the command line takes it: a path as its path,
    anything else as str() gives it."""
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def flags(options: Mapping[str, OptionValue]) -> list[str]:
    """Keyword arguments as flags: ``cache_dir="/c"`` is ``--cache-dir=/c``,
    ``verify=True`` is ``--verify``, ``shard={"a": p}`` is ``--shard=a=p``.
    A value is joined to its flag by ``=``, so that one starting with ``-``
    stays a value."""
    out: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, Mapping):
            out += [f"{flag}={k}={text(v)}" for k, v in value.items()]
        elif isinstance(value, (list, tuple)):
            out += [f"{flag}={text(v)}" for v in value]
        else:
            out.append(f"{flag}={text(value)}")
    return out


def error_of(proc: "subprocess.CompletedProcess[str]") -> Error:
    """The exception for a failed run: from the JSON line ztfs writes last
    on stderr (ZTFS_ERROR_FORMAT=json), else its text (a usage error said
    by the argument parser)."""
    for line in reversed(proc.stderr.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if not isinstance(e, dict) or "error" not in e:
            continue
        cls = {"rejected": Rejected, "refused": Refused, "foreign": Refused}.get(e["error"], Error)
        return cls(e.get("message") or "", kind=e["error"], exit_code=proc.returncode,
                   rule=e.get("rule"), file=e.get("file"))
    text = proc.stderr.strip() or f"ztfs exited with status {proc.returncode}"
    return Error(text, kind="usage" if proc.returncode == 2 else "error", exit_code=proc.returncode)


def run(args: Sequence[str], check: bool = True, timeout: Optional[float] = None) -> "subprocess.CompletedProcess[str]":
    """Runs ztfs with `args`; raises the run's error when it fails and
    `check` is set. Its progress line is never drawn (stderr is a pipe)."""
    env = dict(os.environ, ZTFS_ERROR_FORMAT="json")
    proc = subprocess.run([binary(), *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        raise error_of(proc)
    return proc
