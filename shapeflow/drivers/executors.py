"""Where the per-file work of a lint run happens: in this process, in a pool of processes (``-j``),
or as Ray tasks (``--executor ray``). A run is a map of ``run_task`` over files, each task
independent of the others (its file, its options, the cache folder), so each executor only has to
hand tasks out and report each result, with its index, as it completes; the caller puts them in
order. Ray is imported here and only here, and only when asked for.

With Ray, scheduling, retries and data movement are Ray's: a task that raises a worker crash is
retried by Ray (``max_retries``); one that still fails is reported for its file as a rejection
(SF001, exit 2), one that runs past its time limit (``ray.wait`` with a timeout, then
``ray.cancel``) as a limit hit (SF006 ``--task-timeout``, exit 2), and the other files finish.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from .cache import LintCache, settings_digest
from ..errors import EXIT_INTERNAL, LimitExceededError, ModelUnreadableError, ShapeflowError, UsageError
from .linter import FileResult, Linter, LintOptions
from ..rules import rejection_diagnostic

EXECUTORS = ("local", "ray")
Done = Callable[[int, FileResult], None]  # (index of the task, its result), in completion order


@dataclass(frozen=True)
class Task:
    """One file's work: plain, picklable data (the options' progress callback is dropped)."""

    path: str  # as the user gave it: findings name it
    options: LintOptions
    cache: LintCache | None = None
    source: str | None = None  # where to read it, when not at ``path`` (absolute, for Ray workers)


def run_task(task: Task, linter: Linter | None = None) -> FileResult:
    """Lint one file, through the cache when there is one: read it (with every check of
    ``load_model``), hash those bytes, and reuse the entry or lint the bytes and store the result."""
    linter = linter if linter is not None else Linter(task.options)
    if task.cache is None:
        return linter.run(task.path, source=task.source)
    try:
        data = linter.read(task.source or task.path)
    except ShapeflowError:
        return linter.run(task.path, source=task.source)  # unreadable: reported as without a cache, not cached
    key = task.cache.key(data, settings_digest(task.options))
    hit = task.cache.get(key, task.path)
    if hit is not None:
        return hit
    result = linter.run(task.path, data, task.source)
    task.cache.put(key, result)
    return result


def run_serial(tasks: Sequence[Task], done: Done,
               progress: Callable[[int, int, str], None] | None = None) -> None:
    """In this process, in order; one Linter per set of options (its rule list is built once)."""
    linters: dict[LintOptions, Linter] = {}
    for k, task in enumerate(tasks):
        if progress is not None:
            progress(k, len(tasks), task.path)
        linter = linters.get(task.options)
        if linter is None:
            linter = linters[task.options] = Linter(task.options)
        done(k, run_task(task, linter))
    if progress is not None:
        progress(len(tasks), len(tasks), "")


def run_processes(tasks: Sequence[Task], done: Done, jobs: int) -> None:
    """In ``jobs`` processes; each result reported as it completes."""
    if jobs <= 1 or len(tasks) <= 1:
        run_serial(tasks, done)
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
        index = {pool.submit(run_task, _plain(t)): k for k, t in enumerate(tasks)}
        pending = set(index)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(finished, key=index.__getitem__):
                k = index[fut]
                try:
                    result = fut.result()
                except Exception as exc:  # the worker died (killed, out of memory): that file failed
                    result = FileResult(tasks[k].path, exit_code=EXIT_INTERNAL,
                                        error=f"internal error: worker failed: {type(exc).__name__}: {exc}")
                done(k, result)


def import_ray() -> Any:
    """The ``ray`` module; a usage error (exit 2, one line) when it is not installed."""
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install -e '.[ray]'") from None
    return ray


def default_task_timeout(options: LintOptions) -> float:
    """Seconds a Ray task may run: inference has ``--timeout``; reading and the rules get as long
    again, plus a minute for a worker to start."""
    return options.limits.timeout * 2 + 60.0


def run_ray(tasks: Sequence[Task], done: Done, *, address: str | None = None, timeout: float | None = None,
            max_retries: int = 1, fn: Callable[[Task], FileResult] = run_task) -> None:
    """As Ray tasks, on the cluster at ``address`` (or the one this process is connected to, or
    a new local one). At most one task per CPU of the cluster is in flight, so that a task's time
    limit counts from about when it starts; ``fn`` is the task (tests give one that fails)."""
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        import logging

        logging.getLogger("ray").setLevel(logging.ERROR)  # its start-up notices are not lint output
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                 configure_logging=False)
    try:
        remote = ray.remote(num_cpus=1, max_retries=max_retries)(fn)
        window = max(1, int(ray.cluster_resources().get("CPU", 1)))
        queue = list(enumerate(tasks))
        queue.reverse()
        running: dict[Any, tuple[int, float]] = {}  # object ref -> (index, deadline)
        while queue or running:
            while queue and len(running) < window:
                k, task = queue.pop()
                limit = timeout if timeout is not None else default_task_timeout(task.options)
                running[remote.remote(_located(task))] = (k, time.monotonic() + limit)
            nearest = min(deadline for _, deadline in running.values())
            ready, _ = ray.wait(list(running), num_returns=1, timeout=max(0.0, nearest - time.monotonic()))
            for ref in ready:
                k, _ = running.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as exc:  # the worker died and Ray's retries are spent, or the task failed
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                    result = _not_linted(tasks[k].path, f"the Ray task failed ({type(exc).__name__}"
                                                        f"{': ' + first if first else ''})")
                done(k, result)
            now = time.monotonic()
            for ref, (k, deadline) in list(running.items()):
                if deadline <= now and ref not in ready:
                    del running[ref]
                    ray.cancel(ref, force=True)
                    limit = timeout if timeout is not None else default_task_timeout(tasks[k].options)
                    done(k, _timed_out(tasks[k].path, limit))
    finally:
        if started:
            ray.shutdown()


def _not_linted(path: str, why: str) -> FileResult:
    """A file whose task failed: a rejection (SF001, exit 2), as for a file that cannot be read."""
    d = rejection_diagnostic(ModelUnreadableError(f"not linted: {why}", file=path), path)
    return FileResult(path, diagnostics=[d], exit_code=2, rejected=True)


def _timed_out(path: str, limit: float) -> FileResult:
    """A file whose task ran past ``--task-timeout``: a limit (SF006, exit 2), not an unreadable file."""
    exc = LimitExceededError("task-timeout", f"{limit:g} s; the Ray task was cancelled", "--task-timeout", file=path)
    return FileResult(path, diagnostics=[rejection_diagnostic(exc, path)], exit_code=2, rejected=True)


def _plain(task: Task) -> Task:
    """The task without the progress callback (a callable does not cross processes)."""
    return task if task.options.progress is None else replace(task, options=replace(task.options, progress=None))


def _located(task: Task) -> Task:
    """For a Ray worker, whose current directory is its own: the file's absolute path to read
    (a URL stays as it is)."""
    from ..io import is_url

    task = _plain(task)
    if task.source is None and not is_url(task.path):
        task = replace(task, source=os.path.abspath(task.path))
    return task
