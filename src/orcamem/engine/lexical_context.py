"""The lexical context of a line: words it is also found by, never shown.

Composed at ingest (the speaker, the date in words, an image caption, the episode's other
sentences, the previous turn of its session, a context the caller gave) and relinked when a
turn is forgotten: the next turn's lines held the forgotten one's words, and a forgotten
turn must neither be found through them nor stay in the file (``Memory.forget``).
"""

from __future__ import annotations

from functools import lru_cache

from .._kernel.clock import parse_time
from .._kernel.model import NewEpisode

__all__ = ["date_words", "lexical_context", "relinked_context"]

_CONTEXT_CHARS = 600


@lru_cache(maxsize=4096)  # a bulk ingest's turns share few stamps
def date_words(stamp: str) -> str:
    """``2023-05-07T…`` → ``7 May 2023`` so a question's date words can match."""
    moment = parse_time(stamp)
    return f"{moment.day} {moment.strftime('%B')} {moment.year}"


def lexical_context(
    episode: NewEpisode, occurred_at: str, previous_text: str | None, *, include_own: bool
) -> str:
    """The words an episode's lines are also found by (weighted below the line's own)."""
    parts = [episode.role or "", date_words(occurred_at)]
    caption = episode.meta.get("caption")
    if isinstance(caption, str):
        parts.append(caption)
    if include_own:  # the episode's other sentences; a one-line episode would repeat itself
        parts.append(episode.text[:_CONTEXT_CHARS])
    if previous_text:
        parts.append(previous_text[:_CONTEXT_CHARS])
    if episode.context:
        parts.append(episode.context[:_CONTEXT_CHARS])
    return "\n".join(part for part in parts if part)


def relinked_context(context: str, forgotten: str, before: str | None) -> str:
    """``context`` (the next turn's, as :func:`lexical_context` made it) with the forgotten
    turn's text, its previous turn, replaced by the turn before that (``before``), or left
    out when there is none: the context the next turn would have had without it.

    The previous turn is one of the parts joined by newlines after the speaker; a context
    without it as a whole part (the turn was not the one before) is returned unchanged."""
    old = "\n" + forgotten[:_CONTEXT_CHARS]
    new = "\n" + before[:_CONTEXT_CHARS] if before else ""
    at = context.find(old)
    while at != -1:
        end = at + len(old)
        if end == len(context) or context[end] == "\n":
            return context[:at] + new + context[end:]
        at = context.find(old, at + 1)
    return context
