"""Running ztfs: the `Ztfs` wrapper (one subprocess a call, counted and
timed), the rule named in a rejection, and how a command is quoted in a
message.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from typing import Optional


class Ztfs:
    def __init__(self, binary: str, timeout: float):
        self.binary = binary
        self.timeout = timeout
        self.calls = 0
        self.seconds = 0.0

    def run(self, sub: str, positional: list, flags: tuple = ()) -> tuple[int, bytes, bytes]:
        """Runs `ztfs SUB FLAGS... [--] POSITIONAL...`. Object and part names
        may start with '-', so `--` goes before the positionals then (clap
        treats everything after it as positional)."""
        argv = [self.binary, sub, *flags]
        if any(a.startswith("-") for a in positional):
            argv.append("--")
        argv += positional
        t0 = time.monotonic()
        self.calls += 1
        try:
            cp = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return 124, b"", f"timed out after {self.timeout}s".encode()
        except OSError as e:
            return 127, b"", str(e).encode()
        finally:
            self.seconds += time.monotonic() - t0
        return cp.returncode, cp.stdout, cp.stderr


REJECT_RE = re.compile(r"rejected \((\w+)\)")


def stderr_rule(err: bytes) -> Optional[str]:
    m = REJECT_RE.search(err.decode("utf-8", "replace"))
    return m.group(1) if m else None


def cmd_desc(*args) -> str:
    return "ztfs " + " ".join(json.dumps(a, ensure_ascii=True) if (
        not a or any(c in a for c in " \t\n\"'\\") or not a.isascii()) else a for a in args)
