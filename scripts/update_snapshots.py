"""Refresh fixtures/*/*.py.snap and *.py.fixed after an intended change in a rule.

Usage: python scripts/update_snapshots.py   (then review `git diff fixtures/`)
"""

from amplint.snapshots import update

if __name__ == "__main__":
    for path in update():
        print(path)
