"""The server's stdin as pygls reads it, minus headers whose ``Content-Length`` it must not trust.

pygls (``pygls.io_.run_async``) reads each ``Content-Length: N`` header and then ``N`` bytes in
one call: ``Content-Length: 99999999999`` allocates that much and kills the server, and a
negative or non-numeric length leaves it reading the body as headers, so the next message is
lost too. pygls reads only through ``readline`` and ``read``, so this wrapper is the one place
to check a header before pygls acts on it:

- a length above :data:`MAX_CONTENT_LENGTH`, or not a number, is rewritten into a header pygls
  ignores, so no body is read for it, and the reason goes to ``on_reject``;
- a header line that follows left-over bytes on the same line (the unread body of a rejected
  message) is cut back to the header, so the next message is read as sent.
"""

from __future__ import annotations

import logging
from typing import BinaryIO, Callable

# Far above any document an editor sends (amplint lints source files, not data), far below
# what would exhaust memory when pygls reads the body in one piece.
MAX_CONTENT_LENGTH = 64 * 1024 * 1024
# A line without an end is read in pieces of this size, never whole.
MAX_HEADER_LINE = 64 * 1024

_CONTENT_LENGTH = b"content-length:"
# Not a header pygls knows: it skips the line, and with no length it reads no body.
_REJECTED = b"X-Amplint-Rejected-Content-Length: 1\r\n"

logger = logging.getLogger(__name__)


class GuardedStdin:
    def __init__(self, stream: BinaryIO, on_reject: Callable[[str], None]) -> None:
        self._stream = stream
        self._on_reject = on_reject

    def readline(self) -> bytes:
        line = self._stream.readline(MAX_HEADER_LINE)
        if not line.endswith(b"\n"):
            return line
        start = line.lower().rfind(_CONTENT_LENGTH)
        if start < 0:
            return line
        value = line[start + len(_CONTENT_LENGTH) :].strip()
        # The length check first: int() refuses digit strings past a few thousand digits.
        if value.isdigit() and len(value) <= len(str(MAX_CONTENT_LENGTH)) and int(value) <= MAX_CONTENT_LENGTH:
            # The exact form pygls matches, whatever the spacing or line end the client used.
            return b"Content-Length: %d\r\n" % int(value)
        shown = value[:40].decode("ascii", "replace")
        if value.isdigit():
            reason = f"Content-Length {shown} is over amplint's limit of {MAX_CONTENT_LENGTH} bytes"
        else:
            reason = f"Content-Length {shown!r} is not a byte count"
        reason += "; the message is skipped"
        logger.error("amplint: %s", reason)
        self._on_reject(reason)
        return _REJECTED

    def read(self, size: int) -> bytes:
        # pygls asks only for lengths that readline let through.
        return self._stream.read(size)
