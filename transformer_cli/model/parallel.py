"""A batch split over worker threads that all stop promptly when the caller is interrupted or one part fails; and
the threads a pass running alone in its thread may give one long attention."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
_PASS = threading.local()  # .threads: the threads the pass running in this thread may give one attention
STOP_WAIT = 10.0  # seconds to wait for a stopping worker; it stops at its next check, well within a second


def run_parts(run: Callable[[int, threading.Event], T], count: int) -> list[T]:
    """[run(i, stop) for i < count], each on its own thread; on any exception, Ctrl-C included, every worker stops.

    The calling thread waits in short steps, so a signal reaches it at once; it then sets `stop`, which each
    `run` checks between its steps (check_stop), and waits for the workers before raising: none runs its part
    to the end, and none is still in BLAS while the interpreter shuts down (that crashed, SIGSEGV). They are
    daemon threads started for this call, so a thread left over from an interrupt never keeps the process.
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

    threads = [threading.Thread(target=work, args=(i,), name=f"tfm-{i}", daemon=True) for i in range(count)]
    try:
        for thread in threads:
            thread.start()
        for _ in range(count):
            error = _next(finished)
            if error is not None:
                raise error
        return results
    except BaseException:
        stop.set()
        for thread in threads:
            if thread.is_alive():
                thread.join(timeout=STOP_WAIT)
        raise


def _next(finished: queue.SimpleQueue) -> BaseException | None:
    while True:
        try:
            return finished.get(timeout=0.1)
        except queue.Empty:
            continue


class PassThreads:
    """While a pass runs in this thread alone (a batch of one part), its attentions may use `threads` threads."""

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def __enter__(self) -> None:
        self.kept, _PASS.threads = getattr(_PASS, "threads", 1), self.threads

    def __exit__(self, *exc: object) -> None:
        _PASS.threads = self.kept


def pass_threads() -> int:
    """The threads the pass running in this thread may give one attention (1 but inside PassThreads)."""
    return int(getattr(_PASS, "threads", 1))
