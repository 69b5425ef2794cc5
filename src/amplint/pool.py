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


def run_in_pool(process_file: Callable, jobs: Sequence, workers: int | None = None, parses: bool = True) -> list:
    """``process_file`` over ``jobs``, in parallel when it pays off; results in input order.

    ``parses``: the jobs are engine ``Job``s that parse with libcst (the project pass's summaries
    use only ``ast`` and need nothing imported before the fork)."""
    workers = workers or default_jobs()
    if workers <= 1 or len(jobs) < POOL_THRESHOLD:
        return [process_file(job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    context = multiprocessing.get_context(method)
    if method == "fork" and parses:
        _import_parsing(jobs)
    chunk = max(1, min(32, len(jobs) // (workers * 8) or 1))
    from amplint import worker_lifetime

    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=worker_lifetime.init_worker, initargs=(os.getpid(),)
    )
    restore_hook = None
    try:
        return list(pool.map(process_file, jobs, chunksize=chunk))
    except BaseException:
        # Ctrl-C or a failure: files not yet started are left alone, a write in progress completes.
        restore_hook = quiet_thread_errors(getattr(pool, "_executor_manager_thread", None))
        worker_lifetime.stop_workers(pool)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
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
