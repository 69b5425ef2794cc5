"""prefilter -> parse -> facts -> rules -> suppressions -> fixes, for one source text.

Files (reading, notebooks, writing fixes, the worker pool) are :mod:`amplint.jobs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import amplint.noqa as noqa
from amplint.model import (
    FileError,
    FileResult,
    Finding,
    Location,
    Severity,
)
from amplint.selection import codes_to_run, focus_tokens_for, may_have_findings, rules_for
from amplint.settings import PARSE_ERROR_CODE, Settings

# libcst (and the positions and fixes built on it) is imported where a file is parsed: a run
# whose files all fail the prefilter never needs it.
TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    import libcst as cst

    from amplint.positions import Positions
    from amplint.project.context import ProjectContext
    from amplint.project.deferred import DeferredContext


# A :class:`~amplint.statement_reuse.StatementReuse` while a long-lived process (the language
# server) lints the same documents again and again: each parse reuses the statements of earlier
# parses whose text is unchanged. ``None``: every text is parsed whole.
_statement_reuse = None


def reuse_statements() -> None:
    """From now on, parse each text reusing what earlier parses made of its unchanged statements
    (the trees are the same; an edit costs the parse of the statements it touched)."""
    global _statement_reuse
    from amplint.statement_reuse import StatementReuse

    _statement_reuse = StatementReuse()


# --------------------------------------------------------------------------- one pass of linting


@dataclass
class _Pass:
    """The result of linting one text once: findings plus the live fixes behind them."""

    findings: list[Finding] = field(default_factory=list)
    fixes: list[tuple[Finding, object]] = field(default_factory=list)  # (finding, amplint.fix.Fix)
    module: cst.Module | None = None
    positions: Positions | None = None
    errors: list[FileError] = field(default_factory=list)
    parsed_text: str = ""  # what libcst parsed: the text, or its focused form


def _location(position) -> tuple[Location, Location]:
    return (
        Location(position.start.line, position.start.column + 1),
        Location(position.end.line, position.end.column + 1),
    )


def syntax_error_finding(row: int, column: int, message: str, filename: str) -> Finding:
    return Finding(
        code=PARSE_ERROR_CODE,
        message=message,
        filename=filename,
        location=Location(row, column),
        end_location=Location(row, column),
        severity=Severity.ERROR,
    )


def _python_syntax_error(error: SyntaxError, filename: str) -> Finding:
    """AMP000 where the running Python reports the error, with its message."""
    return syntax_error_finding(error.lineno or 1, error.offset or 1, f"SyntaxError: {error.msg}", filename)


def _python_stage(
    text: str, filename: str, settings: Settings, codes: frozenset[str], focus: bool,
    project: ProjectContext | DeferredContext | None, result: _Pass, gated: frozenset[str] | None = None,
) -> tuple[frozenset[str], str, object] | None:
    """What Python's own ``ast`` decides before libcst: the syntax verdict, the rules the gates
    leave to run, the guard against nesting libcst cannot parse, the focused text, the outline.
    ``None`` (with ``result`` told why, if anything is to tell) when libcst need not parse."""
    from amplint.syntaxcheck import MAX_EXPRESSION_DEPTH, expression_depth, python_view

    view = python_view(text, filename)
    if view.error is not None:
        # Python's verdict wins: code libcst accepts but this Python rejects is not linted or fixed.
        result.findings.append(_python_syntax_error(view.error, filename))
        return None
    if view.gave_up is not None:
        result.errors.append(FileError(filename, f"{filename}: not linted: nested too deeply ({view.gave_up})"))
        return None
    tree = view.tree
    run_codes = codes_to_run(text, settings, codes)
    if gated is not None and settings.prefilter:
        run_codes = gated  # asked of the text's logical lines already: the same answer
    elif settings.prefilter and tree is not None:
        from amplint.rule_gates import codes_that_may_report

        # The prefilter's second stage: a file where no rule can report is not parsed with libcst.
        may_report = codes_that_may_report(run_codes, tree, text=text, **_gate_project(project))
        if not may_report and run_codes:
            return None
        run_codes = may_report
    # What libcst's parser would take minutes over; a file the gates leave no rule to run is not
    # asked, as it is not parsed.
    if tree is not None and (depth := expression_depth(tree, text)) > MAX_EXPRESSION_DEPTH:
        result.errors.append(FileError(
            filename, f"{filename}: not linted: an expression is nested {depth} levels deep, "
            f"more than amplint's parser handles in reasonable time ({MAX_EXPRESSION_DEPTH})",
        ))
        return None
    parsed_text = text
    if focus and settings.prefilter:
        # The tokens of the rules left to run: a definition only a ruled-out rule needs is blanked.
        tokens = focus_tokens_for(run_codes)
        if tokens is not None:
            from amplint.focus import focus_source

            parsed_text = focus_source(text, tokens, tree) or text
    # The file's own summary is read from its facts when a rule first asks, with the outline
    # (definitions, signatures, imports) of the whole text: the focused parse keeps every
    # definition a summary can record something of. The project is asked about in practice only
    # by files that hold a GradScaler (or, without the prefilter, by any file: every rule runs):
    # their outline is read from the ast at hand, before it is released; any other file's is
    # parsed again only if a rule asks. (The ast itself is released with this function's frame:
    # kept during the libcst parse, every garbage collection would walk its objects again.)
    outline = None
    if tree is not None:
        from amplint.project.asking import mentions_scaler
        from amplint.project.outline import outline_of
        from amplint.project.quiet_parse import parse

        if not settings.prefilter or mentions_scaler(text):
            outline = outline_of(tree)
        else:
            outline = lambda: outline_of(parse(text))  # noqa: E731
    return run_codes, parsed_text, outline


def _lint_once(
    text: str, filename: str, settings: Settings, codes: frozenset[str], focus: bool = False,
    project: ProjectContext | DeferredContext | None = None, gated: frozenset[str] | None = None,
) -> _Pass:
    from amplint.gc_policy import building_tree

    result = _Pass()
    # Python's ast of the file is built, asked and released with the collector paused: it holds
    # no reference cycle, and released before the collector runs again it is never traversed
    # (a file the gates rule out, most files parsed at all, costs its parse and walk alone).
    with building_tree():
        stage = _python_stage(text, filename, settings, codes, focus, project, result, gated)
    if stage is None:
        return result
    run_codes, parsed_text, outline = stage
    # Imported only past Python's verdict: a file with a syntax error never needs libcst.
    from amplint.parsing_modules import import_parsing_modules

    import_parsing_modules()
    import libcst as cst

    from amplint.amp import FileFacts
    from amplint.cst_parse import parse_module
    from amplint.positions import Positions

    result.parsed_text = parsed_text
    try:
        with building_tree():
            module = parse_module(parsed_text) if _statement_reuse is None else _statement_reuse.parse(parsed_text)
    except cst.ParserSyntaxError as exc:
        # Python accepted the text (its verdict came first): this is a limit of amplint's
        # parser, not an error in the code, so the file is "not linted", never AMP000.
        result.errors.append(FileError(
            filename, f"{filename}: not linted: amplint's parser (libcst) cannot read this file, which Python "
            f"accepts ({' '.join(exc.message.split())})",
        ))
        return result
    except RecursionError:
        result.errors.append(FileError(filename, f"{filename}: too deeply nested to parse"))
        return result
    positions = Positions(module, parsed_text)  # computed on first use: most parsed files have no finding
    result.module, result.positions = module, positions
    try:
        facts = FileFacts(module, positions, filename, settings, project if settings.project_analysis else None)
        if outline is not None:
            from amplint.amp.summaries import module_summary
            from amplint.project.query import ProjectView

            known = outline
            facts.project = ProjectView(
                facts, lambda: module_summary(facts, known if not callable(known) else known()),
                project if settings.project_analysis else None,
            )
    except MemoryError:
        raise  # the file is past the memory it may take: reported "not linted" by the caller
    except Exception as exc:  # noqa: BLE001 - one broken file must not stop the run
        result.errors.append(FileError(filename, f"{filename}: internal error while reading facts: {type(exc).__name__}: {exc}", internal=True))
        return result
    facts.suppressions = suppressions = noqa.SuppressionLog(noqa.FileDirectives(text), codes, settings.respect_noqa)
    # sorted is stable: the rules that read the suppressions come last, in code order.
    for rule_class in sorted(rules_for(run_codes), key=lambda rule: rule.after_other_rules):
        try:
            violations = list(rule_class(facts).check())
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - report the rule and keep the others running
            result.errors.append(
                FileError(filename, f"{filename}: internal error in rule {rule_class.code}: {type(exc).__name__}: {exc}", internal=True)
            )
            continue
        for violation in violations:
            start, end = violation.span or _location(positions[violation.node])
            noqa_row = positions[violation.noqa_node or violation.node].start.line
            if suppressions.suppress(noqa_row, violation.code):
                continue
            finding = Finding(
                code=violation.code,
                message=violation.message,
                filename=filename,
                location=start,
                end_location=end,
                severity=rule_class.severity,
                no_fix_reason=violation.no_fix_reason,
                noqa_row=noqa_row,
            )
            result.findings.append(finding)
            if violation.fix is not None and settings.fixable(violation.code):
                result.fixes.append((finding, violation.fix))
    return result


# --------------------------------------------------------------------------- public, in-memory


def _settings(settings: Settings | None) -> Settings:
    return settings if settings is not None else Settings()


def _gate_project(project: ProjectContext | DeferredContext | None) -> dict:
    """What the rule gates are told of the project: whether the file is linted with one, and how
    to ask whether an asked import may build a GradScaler (a deferred context's answer)."""
    return {"with_project": project is not None, "project_builds_scaler": getattr(project, "may_build_any_scaler", None)}


def gated_unparsed(text: str, filename: str, settings: Settings,
                   project: ProjectContext | DeferredContext | None = None) -> frozenset[str] | None:
    """The codes the rule gates leave to run on ``text``, asked of its logical lines without
    parsing it (:func:`ruled_out_unparsed`); ``None`` where they cannot be asked so."""
    if not settings.prefilter:
        return None
    codes = codes_to_run(text, settings, settings.enabled_codes(filename))
    if not codes:
        return None
    from amplint.rule_gates import codes_that_may_report_from_text

    return codes_that_may_report_from_text(codes, text, **_gate_project(project))


def ruled_out_unparsed(text: str, filename: str, settings: Settings,
                       project: ProjectContext | DeferredContext | None = None) -> bool:
    """No enabled rule can report on ``text``: the rule gates say so of the logical lines that can
    set their flags, cut from the text without parsing it (:func:`~amplint.rule_gates.codes_that_may_report_from_text`).
    Python's syntax verdict is then not asked either, so only a file found in a directory is
    asked this (as only such a file is skipped by the prefilter without a syntax check)."""
    may_report = gated_unparsed(text, filename, settings, project)
    return may_report is not None and not may_report


def lint_text(
    text: str, filename: str, settings: Settings, fix: bool = False, unsafe: bool = False, edits: bool = True,
    project: ProjectContext | DeferredContext | None = None, gated: frozenset[str] | None = None,
) -> FileResult:
    """Lint (and with ``fix``, fix) one text; deeply nested code is handled on a deep stack.
    ``gated``: the codes the rule gates leave to run on this very text, with this project, when
    already asked (:func:`gated_unparsed`): they are not asked again of its whole tree."""
    from amplint.deepstack import run_with_deep_stack

    if not may_have_findings(text, settings, filename):
        return FileResult(filename=filename, source=text, skipped=True)
    return run_with_deep_stack(_lint_text, text, filename, settings, fix, unsafe, edits, project, gated)


def _lint_text(
    text: str, filename: str, settings: Settings, fix: bool = False, unsafe: bool = False, edits: bool = True,
    project: ProjectContext | DeferredContext | None = None, gated: frozenset[str] | None = None,
) -> FileResult:
    original = text
    codes = settings.enabled_codes(filename)
    result = FileResult(filename=filename, source=text)
    if fix:
        from amplint.fix.apply import fix_text

        new_text, applied = fix_text(
            text, lambda current, focus: _lint_once(current, filename, settings, codes, focus=focus, project=project), unsafe)
        if new_text != text:
            result.original_source = text
            result.source = new_text
            result.fixed_count = applied
        text = new_text
    lint = _lint_once(text, filename, settings, codes, focus=True, project=project, gated=gated if text is original else None)
    if lint.module is not None:
        from amplint.fix.fix_info import attach_fix_info

        attach_fix_info(lint.module, lint.fixes, lint.parsed_text, edits, lint.positions)
    result.findings = sorted(lint.findings, key=Finding.sort_key)
    result.errors = lint.errors
    return result


def lint_source(code: str, path: str = "<stdin>", settings: Settings | None = None) -> list[Finding]:
    """Findings for one source text, as ``amplint check`` would report them."""
    return lint_text(code, path, _settings(settings)).findings


def fix_source(code: str, path: str = "<stdin>", settings: Settings | None = None, unsafe: bool = False) -> str:
    """The text after applying every available fix (``unsafe`` ones too when asked)."""
    result = lint_text(code, path, _settings(settings), fix=True, unsafe=unsafe)
    return result.source if result.source is not None else code
