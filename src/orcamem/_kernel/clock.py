"""Time, injectable: every stored time is UTC ISO-8601 with ``Z``; tests move a ``FrozenClock``."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Literal, Protocol

from ..errors import InvalidInputError
from .text import shown

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


def parse_time(value: str | datetime, *, what: str = "time") -> datetime:
    """Parse ISO-8601 (``Z`` or offset; naive means UTC) into an aware UTC datetime.

    ``what`` names the value in the error. Every year ``datetime`` holds (0001–9999) parses,
    as long as its UTC form does too (``0001-01-01T00:00:00+01:00`` falls before year 1).

    Raises:
        InvalidInputError: not an ISO-8601 time, or outside the years 0001–9999 in UTC.
    """
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInputError(
                f"{what}={shown(value)} is not an ISO-8601 time: use e.g. "
                "'2026-10-17T09:30:00Z' (years 0001-9999)"
            ) from None
    else:
        raise InvalidInputError(
            f"{what}={shown(value)} is not an ISO-8601 time: pass a string such as "
            "'2026-10-17T09:30:00Z' or a datetime"
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:
        raise InvalidInputError(
            f"{what}={shown(value)} is outside the years 0001-9999 (UTC) that orcamem stores: "
            "pass a time between '0001-01-01T00:00:00Z' and '9999-12-31T23:59:59Z'"
        ) from None
