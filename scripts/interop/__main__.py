"""Entry point: `python -m interop` (scripts/interop.sh runs it so)."""

import sys

from .main import main

if __name__ == "__main__":
    sys.exit(main())
