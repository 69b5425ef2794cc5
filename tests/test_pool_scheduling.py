"""How the pool hands out files: dearest first, in chunks that shrink towards the end, and the
results still in input order."""

from __future__ import annotations

import os
import sys

import pytest

from amplint.jobs import Job, _file_size
from amplint.pool import POOL_THRESHOLD, _chunked, run_in_pool
from amplint.settings import Settings


@pytest.mark.parametrize("count", [1, 7, 24, 100, 3447])
@pytest.mark.parametrize("workers", [1, 2, 16])
def test_chunks_cover_every_job_once_in_order_and_shrink_towards_the_end(count, workers):
    waiting = list(range(count))
    chunks = _chunked(waiting, workers)
    assert [index for chunk in chunks for index in chunk] == waiting
    sizes = [len(chunk) for chunk in chunks]
    assert all(1 <= size <= 32 for size in sizes)
    assert sizes == sorted(sizes, reverse=True)
    # The last chunks hold one job each: no worker is left with a large chunk while the others idle.
    assert sizes[-1] == 1


def test_a_large_run_is_not_handed_out_one_job_at_a_time():
    chunks = _chunked(list(range(3447)), 2)
    assert len(chunks) < 400
    assert len(chunks[0]) == 32


def _pid_and_square(job):
    return os.getpid(), job * job


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks workers")
def test_results_come_back_in_input_order_whatever_the_cost_order():
    jobs = list(range(POOL_THRESHOLD * 4))
    results = run_in_pool(_pid_and_square, jobs, workers=2, parses=False, cost=lambda job: job % 7)
    assert [square for _, square in results] == [job * job for job in jobs]


def test_the_dearest_jobs_are_handed_out_first(monkeypatch):
    import amplint.pool as pool

    handed: list[int] = []

    def run_round(process_file, jobs, waiting, results, progress, workers, context):
        handed.extend(waiting)
        for index in waiting:
            results[index] = process_file(jobs[index])
        return []

    monkeypatch.setattr(pool, "_run_round", run_round)
    jobs = list(range(POOL_THRESHOLD * 8))
    sizes = {5: 900, 60: 700, 120: 800, 170: 1000}
    results = run_in_pool(_pid_and_square, jobs, workers=2, parses=False, cost=lambda job: sizes.get(job, 1))
    assert handed[:4] == [170, 5, 120, 60]
    assert handed[4:] == [job for job in jobs if job not in sizes]  # the rest in input order
    assert [square for _, square in results] == [job * job for job in jobs]


def test_a_jobs_cost_is_its_files_size_and_nothing_for_a_file_that_is_gone(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("x = 1\n" * 10)
    assert _file_size(Job(str(path), Settings())) == 60
    assert _file_size(Job(str(tmp_path / "gone.py"), Settings())) == 0
