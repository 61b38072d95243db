"""Time-aware queries: the dates a query names, resolved against the space's session dates.

``_kernel.text.date_ranges`` reads the dates that stand alone ("May 8, 2022", "December
2023", "2023"). People also ask "When did Melanie go camping in June?" or "What happened
towards the end of summer 2023?": a month or a season with no year, or a part of one. Those
are resolved here against the years the space's candidate lines were said in (a chat held in
2023 asks about June 2023), so the date signal can favour what was said then. Relative
phrases ("last summer", "next June") are left alone: in a stored conversation they are
relative to when a speaker said them, which the query does not tell.

:func:`anchored` reads the times a query fixes by an anchor (``enable_anchored_time``): a
relative phrase ("last summer", "last year", "three weeks ago") against the conversation's
present (the latest line said), an offset from a stated date ("the week before August 3,
2023"), and an event ("before the wedding", "two weeks after she moved") found by a lexical
lookup of its words (the caller's ``locate``), each a day range. They are less certain than a
stated date, so the caller weighs them by how well a line matched the query, as it does a
month without its year.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta

from .._kernel.text import content_words, date_ranges

__all__ = ["Times", "anchored", "ranges"]

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11)}
"""Northern-hemisphere seasons as (first, last) month; winter spans two years (below)."""

_PART = (
    r"(?:(?P<part>early|mid|late|the\s+end\s+of|end\s+of|the\s+beginning\s+of|beginning\s+of"
    r"|the\s+(?P<week>first|second|third|fourth|last)\s+week\s+of)[\s-]*)?"
)
_WEEKS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_MONTH_ALONE = re.compile(
    r"\b(?:in|during|of|since|until|by|through|at|towards|around)\s+(?:the\s+)?"
    + _PART
    + r"(?P<name>"
    + "|".join(_MONTHS)
    + r")\b(?![.,]?\s*(?:\d|of\s+\d))",
    re.IGNORECASE,
)
_SEASON = re.compile(
    r"\b(?P<rel>in|during|of|at|towards|around|this|last|next)\s+(?:the\s+)?"
    + _PART
    + r"(?P<name>spring|summer|autumn|fall|winter)\b(?:\s+(?:of\s+)?(?P<year>(?:19|20)\d\d))?",
    re.IGNORECASE,
)
_RELATIVE = frozenset({"this", "last", "next"})


Range = tuple[date, date]


@dataclass(frozen=True)
class Times:
    """The inclusive day ranges a query names: ``stated`` with their year ("May 8, 2022",
    "summer 2023"), ``resolved`` without one, read in the space's years ("in June")."""

    stated: list[Range] = field(default_factory=list)
    resolved: list[Range] = field(default_factory=list)
    words: frozenset[str] = frozenset()
    """The words of a relative phrase that fixed a range ("last summer": ``summer``): the date
    signal matches them, so they are not topic words a line must hold. An event's words
    ("after the charity race") stay topic words: what is asked is often about the event."""

    def __bool__(self) -> bool:
        return bool(self.stated or self.resolved)


def ranges(query: str, years: Iterable[int]) -> Times:
    """The day ranges ``query`` names: its absolute dates and seasons with a year, and each
    month or season named without a year in every one of ``years`` (the years the space's
    lines were said in). "early"/"mid"/"late"/"the end of" and "the second week of" narrow a
    month or a season to that part of it."""
    years = sorted(set(years))
    stated: list[Range] = []
    resolved: list[Range] = []
    for match in _SEASON.finditer(query):
        if match["rel"].lower() in _RELATIVE and not match["year"]:
            continue
        for year in [int(match["year"])] if match["year"] else years:
            found = stated if match["year"] else resolved
            found.append(_part(*_season(match["name"].lower(), year), match))
    # a season's year is not also the whole year ("the end of summer 2023" is August)
    stated[:0] = date_ranges(_SEASON.sub(lambda m: " " * len(m[0]) if m["year"] else m[0], query))
    for match in _MONTH_ALONE.finditer(query):
        month = _MONTHS[match["name"].lower()]
        resolved += [_part(date(y, month, 1), _last_day(y, month), match) for y in years]
    return Times(list(dict.fromkeys(stated)), list(dict.fromkeys(resolved)))


def _last_day(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _season(name: str, year: int) -> tuple[date, date]:
    if name == "winter":  # the winter of 2023 runs from December 2023 into February 2024
        return date(year, 12, 1), _last_day(year + 1, 2)
    first, last = _SEASONS[name]
    return date(year, first, 1), _last_day(year, last)


def _part(first: date, last: date, match: re.Match[str]) -> tuple[date, date]:
    """``(first, last)`` narrowed to the part the match names (a third of it, or a week)."""
    part = (match["part"] or "").lower()
    if not part:
        return first, last
    span = (last - first).days + 1
    if match["week"]:
        if match["week"].lower() == "last":
            return date.fromordinal(last.toordinal() - 6), last
        start = first.toordinal() + 7 * (_WEEKS[match["week"].lower()] - 1)
        return date.fromordinal(start), date.fromordinal(min(start + 6, last.toordinal()))
    third = span // 3
    if part == "early" or "beginning" in part:
        return first, date.fromordinal(first.toordinal() + third - 1)
    if part == "mid":
        return date.fromordinal(first.toordinal() + third), date.fromordinal(
            last.toordinal() - third
        )
    return date.fromordinal(last.toordinal() - third + 1), last  # late, the end of


_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_NUMBERS |= {"seven": 7, "eight": 8, "nine": 9, "ten": 10, "a few": 3, "a couple of": 2}
_UNITS = {"day": 1, "week": 7, "weekend": 7, "month": 30, "year": 365}
_COUNT = r"(?P<n>\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_OFFSET = re.compile(
    r"\b(?:" + _COUNT + r"\s+(?P<units>day|week|month|year)s?|the\s+(?P<unit>day|week|weekend"
    r"|month|year))\s+(?P<dir>before|after|ago|prior\s+to)\b",
    re.IGNORECASE,
)
_EVENT = re.compile(r"\b(?P<dir>before|after|since|until|prior\s+to)\s+(?P<event>[^,.;:?!]+)", re.I)
_EVENT_WORDS = 6
"""Words of an event phrase looked up ("after the charity race in the park" → its start)."""
_THIS = re.compile(
    r"\b(?P<rel>last|this|next|past)\s+(?P<name>week|weekend|month|year|spring|summer|autumn"
    r"|fall|winter)\b(?!\s+(?:of\s+)?(?:19|20)\d\d)",
    re.IGNORECASE,
)
_BEFORE = frozenset({"before", "until", "prior to"})
_OPEN = 3650
"""Days an open range ("after the wedding") reaches: ten years, past any conversation."""

Locate = Callable[[str], date | None]
"""The day an event's words were said (a lexical lookup in the space), or ``None``."""


def anchored(query: str, latest: date | None, locate: Locate) -> Times:
    """The day ranges ``query`` fixes by an anchor.

    ``latest`` is the conversation's present (the day its latest line was said); a relative
    phrase ("last summer", "this year", "two weeks ago") is read against it, unless the query
    states a date: "last week, as mentioned on November 6, 2023" is relative to that day, which
    the date signal already favours. An offset ("the week before August 3, 2023", "two weeks
    after the party") spans from the anchor to the shifted day: what happened then is told on
    the anchor's day or later. "before/after/since/until <event>" reaches from the day
    ``locate`` finds the event on, inclusive, as far as any conversation goes. The ranges are
    ``resolved`` (uncertain), with the words of the relative phrases that fixed them."""
    found: list[Range] = []
    took: list[str] = []
    relative = latest is not None and not date_ranges(query)
    taken: list[tuple[int, int]] = []
    for match in _OFFSET.finditer(query):
        direction = match["dir"].lower()
        unit = _UNITS[(match["units"] or match["unit"]).lower()]
        count = _count(match["n"]) if match["n"] else 1
        shift = timedelta(days=unit * count)
        if direction == "ago":
            if relative:
                middle = latest - shift
                found.append((middle - timedelta(days=unit), middle + timedelta(days=unit)))
                took.append(match[0])
            continue
        anchor = _anchor(query[match.end() :], locate)
        if anchor is None:
            continue
        taken.append((match.start(), len(query)))
        first, last = anchor
        found.append((first - shift, last) if direction in _BEFORE else (first, last + shift))
    for match in _EVENT.finditer(query):
        if any(start <= match.start() < end for start, end in taken):
            continue
        anchor = _anchor(match["event"], locate, dates=False)
        if anchor is not None:
            first, last = anchor
            reach = timedelta(days=_OPEN)
            before = re.sub(r"\s+", " ", match["dir"].lower()) in _BEFORE
            found.append((first - reach, last) if before else (first, last + reach))
    if relative:
        for match in _THIS.finditer(query):
            found.append(_relative(match["rel"].lower(), match["name"].lower(), latest))
            took.append(match[0])
    words = frozenset(word for text in took for word in content_words(text))
    return Times([], list(dict.fromkeys(found)), words)


def _count(word: str) -> int:
    word = re.sub(r"\s+", " ", word.lower())
    return int(word) if word.isdigit() else _NUMBERS[word]


def _anchor(text: str, locate: Locate, *, dates: bool = True) -> Range | None:
    """The range ``text`` starts with: a stated date, else the day its first words (an event)
    were said; ``None`` when it names neither (or, ``dates`` False, when it is a date)."""
    text = text.strip()
    stated = date_ranges(text)
    if stated and re.match(r"(?:the\s+|on\s+)?\w{3,9}\.?\s+\d|\d", text, re.IGNORECASE):
        return stated[0] if dates else None
    words = " ".join(re.split(r"[,.;:?!]", text, maxsplit=1)[0].split()[:_EVENT_WORDS])
    day = locate(words) if words else None
    return (day, day) if day is not None else None


def _relative(rel: str, name: str, latest: date) -> Range:
    """``last``/``this``/``next``/``past`` ``week``/``month``/``year``/a season, read on
    ``latest``: "last summer" is the latest summer that ended before it."""
    step = {"last": -1, "past": -1, "this": 0, "next": 1}[rel]
    if name in ("week", "weekend"):
        monday = latest - timedelta(days=latest.weekday()) + timedelta(weeks=step)
        if name == "weekend":
            return monday + timedelta(days=5), monday + timedelta(days=6)
        return monday, monday + timedelta(days=6)
    if name == "month":
        index = latest.year * 12 + latest.month - 1 + step
        year, month = divmod(index, 12)
        return date(year, month + 1, 1), _last_day(year, month + 1)
    if name == "year":
        return date(latest.year + step, 1, 1), date(latest.year + step, 12, 31)
    season = _season(name, latest.year)
    if step < 0:
        while season[1] >= latest:
            season = _season(name, season[0].year - 1)
    elif step > 0:
        while season[0] <= latest:
            season = _season(name, season[0].year + 1)
    return season
