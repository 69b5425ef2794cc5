"""The language server: diagnostics on open/change/save, each fix as a quick fix, and fix-all.

Diagnostics are computed without fix edits (the warm path a keystroke waits for); edits are
computed only when the editor asks for code actions. Settings come from the configuration
that applies to the document's path, as for ``amplint check`` on that file.
"""

from __future__ import annotations

import asyncio
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

import amplint
from amplint.api import lint_document
from amplint.engine import lint_text
from amplint.model import FileError, FileResult
import amplint.lsp.values as values
from amplint.lsp.convert import LspPositions
from amplint.lsp.framing import GuardedStdin
from amplint.lsp.protocol import AmplintProtocol
from amplint.lsp.scheduling import LintScheduler

FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.amplint"
FIX_ALL_TITLE = "Fix all amplint issues"
APPLY_FIX_ALL_COMMAND = "amplint.applyAutofix"


def _lint_for_diagnostics(text: str, filename: str, settings):
    """The lint result, or the exception it raised; run on a worker thread, so it sends nothing."""
    try:
        return lint_document(text, filename, settings, edits=False)
    except RecursionError:
        # The words of `amplint check` (jobs.process_file) for the same text.
        return FileResult(filename, errors=[FileError(filename, f"{filename}: not linted: too deeply nested to lint")])
    except Exception as exc:  # noqa: BLE001 - the editor must keep its server
        return exc


def _without_filename(message: str, filename: str) -> str:
    """``not linted: ...``: the editor already shows which file a diagnostic is in."""
    prefix = f"{filename}: "
    return message[len(prefix) :] if message.startswith(prefix) else message


class AmplintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "amplint",
            amplint.__version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=AmplintProtocol,
        )
        # initializationOptions {"unsafeFixes": true} also offers the unsafe fixes, as
        # `amplint check --unsafe-fixes` does; they change behaviour, so they are opt-in.
        self.unsafe_fixes = False
        self._reported_config_errors: set[str] = set()
        self.lints = LintScheduler(self.publish)

    def filename(self, uri: str) -> str:
        return to_fs_path(uri) or uri

    def settings(self, uri: str):
        from amplint.config import ConfigError
        from amplint.file_settings import directory_of, settings_for_directory

        try:
            return settings_for_directory(directory_of(self.filename(uri)))
        except ConfigError as exc:
            # Once per distinct error: the lookup repeats on every keystroke.
            if str(exc) not in self._reported_config_errors:
                self._reported_config_errors.add(str(exc))
                self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"amplint: {exc}"))
            return None

    def positions(self, text: str) -> LspPositions:
        """Positions in ``text`` in the encoding negotiated at ``initialize`` (announced as ``positionEncoding``)."""
        return LspPositions(text, self.workspace.position_encoding)

    def lint(self, uri: str, edits: bool):
        """(text, result) for the document as the editor holds it, or None if it cannot be linted."""
        document = self.workspace.get_text_document(uri)
        settings = self.settings(uri)
        if settings is None:
            return None
        try:
            return document.source, lint_document(document.source, self.filename(uri), settings, edits=edits)
        except Exception as exc:  # noqa: BLE001 - the editor must keep its server
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=f"amplint: internal error: {exc!r}"))
            return None

    async def publish(self, uri: str) -> None:
        """Lint the document off the event loop and publish, unless it changed meanwhile."""
        document = self.workspace.text_documents.get(unquote(uri))
        if document is None:
            return
        settings = self.settings(uri)
        if settings is None:
            return
        version, text, filename = document.version, document.source, self.filename(uri)
        # A thread, so that requests (code actions on the current text) are answered meanwhile.
        outcome = await asyncio.to_thread(_lint_for_diagnostics, text, filename, settings)
        current = self.workspace.text_documents.get(unquote(uri))
        if current is None or current.version != version or current.source != text:
            return  # the newer text has its own lint scheduled
        if isinstance(outcome, Exception):
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=f"amplint: internal error: {outcome!r}"))
            return
        positions = self.positions(text)
        diagnostics = [values.diagnostic(positions, finding) for finding in outcome.findings]
        for error in outcome.errors:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=error.message))
        # Internal errors (one rule's bug) and warnings leave the findings meaningful, as in api.
        not_linted = [error for error in outcome.errors if not error.internal and not error.warning]
        if not_linted:
            diagnostics.insert(0, values.not_linted(_without_filename(not_linted[0].message, filename)))
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
        )

    def offered(self, applicability: str) -> bool:
        return applicability == "safe" or self.unsafe_fixes

    def fix_all_edit(self, uri: str) -> types.WorkspaceEdit | None:
        document = self.workspace.get_text_document(uri)
        settings = self.settings(uri)
        if settings is None:
            return None
        result = lint_text(document.source, self.filename(uri), settings, fix=True, unsafe=self.unsafe_fixes, edits=False)
        if not result.changed:
            return None
        return self._workspace_edit(document, values.whole_text_edits(self.positions(document.source), result.source or ""))

    @staticmethod
    def _workspace_edit(document, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        identifier = types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=identifier, edits=edits)])

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        wanted = params.context.only
        actions: list[types.CodeAction] = []

        def asked(kind: str) -> bool:
            return not wanted or any(kind == only or kind.startswith(f"{only}.") for only in wanted)

        asked_for = [d for d in params.context.diagnostics if d.source == values.SOURCE]
        if asked(types.CodeActionKind.QuickFix) and asked_for:
            linted = self.lint(uri, edits=True)
            if linted is not None:
                text, result = linted
                positions = self.positions(text)
                document = self.workspace.get_text_document(uri)
                for finding in result.findings:
                    if finding.fix is None or not finding.fix.edits or not self.offered(finding.fix.applicability):
                        continue
                    current = values.diagnostic(positions, finding)
                    matching = [d for d in asked_for if values.same_place(d, current)]
                    if not matching:
                        continue
                    unsafe = " (unsafe)" if finding.fix.applicability == "unsafe" else ""
                    actions.append(
                        types.CodeAction(
                            title=f"amplint ({finding.code}): {finding.fix.message}{unsafe}",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=matching,
                            is_preferred=not unsafe,
                            edit=self._workspace_edit(document, values.text_edits(positions, finding.fix.edits)),
                        )
                    )
        if asked(FIX_ALL_KIND) or (asked(types.CodeActionKind.QuickFix) and asked_for):
            edit = self.fix_all_edit(uri)
            if edit is not None:
                kind = FIX_ALL_KIND if asked(FIX_ALL_KIND) else types.CodeActionKind.QuickFix
                actions.append(types.CodeAction(title=FIX_ALL_TITLE, kind=kind, edit=edit))
        return actions


server = AmplintServer()


@server.feature(types.INITIALIZE)
def _initialize(ls: AmplintServer, params: types.InitializeParams) -> None:
    options = params.initialization_options
    if isinstance(options, dict):
        ls.unsafe_fixes = bool(options.get("unsafeFixes", False))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def _did_open(ls: AmplintServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.lints.schedule(params.text_document.uri, delay=0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def _did_change(ls: AmplintServer, params: types.DidChangeTextDocumentParams) -> None:
    # The text is already updated (AmplintProtocol); only the lint waits for typing to pause.
    ls.lints.schedule(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def _did_save(ls: AmplintServer, params: types.DidSaveTextDocumentParams) -> None:
    # At once: a save may follow a configuration change that the open text did not see.
    ls.lints.schedule(params.text_document.uri, delay=0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def _did_close(ls: AmplintServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.lints.cancel(params.text_document.uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]),
)
def _code_action(ls: AmplintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    return ls.code_actions(params)


@server.command(APPLY_FIX_ALL_COMMAND)
def _apply_fix_all(ls: AmplintServer, *arguments):
    """``workspace/executeCommand amplint.applyAutofix [uri]``: fix the document via workspace/applyEdit."""
    # Arguments stay untyped: pygls would otherwise try to convert them to the annotation.
    uri = arguments[0] if arguments else None
    if isinstance(uri, dict):  # {"uri": ...}, as some clients pass arguments
        uri = uri.get("uri")
    if not isinstance(uri, str):
        return None
    edit = ls.fix_all_edit(uri)
    if edit is not None:
        ls.workspace_apply_edit(types.ApplyWorkspaceEditParams(edit=edit, label=FIX_ALL_TITLE))
    return None


@server.feature(types.SHUTDOWN)
def _shutdown(ls: AmplintServer, params) -> None:
    ls.lints.cancel_all()


def serve() -> None:
    import sys

    from amplint.engine import reuse_statements

    reuse_statements()  # an edit parses again only the statements it touched

    server.start_io(GuardedStdin(sys.stdin.buffer, server.protocol.message_skipped))
