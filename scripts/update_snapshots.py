"""Refresh fixtures/*/*.py.snap and *.py.fixed after an intended change in a rule.

Usage: python scripts/update_snapshots.py [AMP003 ...]   (then review `git diff fixtures/`)
"""

import sys

from amplint.snapshots import update

if __name__ == "__main__":
    for path in update(codes=tuple(code.upper() for code in sys.argv[1:])):
        print(path)
