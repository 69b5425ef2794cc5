"""The ``amplint`` command line's entry point.

A plain ``amplint [check] PATHS [OPTIONS]`` is read by ``cli.fastparse`` and run without
importing click: that is the command pre-commit and editors start many times a day. Everything
else (help, errors, the other commands) goes to the click group in ``cli.group``. The commands
live in ``cli.check`` (with ``cli.options``, ``cli.settings``, ``cli.run``, ``cli.watch``) and
``cli.commands`` (``rules``, ``rule``, ``server``, ``clean``, ``version``).

The engine, the reporters and the runtime companion are imported when a command needs them
(``amplint --version`` imports no rule, and nothing here ever imports torch).
"""

from __future__ import annotations

import os
import sys

from amplint.cli.common import COMMANDS, EXIT_ERROR, EXIT_INTERRUPTED, _error, _refuse_mistyped_command
from amplint.cli.spec import OUTPUT_FORMATS  # noqa: F401  (kept importable here)

_GROUP_OPTIONS = frozenset({"-h", "--help", "--version"})


def _plain_check(args: list[str]) -> tuple[list[str], dict] | None:
    """The parsed arguments of a ``check`` that needs no click, or None."""
    if args and args[0] == "check":
        args = args[1:]
    elif args and (args[0] in COMMANDS or args[0] in _GROUP_OPTIONS):
        return None
    elif args:
        _refuse_mistyped_command(args[0])
    from amplint.cli.fastparse import parse_check_arguments

    return parse_check_arguments(args)


def _import_check_modules() -> None:
    """Import what every ``check`` run uses, reusing the compiled code of their dataclasses."""
    from amplint.dataclass_code import reused_dataclass_code
    from amplint.gc_policy import importing

    with importing(), reused_dataclass_code("startup"):
        import amplint.cli.check  # noqa: F401
        import amplint.discovery  # noqa: F401
        import amplint.engine  # noqa: F401
        import amplint.project.phase  # noqa: F401
        import amplint.report  # noqa: F401


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        parsed = _plain_check(args)
        if parsed is not None:
            _import_check_modules()
            from amplint.cli.check import check_entry

            check_entry(*parsed)
        from amplint.cli.group import main_group

        main_group.main(args=args, prog_name="amplint")
    except KeyboardInterrupt:
        _error("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback (AMPLINT_DEBUG=1 shows it)
        if os.environ.get("AMPLINT_DEBUG"):
            raise
        _error(f"internal error: {type(exc).__name__}: {exc} (set AMPLINT_DEBUG=1 for a traceback)")
        sys.exit(EXIT_ERROR)


def console_main() -> None:
    """The ``amplint`` command (and ``python -m amplint``): ``main`` in a process of its own."""
    from amplint.gc_policy import start_short_command

    start_short_command()
    main()


def __getattr__(name: str):
    # `from amplint.cli.main import main_group` (tests, embedding code) still works, importing click then.
    if name in ("main_group", "AmplintGroup", "check_command"):
        import amplint.cli.group

        return getattr(amplint.cli.group, name)
    raise AttributeError(f"module 'amplint.cli.main' has no attribute {name!r}")


if __name__ == "__main__":  # pragma: no cover
    console_main()
