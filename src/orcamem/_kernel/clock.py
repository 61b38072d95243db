"""Time, injectable: every stored time is UTC ISO-8601 with ``Z``; tests move a ``FrozenClock``."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Literal, Protocol

from ..errors import InvalidInputError

__all__ = ["Clock", "FrozenClock", "SystemClock", "format_time", "parse_time", "stamp"]


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """The machine's wall clock."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of wall time."""
        time.sleep(max(seconds, 0.0))


class FrozenClock:
    """A clock that only moves when told to (for tests and replays)."""

    def __init__(self, start: datetime | str) -> None:
        self._now = parse_time(start) if isinstance(start, str) else start.astimezone(timezone.utc)

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> None:
        self._now += timedelta(**delta)

    def sleep(self, seconds: float) -> None:
        """Waiting on a frozen clock moves it: ``seconds`` pass at once."""
        self._now += timedelta(seconds=max(seconds, 0.0))


def format_time(moment: datetime, *, digits: Literal[3, 6] = 6) -> str:
    """``2026-10-17T09:30:00.000000Z``: UTC, fixed width, so strings sort like times.

    ``digits``: of the fraction of a second, cut (not rounded) to 3 for the millisecond stamps
    the Markdown store's files and log are specified with (``2026-10-17T09:30:00.000Z``).
    A naive ``moment`` is taken as UTC. The year is always four digits (``0999-01-01T…``), so
    every year datetime holds (1–9999) keeps the fixed width.
    """
    if digits not in (3, 6):
        raise InvalidInputError(f"digits={digits!r}: use 6 (microseconds) or 3 (milliseconds)")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    m = moment.astimezone(timezone.utc)
    fraction = f"{m.microsecond:06d}"[:digits]
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
        f".{fraction}Z"
    )


def stamp(clock: Clock) -> str:
    """``clock``'s now as a stored time (:func:`format_time`): what every write records."""
    return format_time(clock.now())


def parse_time(value: str | datetime) -> datetime:
    """Parse ISO-8601 (``Z`` or offset; naive means UTC) into an aware UTC datetime.

    Raises:
        ValueError: when the text is not an ISO-8601 time.
    """
    if isinstance(value, datetime):
        moment = value
    else:
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)
