"""pygls' protocol, with ranged ``didChange`` events applied by :mod:`amplint.lsp.convert`,
and the messages :mod:`amplint.lsp.framing` skipped reported to the client.

pygls applies a ranged change on ``str.splitlines`` lines (so after a form feed it edits the
wrong line) and, when a character is past its idea of the line's end, rewrites the client's
range in place. Each ranged change is applied here instead, on LSP lines in the negotiated
encoding, and pygls only ever receives the whole new text.
"""

from __future__ import annotations

import queue
from urllib.parse import unquote

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method

from amplint.lsp.convert import LspPositions


class AmplintProtocol(LanguageServerProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._skipped_messages: "queue.SimpleQueue[str]" = queue.SimpleQueue()

    def message_skipped(self, reason: str) -> None:
        """Called on pygls' reader thread; the report waits for the event loop, which owns the writer."""
        self._skipped_messages.put(reason)

    def handle_message(self, message):
        # The reader resumes on the loop right after a skipped header, with the next message.
        while not self._skipped_messages.empty():
            reason = self._skipped_messages.get()
            self.notify(types.WINDOW_LOG_MESSAGE, types.LogMessageParams(type=types.MessageType.Error, message=f"amplint: {reason}"))
        return super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        # Keyed as pygls keys its documents; an unknown one is left to pygls to report.
        document = self.workspace.text_documents.get(unquote(params.text_document.uri))
        if document is not None:
            text = document.source
            for change in params.content_changes:
                if isinstance(change, types.TextDocumentContentChangePartial):
                    text = LspPositions(text, self.workspace.position_encoding).replace(change.range, change.text)
                else:
                    text = change.text
            whole = [types.TextDocumentContentChangeWholeDocument(text=text)]
            params = types.DidChangeTextDocumentParams(text_document=params.text_document, content_changes=whole)
        return (yield from super().lsp_text_document__did_change(params))
