"""A worker process that dies costs only the file it was linting.

A native crash in a parser (libcst's aborts on some input under a memory limit) or the kernel's
OOM killer ends a worker without a Python exception. The pool runs the other files again, runs
each file that was in progress alone, and reports the one whose worker dies again as not linted.
"""

from __future__ import annotations

import os
import signal
import sys

import pytest

from amplint.pool import POOL_THRESHOLD, run_in_pool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks workers that kill themselves")

FATAL = "fatal"


def _square_or_die(job):
    if job == FATAL:
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer, or an abort in native code
    return job * job


def _lost(job, reason):
    return ("lost", job, reason)


def test_only_the_fatal_job_is_lost_and_every_other_result_comes_back():
    jobs = list(range(POOL_THRESHOLD * 3))
    jobs[40] = FATAL
    results = run_in_pool(_square_or_die, jobs, workers=2, parses=False, lost=_lost)
    assert results[40] == ("lost", FATAL, "the worker process linting it was killed by SIGKILL")
    assert [r for i, r in enumerate(results) if i != 40] == [j * j for i, j in enumerate(jobs) if i != 40]


def test_two_fatal_jobs_are_each_lost_on_their_own():
    jobs = list(range(POOL_THRESHOLD * 2))
    jobs[3] = jobs[30] = FATAL
    results = run_in_pool(_square_or_die, jobs, workers=2, parses=False, lost=_lost)
    assert [i for i, r in enumerate(results) if isinstance(r, tuple)] == [3, 30]
    assert all(r == j * j for r, j in zip(results, jobs) if j != FATAL)


def test_without_a_lost_handler_the_broken_pool_is_raised():
    from concurrent.futures.process import BrokenProcessPool

    jobs = [FATAL] + list(range(POOL_THRESHOLD))
    with pytest.raises(BrokenProcessPool):
        run_in_pool(_square_or_die, jobs, workers=2, parses=False)


@pytest.fixture
def crashing_rule():
    """A rule whose check kills its worker process on a file that calls ``crash_here()``."""
    import libcst as cst  # noqa: F401 - the rule module's world

    from amplint.rules.base import RULES, Rule

    class CrashesTheWorker(Rule):
        code = "AMP995"
        name = "test-crashes-the-worker"
        summary = "Test rule that kills its process"
        triggers = (r"crash_here",)

        def check(self):
            if any(site.func_text == "crash_here" for site in self.facts.calls):
                os.kill(os.getpid(), signal.SIGKILL)
            return iter(())

    RULES.pop(CrashesTheWorker.code, None)
    RULES[CrashesTheWorker.code] = CrashesTheWorker
    yield
    RULES.pop(CrashesTheWorker.code, None)


def test_check_reports_the_file_not_linted_and_every_other_finding(cli, files, fake_rules, crashing_rule, tmp_path):
    names = {f"m{i:02}.py": "bad_call()\n" for i in range(POOL_THRESHOLD + 6)}
    names["m07.py"] = "crash_here()\nbad_call()\n"
    files(names)
    run = cli(".", "--select", "AMP991,AMP995", "--no-cache", "-j", "2", "--output-format", "concise")
    assert run.exit_code == 2
    reported = sorted(line.split(":")[0] for line in run.stdout.splitlines() if " AMP991 " in line)
    assert reported == sorted(n for n in names if n != "m07.py")
    assert "amplint: error: m07.py: not linted: the worker process linting it was killed by SIGKILL" in run.stderr
    assert "1 file could not be checked" in run.stdout + run.stderr


def test_fix_fixes_every_other_file_and_leaves_the_fatal_one(cli, files, fake_rules, crashing_rule, tmp_path):
    names = {f"m{i:02}.py": "bad_call()\n" for i in range(POOL_THRESHOLD + 6)}
    names["m07.py"] = "crash_here()\nbad_call()\n"
    files(names)
    run = cli(".", "--select", "AMP991,AMP995", "--no-cache", "-j", "2", "--fix")
    assert run.exit_code == 2
    for name in names:
        expected = "crash_here()\nbad_call()\n" if name == "m07.py" else "good_call()\n"
        assert (tmp_path / name).read_text() == expected, name
    assert "m07.py: not linted" in run.stderr
