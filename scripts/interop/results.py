"""Results: the pass count, the failures and the notes of one run, each
failure and note printed as it happens; and `short`, how ztfs output is
quoted in a message.
"""

from __future__ import annotations


class Results:
    def __init__(self):
        self.passed = 0
        self.failures: list[str] = []
        self.notes: list[str] = []

    def ok(self):
        self.passed += 1

    def fail(self, where: str, what: str):
        line = f"FAIL {where}: {what}"
        self.failures.append(line)
        print(line, flush=True)

    def check(self, cond: bool, where: str, what: str) -> bool:
        if cond:
            self.ok()
        else:
            self.fail(where, what)
        return cond

    def note(self, line: str):
        self.notes.append(line)
        print(line, flush=True)


def short(b: bytes, n: int = 160) -> str:
    s = b.decode("utf-8", "replace").strip()
    return s if len(s) <= n else s[:n] + "..."
