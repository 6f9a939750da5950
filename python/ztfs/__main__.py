"""`python -m ztfs ARGS`: the ztfs program with ARGS."""

import os
import sys

from ._run import binary

if __name__ == "__main__":
    exe = binary()
    os.execv(exe, [exe, *sys.argv[1:]])
