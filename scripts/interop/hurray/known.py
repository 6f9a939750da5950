"""The Hurray allowlist: files of corpus/hurray/valid/ that pyhurray 0.1.0
refuses to load, each with the reason (like zt/known.py for zTensor). A valid
corpus file pyhurray refuses and that is not listed fails the run; an entry
that excused nothing is listed at the end of the run.

Keys are file names relative to corpus/hurray/valid/.
"""

from __future__ import annotations

HURRAY_KNOWN: dict[str, str] = {
    # "name.hrry": "why pyhurray refuses a file the spec says is valid (cite the spec section)",
}
