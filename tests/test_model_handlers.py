"""Which `try` statements catch the RuntimeError a point of their body raises."""

from textwrap import dedent

from amplint.amp import FileFacts
from amplint.semantic.handlers import leaves_block


def _clip_handlers(code: str):
    facts = FileFacts.from_source(dedent(code))
    site = next(s for s in facts.calls if s.func_text == "clip")
    return facts.handlers.handlers_catching_runtime_error(site.ctx)


def test_runtime_error_exception_bare_and_tuples_catch():
    for clause in ("except RuntimeError:", "except Exception as e:", "except:", "except (ValueError, RuntimeError):",
                   "except builtins.RuntimeError:"):
        found = _clip_handlers(f"try:\n    clip()\n{clause}\n    pass\n")
        assert len(found) == 1, clause


def test_other_exceptions_reraise_and_handler_bodies_do_not_count():
    assert _clip_handlers("try:\n    clip()\nexcept ValueError:\n    pass\n") == []
    assert _clip_handlers("try:\n    clip()\nexcept RuntimeError:\n    log()\n    raise\n") == []
    assert _clip_handlers("try:\n    pass\nexcept RuntimeError:\n    clip()\n") == []
    # the first handler that matches decides: a later one never sees the error
    assert _clip_handlers("try:\n    clip()\nexcept RuntimeError:\n    raise\nexcept Exception:\n    pass\n") == []


def test_innermost_first_and_not_across_functions():
    code = """\
        try:
            for batch in loader:
                try:
                    clip()
                except RuntimeError:
                    continue
        except Exception:
            pass
        """
    found = _clip_handlers(code)
    assert [leaves_block(h) for _, h in found] == [True, False]
    assert _clip_handlers("try:\n    def f():\n        clip()\nexcept RuntimeError:\n    pass\n") == []
