"""Refresh fixtures/*/*.py.snap and *.py.fixed after an intended change in a rule.

Usage: python scripts/update_snapshots.py [AMP003 ...]   (then review `git diff fixtures/`)
"""

import sys
from pathlib import Path

# The snapshot code lives with the tests that check it: it needs a source checkout.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from snapshots import update  # noqa: E402

if __name__ == "__main__":
    for path in update(codes=tuple(code.upper() for code in sys.argv[1:])):
        print(path)
