"""pygls' protocol, with ranged ``didChange`` events applied by :mod:`amplint.lsp.convert`.

pygls applies a ranged change on ``str.splitlines`` lines (so after a form feed it edits the
wrong line) and, when a character is past its idea of the line's end, rewrites the client's
range in place. Each ranged change is applied here instead, on LSP lines in the negotiated
encoding, and pygls only ever receives the whole new text.
"""

from __future__ import annotations

from urllib.parse import unquote

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method

from amplint.lsp.convert import LspPositions


class AmplintProtocol(LanguageServerProtocol):
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
