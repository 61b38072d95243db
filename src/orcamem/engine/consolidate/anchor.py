"""Calendar anchoring in code: relative time expressions resolved against when a line was said.

A model never does date arithmetic here (DESIGN principle 4). ``anchor("last week", said_at,
zone)`` gives the day it points to in the user's zone; ``find_when(text)`` picks the time
expression out of a sentence. Unknown expressions give ``None``: the claim keeps no date
rather than a guessed one.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..._kernel.clock import parse_time
from ...errors import InvalidInputError

__all__ = ["anchor", "find_when", "local_day", "zone"]

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MONTHS = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10}  # fmt: skip
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

_WHEN_RE = re.compile(
    r"\b(?:today|tonight|this morning|this evening|yesterday|the day before yesterday|tomorrow"
    r"|(?:last|this|next|on) (?:week|weekend|month|year|" + "|".join(_WEEKDAYS) + r")"
    r"|(?:\d+|" + "|".join(_NUMBERS) + r") (?:day|week|month|year)s? ago"
    r"|in (?:" + "|".join(_MONTHS) + r")(?: \d{4})?|in (?:19|20)\d\d"
    r"|on (?:" + "|".join(_WEEKDAYS) + r"))\b",
    re.IGNORECASE,
)


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (e.g. ``Asia/Kolkata``), with a clear error if unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInputError(
            f"unknown time zone {name!r}: use an IANA name such as 'UTC' or 'Asia/Kolkata'"
        ) from None


def local_day(said_at: str | datetime, tz: ZoneInfo) -> date:
    """The calendar day in the user's zone at the moment a line was said.

    At the ends of the calendar (``0001-01-01`` west of UTC, ``9999-12-31`` east of it) the
    local day does not exist in ``datetime``: the UTC day is used.
    """
    moment = parse_time(said_at)
    try:
        return moment.astimezone(tz).date()
    except OverflowError:
        return moment.date()


def find_when(text: str) -> str:
    """The first relative or calendar time expression in ``text`` (lower-cased), or ``""``."""
    found = _WHEN_RE.search(text)
    return found.group(0).lower() if found else ""


def anchor(expression: str, said_at: str | datetime, tz: ZoneInfo) -> date | None:
    """Resolve a time expression to a day, counted from the local day it was said.

    ``last week``/``last month``/``last year`` point one unit back, ``next …`` one unit on;
    ``last Tuesday`` is the latest Tuesday strictly before that day, ``next Tuesday`` the first
    strictly after, ``on Tuesday`` the latest on or before it; ``in March`` is the latest March
    that has begun by then (its first day); ``in 2022`` is 1 January 2022.
    """
    text = " ".join(expression.lower().split())
    today = local_day(said_at, tz)
    simple = {
        "today": 0, "tonight": 0, "this morning": 0, "this evening": 0, "yesterday": -1,
        "the day before yesterday": -2, "tomorrow": 1, "this week": 0, "this weekend": 0,
        "last week": -7, "next week": 7, "last weekend": -7, "next weekend": 7,
        "last month": -30, "next month": 30, "last year": -365, "next year": 365,
        "this month": 0, "this year": 0,
    }  # fmt: skip
    if text in simple:
        return today + timedelta(days=simple[text])
    ago = re.fullmatch(r"(\d+|\w+) (day|week|month|year)s? ago", text)
    if ago:
        count = int(ago.group(1)) if ago.group(1).isdigit() else _NUMBERS.get(ago.group(1))
        if count is None:
            return None
        return today - timedelta(days=count * _UNIT_DAYS[ago.group(2)])
    weekday = re.fullmatch(r"(last|next|on|this) (" + "|".join(_WEEKDAYS) + r")", text)
    if weekday:
        target = _WEEKDAYS.index(weekday.group(2))
        back = (today.weekday() - target) % 7
        if weekday.group(1) == "last":
            return today - timedelta(days=back or 7)
        if weekday.group(1) == "next":
            ahead = (target - today.weekday()) % 7
            return today + timedelta(days=ahead or 7)
        return today - timedelta(days=back)
    month = re.fullmatch(r"in (" + "|".join(_MONTHS) + r")(?: (\d{4}))?", text)
    if month:
        number = _MONTHS.index(month.group(1)) + 1
        if month.group(2):
            return date(int(month.group(2)), number, 1)
        year = today.year if number <= today.month else today.year - 1
        return date(year, number, 1)
    year = re.fullmatch(r"in ((?:19|20)\d\d)", text)
    if year:
        return date(int(year.group(1)), 1, 1)
    return None
