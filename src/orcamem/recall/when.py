"""Time-aware queries: the dates a query names, resolved against the space's session dates.

``_kernel.text.date_ranges`` reads the dates that stand alone ("May 8, 2022", "December
2023", "2023"). People also ask "When did Melanie go camping in June?" or "What happened
towards the end of summer 2023?": a month or a season with no year, or a part of one. Those
are resolved here against the years the space's candidate lines were said in (a chat held in
2023 asks about June 2023), so the date signal can favour what was said then. Relative
phrases ("last summer", "next June") are left alone: in a stored conversation they are
relative to when a speaker said them, which the query does not tell.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date

from .._kernel.text import date_ranges

__all__ = ["Times", "ranges"]

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
