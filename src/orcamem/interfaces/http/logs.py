"""Structured logs for the servers: one JSON object per line on stderr, with the request id.

``orcamem up/serve/proxy`` hand :data:`LOG_CONFIG` to uvicorn, so its own lines and orcamem's
(``orcamem``, ``orcamem.http``: one line per request from ``metrics.Observe``) share one
format; a line written while a request runs carries its ``request_id`` (``metrics.REQUEST_ID``,
a context variable, so it follows the request into the thread that runs a sync route).

The event loop never writes to stderr itself: :class:`QueuedStderr` formats the line where it
is logged (so the request id is the right one) and puts it on a bounded queue; one thread
writes the queue to stderr. A stderr nobody reads (a full pipe) blocks only that thread: the
server keeps answering, lines beyond the queue's capacity are dropped and counted, and the
count is written as a warning line once stderr drains. At shutdown (``drain``) and when the
handler is closed, what is queued is written, waiting at most a few seconds for a stuck stderr.
"""

from __future__ import annotations

import contextlib
import json
import logging
import logging.handlers
import queue
import sys
import threading
import time
import weakref
from datetime import datetime, timezone
from typing import IO, Any

from .metrics import REQUEST_ID

__all__ = ["LOG_CONFIG", "JsonLines", "QueuedStderr", "drain"]

_FIELDS = ("method", "route", "status", "ms")
"""What ``Observe`` adds to its per-request line (``extra=``), copied into the object."""

CAPACITY = 10_000
"""Lines a ``QueuedStderr`` holds while stderr is not read (then it drops and counts them)."""
DRAIN_S = 5.0
"""How long a shutdown waits for queued lines to reach a stderr that is not being read."""


class JsonLines(logging.Formatter):
    """``{"ts", "level", "logger", "pid", "msg", "request_id"?, method/route/status/ms?,
    "error"?}`` (``pid``: which process of ``--workers N`` wrote it)."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "msg": record.getMessage(),
        }
        request_id = REQUEST_ID.get()
        if request_id is not None:
            data["request_id"] = request_id
        data.update({name: getattr(record, name) for name in _FIELDS if hasattr(record, name)})
        if record.exc_info:
            data["error"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


class _Writer(logging.StreamHandler):
    """The listener thread's handler: the formatted line, preceded by a warning line when
    lines were dropped since the last one it wrote."""

    def __init__(self, stream: IO[str], owner: QueuedStderr) -> None:
        super().__init__(stream)
        self.setFormatter(logging.Formatter("%(message)s"))
        self.owner = owner
        self.reported = 0

    def emit(self, record: logging.LogRecord) -> None:
        dropped = self.owner.dropped
        if dropped > self.reported:
            lost = dropped - self.reported
            self.reported = dropped
            note = logging.makeLogRecord(
                {
                    "name": "orcamem.logs",
                    "levelno": logging.WARNING,
                    "levelname": "WARNING",
                    "msg": f"{lost} log line(s) dropped: stderr was not read while "
                    f"{CAPACITY:,} lines were queued",
                }
            )
            super().emit(logging.makeLogRecord({"msg": JsonLines().format(note)}))
        super().emit(record)


class _Listener(logging.handlers.QueueListener):
    def stop(self, timeout: float = DRAIN_S) -> None:
        """Stop after writing what is queued, waiting at most ``timeout`` (a stuck stderr
        must not hang the exit: the thread is a daemon)."""
        thread = self._thread
        if thread is None:
            return
        with contextlib.suppress(queue.Full):
            self.queue.put(self._sentinel, timeout=timeout)
        thread.join(timeout)
        self._thread = None


_OPEN: weakref.WeakSet[QueuedStderr] = weakref.WeakSet()


class QueuedStderr(logging.handlers.QueueHandler):
    """A log handler that never blocks its caller on the stream (see the module doc)."""

    def __init__(self, stream: IO[str] | None = None, capacity: int = CAPACITY) -> None:
        super().__init__(queue.Queue(capacity))
        self.dropped = 0
        self.writer = _Writer(stream if stream is not None else sys.stderr, self)
        self.listener = _Listener(self.queue, self.writer)
        self.listener.start()
        _OPEN.add(self)

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1  # under the handler's lock (Handler.handle)

    def drain(self, timeout: float = DRAIN_S) -> bool:
        """Wait until every queued line is written (at most ``timeout``); whether it was."""
        pending: Any = self.queue
        deadline = time.monotonic() + timeout
        with pending.all_tasks_done:
            while pending.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                pending.all_tasks_done.wait(left)
        return True

    def close(self) -> None:
        self.listener.stop()
        _OPEN.discard(self)
        super().close()


_drain_lock = threading.Lock()


def drain(timeout: float = DRAIN_S) -> None:
    """Write what every open ``QueuedStderr`` holds (the servers call it as they stop: uvicorn
    re-raises SIGTERM once it has shut down, and that exit runs no ``atexit``)."""
    with _drain_lock:
        for handler in list(_OPEN):
            handler.drain(timeout)


LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": JsonLines}},
    "handlers": {
        "stderr": {
            "class": "orcamem.interfaces.http.logs.QueuedStderr",
            "formatter": "json",
            "stream": "ext://sys.stderr",
        }
    },
    "loggers": {
        "orcamem": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        # the access line is orcamem.http's, with the route template, latency and request id
        "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
    },
}
"""uvicorn's ``log_config`` for the servers."""
