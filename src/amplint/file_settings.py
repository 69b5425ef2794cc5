"""The Settings ``amplint check`` would use for one file, from the configuration found upward.

For integrations that are handed one file at a time (flake8, the language server) instead of
the command line's paths and flags.
"""

from __future__ import annotations

from pathlib import Path

from amplint.settings import Settings


def settings_for_directory(directory: str | Path, respect_noqa: bool = True) -> Settings:
    """Settings from the nearest ``amplint.toml`` / ``[tool.amplint]`` at or above ``directory``,
    with ``target-torch`` inferred from the project's torch requirement when the file sets none.

    Raises :class:`amplint.config.ConfigError` (a one-line message) for an invalid file.
    """
    from amplint.config import resolve_config

    config = resolve_config(None, Path(directory))
    target = config.target_torch
    if target is None:
        from amplint.torch_requirement import infer_for_run

        inferred = infer_for_run(config.path, Path(directory))
        target = inferred.release if inferred is not None else None
    transformers = config.target_transformers
    if transformers is None:
        from amplint.torch_requirement import infer_for_run

        inferred = infer_for_run(config.path, Path(directory), "transformers")
        transformers = inferred.release if inferred is not None else None
    return Settings(
        select=config.select or (),
        extend_select=config.extend_select,
        ignore=config.ignore,
        per_file_ignores=config.per_file_ignores,
        target_torch=target,
        target_transformers=transformers,
        root=str(config.root.resolve()),
        respect_noqa=respect_noqa,
        unfixable=config.unfixable,
        project_analysis=config.project_analysis,
    )


def directory_of(filename: str) -> Path:
    """Where to look for the configuration of ``filename``; the current directory for a
    name that is not a path on disk (flake8's "stdin", an editor's unsaved buffer)."""
    parent = Path(filename).parent
    return parent if str(parent) not in ("", ".") and parent.is_dir() else Path.cwd()
