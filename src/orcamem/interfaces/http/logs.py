"""Structured logs for the servers: one JSON object per line on stderr, with the request id.

``orcamem up/serve/proxy`` hand :data:`LOG_CONFIG` to uvicorn, so its own lines and orcamem's
(``orcamem``, ``orcamem.http``: one line per request from ``metrics.Observe``) share one
format; a line written while a request runs carries its ``request_id`` (``metrics.REQUEST_ID``,
a context variable, so it follows the request into the thread that runs a sync route).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import Any

from .metrics import REQUEST_ID

__all__ = ["LOG_CONFIG", "JsonLines"]

_FIELDS = ("method", "route", "status", "ms")
"""What ``Observe`` adds to its per-request line (``extra=``), copied into the object."""


class JsonLines(logging.Formatter):
    """``{"ts", "level", "logger", "msg", "request_id"?, method/route/status/ms?, "error"?}``."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        request_id = REQUEST_ID.get()
        if request_id is not None:
            data["request_id"] = request_id
        data.update({name: getattr(record, name) for name in _FIELDS if hasattr(record, name)})
        if record.exc_info:
            data["error"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": JsonLines}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
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
