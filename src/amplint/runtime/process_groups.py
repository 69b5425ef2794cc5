"""Ending every process a run started, so nothing the script forked outlives verify.

Each run lives in a process group of its own; what the script spawns (``subprocess``,
``multiprocessing``, DataLoader workers) inherits it, so ending the group ends them, even once
the run itself is gone and they were re-parented to init. torchrun puts each rank in a session
of its own, so for DDP the groups of torchrun's descendants are ended as well.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Iterable

# how long a process may take to end on SIGTERM (a DataLoader worker, a script's own handler)
# before it is killed
KILL_GRACE_S = 2.0

_POLL_S = 0.05


class Terminated(Exception):
    """verify received SIGTERM or SIGHUP; the runs have been stopped."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def raise_terminated(signum: int, frame: object) -> None:
    """A signal handler: unwind like Ctrl-C does, so every ``finally`` stops runs and removes files."""
    raise Terminated(signum)


def end_groups(pgids: Iterable[int], grace: float = KILL_GRACE_S, exclude_self: bool = False) -> None:
    """SIGTERM every process in these groups, then SIGKILL whatever is still alive after ``grace``."""
    pgids = set(pgids)
    if not pgids or (exclude_self and not sys.platform.startswith("linux")):
        return  # without /proc the other members of our own group cannot be told from us
    _signal_groups(pgids, signal.SIGTERM, exclude_self)
    deadline = time.monotonic() + grace
    while any(_group_alive(g, exclude_self) for g in pgids) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    _signal_groups(pgids, signal.SIGKILL, exclude_self)


def end_process_tree(pid: int, grace: float = KILL_GRACE_S) -> None:
    """End ``pid``'s group and the groups of all its descendants (a launcher whose children
    start sessions of their own, as torchrun's ranks do)."""
    end_groups({pid, *descendant_groups(pid)}, grace)


def descendant_groups(pid: int) -> set[int]:
    table = _process_table()
    children: dict[int, list[int]] = {}
    for child, (_, ppid, _) in table.items():
        children.setdefault(ppid, []).append(child)
    groups: set[int] = set()
    pending = list(children.get(pid, []))
    while pending:
        current = pending.pop()
        groups.add(table[current][2])
        pending.extend(children.get(current, []))
    return groups


def become_group_leader() -> None:
    """Make this process lead a group, so ending it later cannot reach the launcher's group."""
    if os.getpgrp() != os.getpid():
        try:
            os.setpgid(0, 0)
        except OSError:
            pass


def _signal_groups(pgids: set[int], sig: int, exclude_self: bool) -> None:
    for pgid in pgids:
        if not exclude_self:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            continue
        for member in _members(pgid):  # killpg would reach this process too
            if member != os.getpid():
                try:
                    os.kill(member, sig)
                except (ProcessLookupError, PermissionError):
                    pass


def _group_alive(pgid: int, exclude_self: bool) -> bool:
    if sys.platform.startswith("linux"):
        return any(not exclude_self or m != os.getpid() for m in _members(pgid))
    try:
        os.killpg(pgid, 0)  # counts zombies too: at worst the grace is waited out
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _members(pgid: int) -> list[int]:
    """The live (not zombie) processes of a group; Linux only, empty elsewhere."""
    return [pid for pid, (state, _, group) in _process_table().items() if group == pgid and state != "Z"]


def _process_table() -> dict[int, tuple[str, int, int]]:
    """pid -> (state, ppid, pgid) from /proc; empty where there is no /proc."""
    table: dict[int, tuple[str, int, int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:  # ended while we looked
            continue
        # the command name, in parentheses, may itself contain spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) >= 3:
            table[int(name)] = (fields[0], int(fields[1]), int(fields[2]))
    return table
