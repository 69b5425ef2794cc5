"""Read an ordinary ``amplint check`` command line without importing click.

pre-commit and editors start amplint on a file or two many times a day, and importing click
costs more than deciding that a file has nothing to report. This parser reads the command lines
people type and tools generate, with the option table of ``cli.spec``, and gives exactly the
values click would. Anything else (``--help``, an unknown or misspelt option, a value click
would refuse, grouped short flags, shell completion) returns None, and click reads the command
line instead, with its messages and help. A test compares both parsers on many command lines.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from amplint.cli.spec import CHECK_OPTIONS, MULTIPLE, SWITCH, VALUE, CheckOption


def _spellings() -> dict[str, tuple[CheckOption, bool]]:
    table: dict[str, tuple[CheckOption, bool]] = {}
    for option in CHECK_OPTIONS:
        for name in option.names:
            table[name] = (option, True)
        for name in option.off_names:
            table[name] = (option, False)
    return table


_SPELLINGS = _spellings()


def _path_accepted(value: str, option: CheckOption | None) -> bool:
    """Whether click.Path (readable; ``option``'s file/dir rules) takes ``value`` as it is."""
    try:
        mode = os.stat(value).st_mode
    except (OSError, ValueError):
        return True  # click takes a path that does not exist, unchanged
    if option is not None and not option.file_okay and stat.S_ISREG(mode):
        return False
    if option is not None and not option.dir_okay and stat.S_ISDIR(mode):
        return False
    return os.access(value, os.R_OK)


def _accepted(option: CheckOption, value: str):
    """``value`` converted as click's type for ``option`` converts it, or None when click refuses it."""
    if option.choices is not None:
        return value if value in option.choices else None
    if option.minimum is not None:
        try:
            number = int(value)
        except ValueError:
            return None
        return number if number >= option.minimum else None
    if option.is_path and not _path_accepted(value, option):
        return None
    return value


def parse_check_arguments(args: list[str], environ: Mapping[str, str] = os.environ) -> tuple[list[str], dict] | None:
    """``(paths, options)`` as click would pass them to ``amplint check``, or None: let click read it."""
    if any(name.startswith("_AMPLINT_COMPLETE") for name in environ):
        return None
    values: dict[str, object] = {option.dest: option.default for option in CHECK_OPTIONS}
    given: set[str] = set()
    paths: list[str] = []
    position = 0
    while position < len(args):
        token = args[position]
        position += 1
        if token == "--":
            paths.extend(args[position:])
            break
        if token == "-" or not token.startswith("-"):
            paths.append(token)
            continue
        if token.startswith("--"):
            name, equals, attached = token.partition("=")
        else:
            name, attached = token[:2], token[2:]
            equals = "=" if attached else ""
        found = _SPELLINGS.get(name)
        if found is None:
            return None  # unknown, --help, or something click alone explains
        option, turn_on = found
        if not option.takes_value:
            if equals:
                return None  # `--fix=yes`, `-qv`: click's error or its grouped flags
            values[option.dest] = turn_on if option.kind == SWITCH else True
            continue
        if equals:
            raw = attached
        elif position < len(args) and not args[position].startswith("-"):
            raw = args[position]
            position += 1
        else:
            return None  # a missing value, or one that looks like an option: click decides
        value = _accepted(option, raw)
        if value is None:
            return None
        given.add(option.dest)
        if option.kind == MULTIPLE:
            values[option.dest] = (*values[option.dest], value)  # type: ignore[misc]
        else:
            values[option.dest] = value
    for option in CHECK_OPTIONS:
        if option.kind == VALUE and option.envvar is not None and option.dest not in given:
            raw = environ.get(option.envvar)
            if raw:  # click ignores an empty variable
                value = _accepted(option, raw)
                if value is None:
                    return None
                values[option.dest] = value
    if not all(_path_accepted(path, None) for path in paths):
        return None
    return paths, values

