"""The command line: ``amplint`` and its subcommands (the entry point is :mod:`amplint.cli.main`).

One way through: ``spec``/``options`` (what may be written) -> ``settings`` (configuration
merged with the command line) -> discovery (:mod:`amplint.discovery`) -> ``run``/``check`` ->
the reporters (:mod:`amplint.report`). This ``__init__`` imports nothing, so that importing a
part of the command line costs only that part.
"""
