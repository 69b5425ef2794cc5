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


def test_fix_writes_nothing_when_a_worker_died_and_reports_the_files_as_they_are(cli, files, fake_rules, crashing_rule, tmp_path):
    names = {f"m{i:02}.py": "bad_call()\n" for i in range(POOL_THRESHOLD + 6)}
    names["m07.py"] = "crash_here()\nbad_call()\n"
    files(names)
    run = cli(".", "--select", "AMP991,AMP995", "--no-cache", "-j", "2", "--fix", "--output-format", "concise")
    assert run.exit_code == 2
    for name in names:
        assert (tmp_path / name).read_text() == names[name], name
    assert "m07.py: not linted" in run.stderr
    assert "amplint: warning: no fixes written: 1 file could not be checked (pass --partial-fixes" in run.stderr
    reported = sorted(line.split(":")[0] for line in run.stdout.splitlines() if " AMP991 " in line)
    assert reported == sorted(n for n in names if n != "m07.py")  # as they are on disk: unfixed


def test_partial_fixes_fixes_every_other_file_and_leaves_the_fatal_one(cli, files, fake_rules, crashing_rule, tmp_path):
    names = {f"m{i:02}.py": "bad_call()\n" for i in range(POOL_THRESHOLD + 6)}
    names["m07.py"] = "crash_here()\nbad_call()\n"
    files(names)
    run = cli(".", "--select", "AMP991,AMP995", "--no-cache", "-j", "2", "--fix", "--partial-fixes")
    assert run.exit_code == 2
    for name in names:
        expected = "crash_here()\nbad_call()\n" if name == "m07.py" else "good_call()\n"
        assert (tmp_path / name).read_text() == expected, name
    assert "m07.py: not linted" in run.stderr
    assert "no fixes written" not in run.stderr


@pytest.fixture
def memory_hungry_rule():
    """A rule that asks for 3 GiB on a file that calls ``eat_memory()``."""
    from amplint.rules.base import RULES, Rule

    class EatsMemory(Rule):
        code = "AMP988"
        name = "test-eats-memory"
        summary = "Test rule that allocates past any worker's ceiling"
        triggers = (r"eat_memory",)

        def check(self):
            if any(site.func_text == "eat_memory" for site in self.facts.calls):
                bytearray(3 * 1024**3)
            return iter(())

    RULES.pop(EatsMemory.code, None)
    RULES[EatsMemory.code] = EatsMemory
    yield
    RULES.pop(EatsMemory.code, None)


def test_a_file_past_the_worker_memory_ceiling_is_not_linted_and_the_others_are(
    cli, files, fake_rules, memory_hungry_rule, monkeypatch
):
    monkeypatch.setenv("AMPLINT_WORKER_MEMORY", "1G")
    names = {f"m{i:02}.py": "bad_call()\n" for i in range(POOL_THRESHOLD + 6)}
    names["m03.py"] = "eat_memory()\nbad_call()\n"
    files(names)
    run = cli(".", "--select", "AMP991,AMP988", "--no-cache", "-j", "2", "--output-format", "concise")
    assert run.exit_code == 2
    reported = sorted(line.split(":")[0] for line in run.stdout.splitlines() if " AMP991 " in line)
    assert reported == sorted(n for n in names if n != "m03.py"), run
    assert (
        "amplint: error: m03.py: not linted: it needs more memory than a worker may use (AMPLINT_WORKER_MEMORY)"
        in run.stderr
    )


def test_the_worker_memory_ceiling_is_shared_out_and_set_by_the_environment():
    from amplint.worker_memory import FLOOR_BYTES, MemorySettingError, ceiling_for, parse_size, physical_memory

    assert parse_size("512M") == 512 * 1024**2 and parse_size("4GiB") == 4 * 1024**3 and parse_size("1024") == 1024
    assert ceiling_for(4, {"AMPLINT_WORKER_MEMORY": "0"}) is None
    assert ceiling_for(4, {"AMPLINT_WORKER_MEMORY": "3G"}) == 3 * 1024**3
    assert ceiling_for(10**6, {}) == FLOOR_BYTES
    assert ceiling_for(1, {}) == max(FLOOR_BYTES, physical_memory())
    with pytest.raises(MemorySettingError, match="AMPLINT_WORKER_MEMORY='lots' is not a size"):
        parse_size("lots")


def test_a_bad_memory_setting_is_a_one_line_error(cli, files, monkeypatch):
    monkeypatch.setenv("AMPLINT_WORKER_MEMORY", "lots")
    files({"a.py": "x = 1\n"})
    run = cli("check", "a.py", "--no-cache")
    assert (run.exit_code, run.stderr) == (2, "amplint: error: AMPLINT_WORKER_MEMORY='lots' is not a size such as 512M or 4G\n")
