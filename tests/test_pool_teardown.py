"""A pool torn down by Ctrl-C or a failure prints nothing of its own after the run's error."""

from __future__ import annotations

import threading

import pytest

from amplint.pool import quiet_thread_errors


@pytest.fixture
def reported(monkeypatch) -> list[str]:
    """Names of the threads whose exceptions reach the hook that was in place before."""
    names: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: names.append(args.thread.name))
    return names


def _boom() -> None:
    raise OSError("handle is closed")


def _run(thread: threading.Thread) -> None:
    thread.start()
    thread.join()


def test_only_the_quieted_thread_is_silenced(reported):
    manager = threading.Thread(target=_boom, name="manager")
    restore = quiet_thread_errors(manager)
    try:
        _run(manager)
        _run(threading.Thread(target=_boom, name="other"))
    finally:
        restore()
    assert reported == ["other"]


def test_the_previous_hook_comes_back(reported):
    before = threading.excepthook
    quiet_thread_errors(threading.Thread()).__call__()
    assert threading.excepthook is before
    _run(threading.Thread(target=_boom, name="after"))
    assert reported == ["after"]
