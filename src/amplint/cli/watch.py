"""``amplint check --watch``: check, then check again whenever a checked file or the
configuration changes, until Ctrl-C.

Changes are found by polling (size and modification time of every file a run would check, and of
the configuration file), so it needs no file-system notification library. Two environment
variables exist for tests and are not part of the interface: ``AMPLINT_WATCH_INTERVAL`` (seconds
between polls) and ``AMPLINT_WATCH_MAX_RUNS`` (stop after that many checks).
"""

from __future__ import annotations

import os
import sys
import time

import click

from amplint.cli.common import EXIT_OK, Failure, _error

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

DEFAULT_INTERVAL_S = 0.5


def _snapshot(paths: list[str], options: dict) -> dict[str, tuple[int, int]]:
    from amplint.cli.run import find_files
    from amplint.cli.settings import resolve_run_config

    try:
        config, _ = resolve_run_config(paths, options)
    except Failure:
        config = None  # an invalid configuration is reported by the check itself
    stamps: dict[str, tuple[int, int]] = {}
    watched = []
    if config is not None:
        watched.extend(find_files(paths or ["."], config, options).files)
        if config.path is not None:
            watched.append(config.path)
    for path in watched:
        try:
            info = os.stat(path)
        except OSError:
            continue
        stamps[str(path)] = (info.st_mtime_ns, info.st_size)
    return stamps


def watch(paths: list[str], options: dict, run_check: Callable[..., int]) -> int:
    """Run ``run_check(paths, **options)`` now and each time a watched file changes."""
    interval = float(os.environ.get("AMPLINT_WATCH_INTERVAL", DEFAULT_INTERVAL_S))
    max_runs = int(os.environ.get("AMPLINT_WATCH_MAX_RUNS", "0")) or None
    runs = 0
    try:
        while True:
            if sys.stdout.isatty():
                click.clear()
            try:
                run_check(paths, **options)
            except Failure as exc:
                _error(str(exc))
            runs += 1
            # Taken after the run: the files --fix just wrote are not a change to react to.
            before = _snapshot(paths, options)
            if max_runs is not None and runs >= max_runs:
                return EXIT_OK
            click.echo("Watching for file changes (Ctrl-C to stop).", err=True)
            sys.stderr.flush()
            while True:
                time.sleep(interval)
                now = _snapshot(paths, options)
                if now != before:
                    click.echo("File change detected; checking again.", err=True)
                    break
    except KeyboardInterrupt:
        return EXIT_OK  # Ctrl-C is how watch mode ends
