"""Calendar anchoring in code: relative time expressions resolved against when a line was said.

A model never does date arithmetic here (DESIGN principle 4). ``span("last week", said_at,
zone)`` gives the days it covers in the user's zone (``anchor``: the first of them);
``find_when(text)`` picks the time expression out of a sentence. Unknown expressions give
``None``: the claim keeps no date rather than a guessed one.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ...errors import InvalidInputError
from ..clock import parse_time

__all__ = ["anchor", "find_when", "local_day", "span", "zone"]

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
    r"|(?:last|this past|this|next|on) (?:week|weekend|month|year|" + "|".join(_WEEKDAYS) + r")"
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
    """The first day of ``span(expression, said_at, tz)``, or ``None``."""
    found = span(expression, said_at, tz)
    return found[0] if found else None


def _month(year: int, month: int) -> tuple[date, date]:
    following = date(year + month // 12, month % 12 + 1, 1)
    return date(year, month, 1), following - timedelta(days=1)


def _shift_month(day: date, months: int) -> tuple[date, date]:
    index = day.year * 12 + day.month - 1 + months
    return _month(index // 12, index % 12 + 1)


def span(expression: str, said_at: str | datetime, tz: ZoneInfo) -> tuple[date, date] | None:
    """Resolve a time expression to the days it covers (first, last), counted from the local
    day it was said: an expression names a range, and a range is kept, not a guessed day.

    Weeks run Monday to Sunday: ``last week`` is the whole previous week; ``last weekend`` the
    latest Saturday and Sunday that ended before the day it was said (never a weekday),
    ``this``/``next weekend`` the coming one and the one after. ``last month``/``year`` are the
    previous calendar month or year; ``in March`` the latest March that has begun by then, all
    of it; ``in 2022`` all of 2022. ``last Tuesday`` is the latest Tuesday strictly before that
    day, ``next Tuesday`` the first strictly after, ``on Tuesday`` the latest on or before it;
    ``3 days ago``, ``yesterday``, ``tomorrow`` are single days; ``two weeks ago`` is that
    week, ``three months ago`` that calendar month, ``five years ago`` that calendar year.
    """
    text = " ".join(expression.lower().split()).replace("this past ", "last ")
    today = local_day(said_at, tz)
    days = {
        "today": 0, "tonight": 0, "this morning": 0, "this evening": 0, "yesterday": -1,
        "the day before yesterday": -2, "tomorrow": 1,
    }  # fmt: skip
    if text in days:
        day = today + timedelta(days=days[text])
        return day, day
    monday = today - timedelta(days=today.weekday())
    weeks = {"last week": -7, "this week": 0, "next week": 7}
    if text in weeks:
        first = monday + timedelta(days=weeks[text])
        return first, first + timedelta(days=6)
    weekends = {"last weekend": -7, "this weekend": 0, "next weekend": 7}
    if text in weekends:
        saturday = monday + timedelta(days=5 + weekends[text])
        return saturday, saturday + timedelta(days=1)
    months = {"last month": -1, "this month": 0, "next month": 1}
    if text in months:
        return _shift_month(today, months[text])
    years = {"last year": -1, "this year": 0, "next year": 1}
    if text in years:
        year = today.year + years[text]
        return date(year, 1, 1), date(year, 12, 31)
    ago = re.fullmatch(r"(\d+|\w+) (day|week|month|year)s? ago", text)
    if ago:
        count = int(ago.group(1)) if ago.group(1).isdigit() else _NUMBERS.get(ago.group(1))
        if count is None:
            return None
        unit = ago.group(2)
        if unit == "year":
            return date(today.year - count, 1, 1), date(today.year - count, 12, 31)
        if unit == "month":
            return _shift_month(today, -count)
        day = today - timedelta(days=count * _UNIT_DAYS[unit])
        if unit == "week":
            monday = day - timedelta(days=day.weekday())
            return monday, monday + timedelta(days=6)
        return day, day
    weekday = re.fullmatch(r"(last|next|on|this) (" + "|".join(_WEEKDAYS) + r")", text)
    if weekday:
        target = _WEEKDAYS.index(weekday.group(2))
        back = (today.weekday() - target) % 7
        if weekday.group(1) == "last":
            day = today - timedelta(days=back or 7)
        elif weekday.group(1) == "next":
            day = today + timedelta(days=(target - today.weekday()) % 7 or 7)
        else:
            day = today - timedelta(days=back)
        return day, day
    month = re.fullmatch(r"in (" + "|".join(_MONTHS) + r")(?: (\d{4}))?", text)
    if month:
        number = _MONTHS.index(month.group(1)) + 1
        if month.group(2):
            return _month(int(month.group(2)), number)
        return _month(today.year if number <= today.month else today.year - 1, number)
    year = re.fullmatch(r"in ((?:19|20)\d\d)", text)
    if year:
        return date(int(year.group(1)), 1, 1), date(int(year.group(1)), 12, 31)
    return None
