"""A batch split over worker threads that all stop promptly when the caller is interrupted or one part fails."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Stopped(Exception):
    """A worker abandoned its part of the batch: the pass is stopping (Ctrl-C, SIGTERM, or another part failed)."""


def check_stop(stop: threading.Event | None) -> None:
    """Raise Stopped once `stop` is set: a worker calls this between steps of its part."""
    if stop is not None and stop.is_set():
        raise Stopped


def run_parts(run: Callable[[int, threading.Event], T], count: int) -> list[T]:
    """[run(i, stop) for i < count], each on its own thread; on any exception, Ctrl-C included, every worker stops.

    The calling thread waits in short steps, so a signal reaches it at once; it then sets `stop`, which each
    `run` checks between its steps (check_stop), so no worker runs its part to the end. The workers are daemon
    threads, started for this call: an interrupt landing in the middle of starting one cannot leave a thread
    the process would wait for at exit (a thread pool's idle workers are joined at exit).
    """
    stop = threading.Event()
    results: list = [None] * count
    finished: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()

    def work(i: int) -> None:
        try:
            results[i] = run(i, stop)
            finished.put(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, which raises it
            finished.put(exc)

    try:
        for i in range(count):
            threading.Thread(target=work, args=(i,), name=f"tfm-{i}", daemon=True).start()
        for _ in range(count):
            error = _next(finished)
            if error is not None:
                raise error
        return results
    except BaseException:
        stop.set()
        raise


def _next(finished: queue.SimpleQueue) -> BaseException | None:
    while True:
        try:
            return finished.get(timeout=0.1)
        except queue.Empty:
            continue
