"""From ``amplint check``'s flags and the configuration file to the Settings of a run, and
``--show-settings``, which prints them."""

from __future__ import annotations

from pathlib import Path


from amplint.cli.common import Failure, echo


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        out.extend(part.strip().upper() for part in value.split(",") if part.strip())
    return tuple(out)


def _check_selectors(option: str, selectors: tuple[str, ...]) -> None:
    from amplint.settings import SelectionError, expand_selectors, known_codes

    try:
        expand_selectors(selectors, known_codes())
    except SelectionError as exc:
        raise Failure(f"{option}: {exc}") from None


def parse_extensions(values) -> tuple[tuple[str, str], ...]:
    from amplint.config import ConfigError, parse_extensions as parse

    try:
        return parse(values, "--extension")
    except ConfigError as exc:
        raise Failure(str(exc)) from None


def resolve_run_config(paths: list[str], options: dict):
    """The configuration of the run and the path it is searched from (``--isolated``: defaults)."""
    from amplint.config import Config, ConfigError, resolve_config

    if paths and paths[0] != "-":
        start = Path(paths[0])
    elif options["stdin_filename"]:
        start = Path(options["stdin_filename"])
    else:
        start = Path.cwd()
    if options["isolated"]:
        if options["config_path"]:
            raise Failure("--isolated ignores every configuration file and cannot be combined with --config")
        return Config(), start
    try:
        return resolve_config(options["config_path"], start if start.exists() else Path.cwd()), start
    except ConfigError as exc:
        raise Failure(str(exc)) from None


def settings_and_config(paths: list[str], options: dict):
    from amplint.settings import SelectionError, Settings

    config, start = resolve_run_config(paths, options)
    cli_select = _split(options["select"])
    cli_extend = _split(options["extend_select"])
    cli_ignore = _split(options["ignore"] + options["extend_ignore"])
    cli_unfixable = _split(options["unfixable"])
    for option, selectors in (("--select", cli_select), ("--extend-select", cli_extend), ("--ignore", cli_ignore),
                              ("--unfixable", cli_unfixable)):
        _check_selectors(option, selectors)
    target, _ = target_torch_and_origin(config, start, options)
    settings = Settings(
        select=cli_select or (config.select or ()),
        extend_select=(() if cli_select else config.extend_select) + cli_extend,
        ignore=config.ignore + cli_ignore,
        per_file_ignores=config.per_file_ignores,
        target_torch=target,
        target_transformers=target_transformers(config, start, options),
        prefilter=not options["no_prefilter"],
        project_analysis=config.project_analysis and not options.get("no_project", False),
        root=str(config.root.resolve()),
        unfixable=config.unfixable + cli_unfixable,
    )
    try:
        settings.validate()
    except SelectionError as exc:  # pragma: no cover - each part was checked above
        raise Failure(str(exc)) from None
    return settings, config, start


def target_torch_and_origin(config, start: Path, options: dict) -> tuple[tuple[int, int] | None, str]:
    """The run's ``target-torch`` and where it came from: ``--target-torch``, the configuration
    file, or inferred from the project's torch requirement (not under ``--isolated``)."""
    from amplint.config import display_path
    from amplint.settings import SelectionError, parse_torch_version

    if options["target_torch"]:
        try:
            return parse_torch_version(options["target_torch"]), "from --target-torch"
        except SelectionError as exc:
            raise Failure(f"--target-torch: {exc}") from None
    if config.target_torch is not None:
        return config.target_torch, f"from {display_path(config.path) if config.path is not None else 'settings'}"
    if options["isolated"]:
        return None, "--isolated: no project file read"
    from amplint.torch_requirement import infer_for_run

    inferred = infer_for_run(config.path, start if start.exists() else Path.cwd())
    if inferred is None:
        return None, "no target-torch set and no torch lower bound found in the project"
    return inferred.release, inferred.describe()


def target_transformers(config, start: Path, options: dict) -> tuple[int, int] | None:
    """The oldest transformers release the project admits: ``target-transformers``, else its
    transformers requirement (not under ``--isolated``); ``None`` when neither says."""
    if config.target_transformers is not None:
        return config.target_transformers
    if options["isolated"]:
        return None
    from amplint.torch_requirement import infer_for_run

    inferred = infer_for_run(config.path, start if start.exists() else Path.cwd(), "transformers")
    return inferred.release if inferred is not None else None


def extension_map(config, options) -> dict[str, str]:
    """Extension (no dot) -> language, the configuration's ``extension`` table below ``--extension``."""
    return {**dict(config.extension), **dict(parse_extensions(options["extension"]))}


def show_settings(settings, config, options, files, output_format: str, target_origin: str = "") -> None:
    """``--show-settings``: what the first file found would be checked with, as ``key = value`` lines."""
    import json

    from amplint.cli.common import _display
    from amplint.discovery import DEFAULT_EXCLUDE

    first = files[0] if files else None
    target = settings.target_torch
    exclude = options["exclude"] or (config.exclude if config.exclude is not None else DEFAULT_EXCLUDE)
    name = _display(first) if first is not None else None
    rows = [
        ("select", list(settings.select)),
        ("extend-select", list(settings.extend_select)),
        ("ignore", list(settings.ignore)),
        ("unfixable", list(settings.unfixable)),
        ("per-file-ignores", {pattern: list(codes) for pattern, codes in settings.per_file_ignores}),
        ("target-torch", f"{target[0]}.{target[1]}" if target else "newest"),
        ("target-transformers", ".".join(map(str, settings.target_transformers)) if settings.target_transformers else "unknown"),
        ("exclude", list(exclude)),
        ("extend-exclude", [*config.extend_exclude, *options["extend_exclude"]]),
        ("extend-include", [*config.extend_include, *options["extend_include"]]),
        ("extension", extension_map(config, options)),
        ("respect-gitignore", options["respect_gitignore"]),
        ("force-exclude", options["force_exclude"]),
        ("output-format", output_format),
        ("prefilter", settings.prefilter),
        ("project-analysis", settings.project_analysis),
    ]
    enabled = sorted(settings.enabled_codes(str(first) if first is not None else None))
    echo(f"Resolved settings for: {name if name is not None else '(no file found)'}")
    echo(f"Settings path: {config.path if config.path is not None else '(none: defaults)'}")
    echo(f"Project root: {config.root.resolve()}")
    echo(f"Enabled rules: {', '.join(enabled) if enabled else '(none)'}")
    for key, value in rows:
        note = f"  # {target_origin}" if key == "target-torch" and target_origin else ""
        echo(f"{key} = {json.dumps(value)}{note}")
