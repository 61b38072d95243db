"""The session worker: one thread running a local-memory session's commands in order."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

__all__ = ["SessionWorker"]

log = logging.getLogger("orcamem.local")


class SessionWorker:
    """One thread running the session's commands in order: captures and job passes.

    Idle, it looks for ready jobs every ``poll_s`` (pending, rescheduled, or expired by a dead
    worker); after a transient store or lock failure it looks again after 30 s.
    """

    def __init__(
        self, run_jobs: Callable[[], str] | None, *, poll_s: float, retry_s: float, name: str
    ) -> None:
        self._commands: queue.Queue[Callable[[], None]] = queue.Queue()
        self._run_jobs = run_jobs
        self._poll_s = poll_s
        self._retry_s = retry_s
        self._wait = 0.0
        self._stop = threading.Event()
        self._timers: list[threading.Timer] = []
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, command: Callable[[], None]) -> None:
        if not self._stop.is_set():
            self._commands.put(command)

    def later(self, seconds: float, command: Callable[[], None]) -> None:
        timer = threading.Timer(seconds, self.submit, args=(command,))
        timer.daemon = True
        self._timers = [t for t in self._timers if t.is_alive()] + [timer]
        timer.start()

    def jobs(self) -> None:
        """A job pass as a queued command (after a capture: so a barrier waits for it)."""
        self.submit(self._pass)

    def barrier(self, timeout: float) -> bool:
        reached = threading.Event()
        self.submit(reached.set)
        return reached.wait(timeout)

    def _pass(self) -> None:
        if self._run_jobs is None:
            return
        outcome = self._run_jobs()
        self._wait = self._retry_s if outcome == "store_error" else self._poll_s

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                command = self._commands.get(timeout=self._wait)
            except queue.Empty:
                command = self._pass
            if self._stop.is_set():
                return
            try:
                command()
            except Exception:  # never let the session's worker die silently
                log.exception("local memory worker command failed")
                self._wait = self._retry_s

    def stop(self, timeout: float) -> bool:
        self._stop.set()
        for timer in self._timers:
            timer.cancel()
        self._commands.put(lambda: None)
        self._thread.join(timeout)
        return not self._thread.is_alive()
