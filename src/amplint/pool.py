"""The process pool for many files: workers that die with their parent, and Ctrl-C that lets a
write in progress finish."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


# Below this many files a process pool costs more than it saves.
POOL_THRESHOLD = 24


def _import_parsing(jobs: Sequence) -> None:
    """Import libcst, the facts and the enabled rules once, before forking workers.

    A run this large almost always parses some file; imported here, the workers share the
    modules instead of each importing them again.
    """
    from amplint.parsing_modules import import_parsing_modules
    from amplint.selection import rules_for

    import_parsing_modules()
    for settings in {job.settings for job in jobs}:
        rules_for(settings.enabled_codes())


def run_in_pool(process_file: Callable, jobs: Sequence, workers: int | None = None, parses: bool = True,
                lost: Callable[[object, str], object] | None = None, cost: Callable[[object], int] | None = None) -> list:
    """``process_file`` over ``jobs``, in parallel when it pays off; results in input order.

    ``parses``: the jobs are engine ``Job``s that parse with libcst (the project pass's summaries
    use only ``ast`` and need nothing imported before the fork). ``cost``: a job's expected cost
    (a file's size), by which the jobs are handed out, dearest first (:func:`_chunked`).

    A worker that dies (a native crash in a parser, the kernel's OOM killer) costs only the job
    it was running: the others are run again in a fresh pool, each job that was in progress when
    the pool broke is then run alone, and a job whose worker dies again gives ``lost(job,
    reason)``. Without ``lost`` the pool's ``BrokenProcessPool`` is raised."""
    workers = workers or default_jobs()
    if workers <= 1 or len(jobs) < POOL_THRESHOLD:
        return [process_file(job) for job in jobs]
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    context = multiprocessing.get_context(method)
    if method == "fork" and parses:
        _import_parsing(jobs)
    progress = context.Array("b", len(jobs), lock=False)  # per job: 0 waiting, 1 started, 2 done
    results: list = [_MISSING] * len(jobs)
    waiting = list(range(len(jobs)))
    if cost is not None:
        costs = [cost(job) for job in jobs]
        waiting.sort(key=lambda index: -costs[index])
    while waiting:
        suspects = _run_round(process_file, jobs, waiting, results, progress, workers, context)
        for index in suspects:
            results[index] = _run_alone(process_file, jobs[index], progress, index, context, lost)
        waiting = [i for i in waiting if results[i] is _MISSING]
    return results


def run_apart(process_file: Callable, jobs: Sequence) -> list:
    """``process_file`` over ``jobs`` in one child process; results in input order.

    For the writes of ``--fix``: a ``kill -9`` of the parent leaves the child to finish the file it
    is writing (worker_lifetime.py) instead of cutting it off between the temporary file's name
    and its rename. Without ``fork`` the jobs run here.
    """
    import multiprocessing

    if not jobs or "fork" not in multiprocessing.get_all_start_methods():
        return [process_file(job) for job in jobs]
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("fork")
    progress = context.Array("b", len(jobs), lock=False)
    indices = list(range(len(jobs)))
    try:
        with _torn_down_on_error(_new_pool(1, context, progress)) as pool:
            return pool.submit(_run_chunk, process_file, indices, list(jobs)).result()
    except BrokenProcessPool:
        # The child died: what it had not started is run here, what it had is run again (a
        # write already done then finds the file changed and leaves it).
        return [process_file(job) for job in jobs]


_MISSING = object()
_progress = None  # a worker's view of the run's per-job progress (set by _init_worker)


def _init_worker(parent_pid: int, progress, memory_ceiling: int | None = None) -> None:
    global _progress
    import amplint.worker_lifetime as worker_lifetime
    from amplint.worker_memory import limit_this_process

    _progress = progress
    worker_lifetime.init_worker(parent_pid)
    limit_this_process(memory_ceiling)


def _run_chunk(process_file: Callable, indices: list[int], jobs: list) -> list:
    """In a worker: the jobs of one chunk, each marked started and done in the shared progress."""
    out = []
    for index, job in zip(indices, jobs):
        _progress[index] = 1
        out.append(process_file(job))
        _progress[index] = 2
    return out


def _new_pool(workers: int, context, progress):
    from concurrent.futures import ProcessPoolExecutor

    from amplint.worker_memory import MemorySettingError, ceiling_for

    try:
        ceiling = ceiling_for(workers)
    except MemorySettingError:
        ceiling = None  # the command line reports a bad setting before any pool starts
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                               initargs=(os.getpid(), progress, ceiling))


def _run_round(process_file, jobs, waiting: list[int], results: list, progress, workers: int, context) -> list[int]:
    """Run ``waiting`` in one pool, filling ``results``; the jobs in progress if the pool broke."""
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool

    for index in waiting:
        progress[index] = 0
    chunks = _chunked(waiting, workers)
    with _torn_down_on_error(_new_pool(workers, context, progress)) as pool:
        futures = {pool.submit(_run_chunk, process_file, chunk, [jobs[i] for i in chunk]): chunk for chunk in chunks}
        try:
            for future in as_completed(futures):
                for index, result in zip(futures[future], future.result()):
                    results[index] = result
        except BrokenProcessPool:
            left = [i for i in waiting if results[i] is _MISSING]
            started = [i for i in left if progress[i] == 1]
            # Nothing had started (a worker died on its way up): every job left is run alone.
            return started or left
    return []


def _chunked(waiting: list[int], workers: int) -> list[list[int]]:
    """``waiting`` cut into the chunks handed to workers, in order.

    A chunk is at most 32 jobs (fewer round trips) and at most an eighth of a worker's share of
    what is left, so the chunks shrink towards the end of the run: the last ones, a job or two,
    let every worker finish at about the same time. With the jobs ordered dearest first (the
    largest files) the dear ones are spread over the workers from the start instead of meeting
    in one chunk at the end."""
    chunks = []
    at = 0
    while at < len(waiting):
        size = max(1, min(32, (len(waiting) - at) // (workers * 8)))
        chunks.append(waiting[at:at + size])
        at += size
    return chunks


def _run_alone(process_file, job, progress, index: int, context, lost):
    from concurrent.futures.process import BrokenProcessPool

    progress[index] = 0
    with _torn_down_on_error(_new_pool(1, context, progress)) as pool:
        future = pool.submit(_run_chunk, process_file, [index], [job])
        processes = list(getattr(pool, "_processes", {}).values())
        try:
            return future.result()[0]
        except BrokenProcessPool:
            if lost is None:
                raise
            return lost(job, _death(processes))


def _death(processes) -> str:
    import time

    for process in processes:
        process.join(5)
        # The pool's manager thread may reap the process first: its exit code then lands on the
        # shared object a moment later, and our own wait sees none.
        for _ in range(100):
            if process.exitcode is not None:
                break
            time.sleep(0.01)
        code = process.exitcode
        if code is not None and code < 0:
            import signal

            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return f"the worker process linting it was killed by {name}"
        if code:
            return f"the worker process linting it exited with status {code}"
    return "the worker process linting it died"


class _torn_down_on_error:
    """The pool, shut down on the way out; on Ctrl-C or a failure, files not yet started are left
    alone and a write in progress completes."""

    def __init__(self, pool) -> None:
        self.pool = pool

    def __enter__(self):
        return self.pool

    def __exit__(self, kind, error, traceback) -> None:
        import amplint.worker_lifetime as worker_lifetime

        restore_hook = None
        if kind is not None:
            restore_hook = quiet_thread_errors(getattr(self.pool, "_executor_manager_thread", None))
            worker_lifetime.stop_workers(self.pool)
            self.pool.shutdown(wait=False, cancel_futures=True)
        try:
            self.pool.shutdown(wait=True)
        finally:
            if restore_hook is not None:
                restore_hook()


def quiet_thread_errors(thread) -> Callable[[], None]:
    """Drop tracebacks of ``thread`` until the returned function is called.

    Workers stopped under the pool's manager thread can make it fail on a queue or pipe the
    shutdown already closed; its traceback would land after the run's one-line error."""
    import threading

    previous = threading.excepthook

    def hook(args) -> None:
        if thread is None or args.thread is not thread:
            previous(args)

    threading.excepthook = hook

    def restore() -> None:
        if threading.excepthook is hook:
            threading.excepthook = previous

    return restore
